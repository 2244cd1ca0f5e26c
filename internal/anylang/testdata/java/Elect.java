import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The Java side of internal/anylang's election test (elect_test.go): a
 * candidate campaigning through SQL alone, as docs/protocol.md
 * ("Elections") says: it takes the key ({@link DistributedLock#tryAcquire},
 * trying again while refused), proclaims its value, reads the leader, and
 * resigns by releasing.
 *
 * <p>Arguments are name=value: url, key, owner, value, ttl_ms.
 *
 * <p>Output: "ready", then "won TOKEN" and "proclaimed true|false" once it
 * leads. Commands on stdin: "leader" prints "leader OWNER TERM VALUE" (or
 * "leader none"); "resign" releases and prints "resigned true|false";
 * "proclaim V" proclaims V with the lease it won and prints "proclaimed
 * true|false"; "quit" ends it.
 */
public final class Elect {

    private static final String PROCLAIM =
        "SELECT distributed_lock_proclaim(key => ?, owner => ?, token => ?, value => to_jsonb(?::text))";
    private static final String LEADER =
        "SELECT owner_id, term, value #>> '{}' AS value FROM distributed_lock_leader(key => ?)";

    public static void main(String[] args) throws Exception {
        Map<String, String> a = Ops.args(args);
        String key = Ops.need(a, "key");
        String owner = Ops.need(a, "owner");
        Duration ttl = Duration.ofMillis(Long.parseLong(Ops.need(a, "ttl_ms")));
        DistributedLock lock = new DistributedLock(ttl, true);
        try (Connection c = DriverManager.getConnection(Ops.need(a, "url"))) {
            System.out.println("ready");
            System.out.flush();
            Optional<DistributedLock.Lease> won = lock.tryAcquire(c, key, owner);
            while (won.isEmpty()) {
                Thread.sleep(20);
                won = lock.tryAcquire(c, key, owner);
            }
            DistributedLock.Lease lease = won.get();
            System.out.println("won " + lease.token());
            System.out.println("proclaimed " + proclaim(c, lease, Ops.need(a, "value")));
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                if (line.equals("leader")) {
                    System.out.println(leader(c, key));
                } else if (line.equals("resign")) {
                    System.out.println("resigned " + lock.release(c, lease));
                } else if (line.startsWith("proclaim ")) {
                    System.out.println("proclaimed " + proclaim(c, lease, line.substring("proclaim ".length())));
                } else {
                    break;
                }
                System.out.flush();
            }
        }
    }

    private static boolean proclaim(Connection c, DistributedLock.Lease lease, String value) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(PROCLAIM)) {
            s.setString(1, lease.key());
            s.setString(2, lease.owner());
            s.setLong(3, lease.token());
            s.setString(4, value);
            try (ResultSet r = s.executeQuery()) {
                r.next();
                return r.getBoolean(1);
            }
        }
    }

    private static String leader(Connection c, String key) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(LEADER)) {
            s.setString(1, key);
            try (ResultSet r = s.executeQuery()) {
                if (!r.next()) {
                    return "leader none";
                }
                return "leader " + r.getString("owner_id") + " " + r.getLong("term") + " " + r.getString("value");
            }
        }
    }
}
