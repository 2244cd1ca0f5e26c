import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.Map;

/**
 * What the Java drivers (Contend, Share) have in common: their name=value
 * arguments, the one clock they share with the Go test, and the line they
 * print per operation, which record_test.go's parseJavaOps reads.
 */
final class Ops {

    private Ops() {}

    /** Arguments given as name=value. */
    static Map<String, String> args(String[] args) {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("arguments are name=value, got " + arg);
            }
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        return a;
    }

    static String need(Map<String, String> a, String name) {
        String v = a.get(name);
        if (v == null) {
            throw new IllegalArgumentException("missing argument " + name + "=");
        }
        return v;
    }

    /**
     * Nanoseconds since the Unix epoch on the wall clock, which the Go side,
     * another process, reads too (it has no reading of the JVM's monotonic
     * clock).
     */
    static long now() {
        return nanos(Instant.now());
    }

    static long nanos(Instant i) {
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    /** t in nanoseconds since the Unix epoch; 0 for none. */
    static long nanos(OffsetDateTime t) {
        return t == null ? 0 : nanos(t.toInstant());
    }

    /**
     * One operation, tab-separated: kind, client, key, owner, token, result,
     * outcome, expires_at and ttl (ns), writer_seq, call and return (ns since
     * the Unix epoch), error, set.
     */
    static String line(String kind, int client, String key, String owner, long token, String result,
                       String outcome, long expiresAt, long ttl, long writerSeq, long call, long ret,
                       Exception e, String set) {
        return String.join("\t", kind, Integer.toString(client), key, owner, Long.toString(token), result,
            outcome, Long.toString(expiresAt), Long.toString(ttl), Long.toString(writerSeq),
            Long.toString(call), Long.toString(ret), e == null ? "" : e.toString().replaceAll("\\s+", " "), set);
    }
}
