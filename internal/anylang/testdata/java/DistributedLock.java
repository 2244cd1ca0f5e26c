import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Optional;
import java.util.Set;

/**
 * The reference service's distributed lock (DistributedLockRepository and
 * DistributedLockService) on lockctl's protocol functions, in plain JDBC.
 *
 * <p>Each operation is one function call. The database locks the row, draws
 * the fencing token from its sequence and reads its own clock, so there is
 * no SELECT ... FOR UPDATE, no INSERT race to lose, no token from
 * System.currentTimeMillis() and no JVM clock in the expiry. The role it
 * connects as needs only {@code lockctl grant ROLE --as service}.
 *
 * <p>Arguments are passed by name, so parameters the functions gain later
 * (with defaults) leave these calls unchanged. tryAcquire, renew and release
 * run fine in autocommit; fence must run inside the transaction whose writes
 * it guards.
 */
public final class DistributedLock {

    /** A grant. Writes made under the lock carry {@code token}. */
    public record Lease(String key, String owner, long token, OffsetDateTime expiresAt, String outcome) {}

    // acquired: the key was free; stolen: another owner's lease had expired;
    // renewed: owner already held it (same token, later expiry). Any other
    // outcome (held, or busy/free/expired while another transaction was
    // changing the row) grants nothing.
    private static final Set<String> GRANTED = Set.of("acquired", "stolen", "renewed");

    private static final String ACQUIRE =
        "SELECT fence_token, expires_at, outcome FROM distributed_lock_acquire("
            + "key => ?, owner => ?, ttl_us => ?, log_grants => ?)";
    private static final String RENEW =
        "SELECT fence_token, expires_at, outcome FROM distributed_lock_renew("
            + "key => ?, owner => ?, token => ?, ttl_us => ?)";
    private static final String RELEASE =
        "SELECT outcome FROM distributed_lock_release("
            + "key => ?, owner => ?, token => ?, log_release => ?, lazy_commit => ?)";
    private static final String FENCE =
        "SELECT distributed_lock_fence(key => ?, owner => ?, token => ?)";

    private final long ttlMicros;
    private final boolean logGrants;

    /**
     * @param ttl       lease length, counted on the database's clock
     * @param logGrants also record every grant and release in
     *                  distributed_lock_event (steals and operator actions
     *                  always are), as lockctl's console does
     */
    public DistributedLock(Duration ttl, boolean logGrants) {
        this.ttlMicros = ttl.toNanos() / 1_000;
        this.logGrants = logGrants;
    }

    /**
     * One attempt to take key for owner; never waits. Owner must be unique
     * per holder (instance id and thread id, say): the same owner asking
     * again renews its lease.
     */
    public Optional<Lease> tryAcquire(Connection c, String key, String owner) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(ACQUIRE)) {
            s.setString(1, key);
            s.setString(2, owner);
            s.setLong(3, ttlMicros);
            s.setBoolean(4, logGrants);
            return grant(s, key, owner);
        }
    }

    /** Extends lease by the TTL; empty if it is no longer the current, unexpired grant. */
    public Optional<Lease> renew(Connection c, Lease lease) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(RENEW)) {
            s.setString(1, lease.key());
            s.setString(2, lease.owner());
            s.setLong(3, lease.token());
            s.setLong(4, ttlMicros);
            return grant(s, lease.key(), lease.owner());
        }
    }

    /**
     * Frees lease. False if it was no longer current: the lock had expired
     * and may belong to someone else, whose lease is left alone. In
     * autocommit the release does not wait for its commit to reach disk
     * (lazy_commit): one lost in a crash only leaves a lease that expires
     * at its TTL.
     */
    public boolean release(Connection c, Lease lease) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(RELEASE)) {
            s.setString(1, lease.key());
            s.setString(2, lease.owner());
            s.setLong(3, lease.token());
            s.setBoolean(4, logGrants);
            s.setBoolean(5, c.getAutoCommit());
            try (ResultSet r = s.executeQuery()) {
                r.next();
                return "released".equals(r.getString("outcome"));
            }
        }
    }

    /**
     * Proves, inside the caller's transaction, that lease is still current,
     * and keeps it so until that transaction ends (the row is locked FOR
     * SHARE; no take-over can commit before). False: roll back, the lease
     * is lost.
     */
    public boolean fence(Connection c, Lease lease) throws SQLException {
        if (c.getAutoCommit()) {
            throw new IllegalStateException("fence must run inside the transaction it guards");
        }
        try (PreparedStatement s = c.prepareStatement(FENCE)) {
            s.setString(1, lease.key());
            s.setString(2, lease.owner());
            s.setLong(3, lease.token());
            try (ResultSet r = s.executeQuery()) {
                r.next();
                return r.getBoolean(1);
            }
        }
    }

    private static Optional<Lease> grant(PreparedStatement s, String key, String owner) throws SQLException {
        try (ResultSet r = s.executeQuery()) {
            r.next();
            String outcome = r.getString("outcome");
            if (!GRANTED.contains(outcome)) {
                return Optional.empty();
            }
            return Optional.of(new Lease(key, owner, r.getLong("fence_token"),
                r.getObject("expires_at", OffsetDateTime.class), outcome));
        }
    }
}
