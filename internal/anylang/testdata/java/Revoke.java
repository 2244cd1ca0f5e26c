import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The Java side of internal/anylang's revoke test (revoke_test.go): a holder
 * that learns of an operator's revoke through SQL alone. It takes key
 * through {@link DistributedLock}, prints "held TOKEN", then renews every
 * interval_ms as docs/protocol.md shows, reading the revoke pending on the
 * lease from the renewal's own row (distributed_lock_renew), until one
 * is there: it prints "revoked ACTOR ROLE DEADLINE REASON" (DEADLINE: "none"
 * or "set"), releases the lease and prints "released true" (false: it was no
 * longer held).
 *
 * <p>Arguments are name=value: url, key, owner, ttl_ms, interval_ms.
 */
public final class Revoke {

    private static final String RENEW_AND_READ =
        "SELECT r.actor, r.caller_role, r.force_at, r.reason"
        + " FROM distributed_lock_renew(?, ?, ?, ?) r WHERE r.outcome = 'renewed'";

    public static void main(String[] args) throws Exception {
        Map<String, String> a = Ops.args(args);
        String url = Ops.need(a, "url");
        String key = Ops.need(a, "key");
        String owner = Ops.need(a, "owner");
        Duration ttl = Duration.ofMillis(Long.parseLong(Ops.need(a, "ttl_ms")));
        long intervalMs = Long.parseLong(Ops.need(a, "interval_ms"));
        DistributedLock lock = new DistributedLock(ttl, false);
        try (Connection c = DriverManager.getConnection(url)) {
            Optional<DistributedLock.Lease> held = lock.tryAcquire(c, key, owner);
            if (held.isEmpty()) {
                System.out.println("refused");
                return;
            }
            DistributedLock.Lease lease = held.get();
            System.out.println("held " + lease.token());
            System.out.flush();
            while (true) {
                Thread.sleep(intervalMs);
                String told = renewAndRead(c, lease, ttl);
                if (told != null) {
                    System.out.println(told);
                    break;
                }
            }
            System.out.println("released " + lock.release(c, lease));
        }
    }

    /** Renews lease; the revoke line if one is pending, else null. */
    private static String renewAndRead(Connection c, DistributedLock.Lease lease, Duration ttl) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(RENEW_AND_READ)) {
            s.setString(1, lease.key());
            s.setString(2, lease.owner());
            s.setLong(3, lease.token());
            s.setLong(4, ttl.toNanos() / 1000);
            try (ResultSet r = s.executeQuery()) {
                if (!r.next()) {
                    throw new SQLException("lease lost: " + lease);
                }
                String actor = r.getString(1);
                if (actor == null) {
                    return null;
                }
                return "revoked " + actor + " " + r.getString(2) + " " + (r.getObject(3) == null ? "none" : "set")
                    + " " + r.getString(4);
            }
        }
    }
}
