import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The Java side of internal/anylang's at-least test (atleast_test.go): a
 * scheduled job's run held at least a period through SQL alone. It takes
 * key through {@link DistributedLock}, holds it at least at_least_ms
 * (distributed_lock_hold_at_least, as docs/protocol.md shows) and prints
 * "held TOKEN", releases it at once (the job was quick) and prints
 * "released true", then tries the key again as other_owner, another node:
 * "refused OUTCOME AT_POINT" (AT_POINT: whether the refusal's delay_until
 * is the hold's kept_until), or "granted" if it was not kept.
 *
 * <p>Arguments are name=value: url, key, owner, other_owner, ttl_ms, at_least_ms.
 */
public final class AtLeast {

    private static final String HOLD =
        "SELECT kept_until FROM distributed_lock_hold_at_least(?, ?, ?, ?) WHERE outcome = 'at_least'";
    private static final String TRY =
        "SELECT outcome, delay_until FROM distributed_lock_acquire(?, ?, ?)";

    public static void main(String[] args) throws Exception {
        Map<String, String> a = Ops.args(args);
        String url = Ops.need(a, "url");
        String key = Ops.need(a, "key");
        Duration ttl = Duration.ofMillis(Long.parseLong(Ops.need(a, "ttl_ms")));
        long atLeastUs = Long.parseLong(Ops.need(a, "at_least_ms")) * 1000;
        DistributedLock lock = new DistributedLock(ttl, false);
        try (Connection c = DriverManager.getConnection(url)) {
            Optional<DistributedLock.Lease> held = lock.tryAcquire(c, key, Ops.need(a, "owner"));
            if (held.isEmpty()) {
                System.out.println("refused");
                return;
            }
            DistributedLock.Lease lease = held.get();
            Timestamp keptUntil = hold(c, lease, atLeastUs);
            System.out.println("held " + lease.token());
            System.out.println("released " + lock.release(c, lease));
            System.out.println(tryAgain(c, key, Ops.need(a, "other_owner"), ttl, keptUntil));
        }
    }

    /** Holds lease at least atLeastUs from its grant; its at-least point. */
    private static Timestamp hold(Connection c, DistributedLock.Lease lease, long atLeastUs) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(HOLD)) {
            s.setString(1, lease.key());
            s.setString(2, lease.owner());
            s.setLong(3, lease.token());
            s.setLong(4, atLeastUs);
            try (ResultSet r = s.executeQuery()) {
                if (!r.next()) {
                    throw new SQLException("not held: " + lease);
                }
                return r.getTimestamp(1);
            }
        }
    }

    /** Another node's attempt at key: "granted", or "refused OUTCOME AT_POINT". */
    private static String tryAgain(Connection c, String key, String owner, Duration ttl, Timestamp keptUntil) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(TRY)) {
            s.setString(1, key);
            s.setString(2, owner);
            s.setLong(3, ttl.toNanos() / 1000);
            try (ResultSet r = s.executeQuery()) {
                r.next();
                String outcome = r.getString(1);
                if (outcome.equals("acquired") || outcome.equals("stolen")) {
                    return "granted";
                }
                return "refused " + outcome + " " + keptUntil.equals(r.getTimestamp(2));
            }
        }
    }
}
