import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
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
    // outcome (held; queued or conflict, refusing a shared or permit grant;
    // or busy/free/expired while another transaction was changing the row)
    // grants nothing.
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
    private static final String ACQUIRE_ALL =
        "SELECT lock_key, fence_token, expires_at, outcome FROM distributed_lock_acquire_all("
            + "keys => ?, owner => ?, ttl_us => ?, log_grants => ?)";
    private static final String RELEASE_ALL =
        "SELECT outcome FROM distributed_lock_release_all("
            + "keys => ?, owner => ?, tokens => ?, lazy_commit => ?, log_release => ?)";
    private static final String ACQUIRE_SHARED =
        "SELECT fence_token, expires_at, outcome FROM distributed_lock_acquire_shared("
            + "key => ?, owner => ?, ttl_us => ?, permits => ?, log_grants => ?)";
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

    /**
     * One attempt to take every key of keys for owner, all or none, in one
     * call; never waits. The database locks the keys' rows in sorted order,
     * so callers asking for overlapping sets in any order never deadlock.
     * Granted: one lease per key, in sorted key order. Empty when any key
     * was refused: then nothing is held.
     */
    public Optional<List<Lease>> tryAcquireAll(Connection c, List<String> keys, String owner) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(ACQUIRE_ALL)) {
            Array ks = c.createArrayOf("text", keys.toArray());
            s.setArray(1, ks);
            s.setString(2, owner);
            s.setLong(3, ttlMicros);
            s.setBoolean(4, logGrants);
            List<Lease> leases = new ArrayList<>();
            try (ResultSet r = s.executeQuery()) {
                while (r.next()) {
                    String outcome = r.getString("outcome");
                    if (!GRANTED.contains(outcome)) {
                        return Optional.empty(); // the one row of a refusal: the key that refused
                    }
                    leases.add(new Lease(r.getString("lock_key"), owner, r.getLong("fence_token"),
                        r.getObject("expires_at", OffsetDateTime.class), outcome));
                }
            } finally {
                ks.free();
            }
            if (leases.size() != keys.size()) {
                throw new SQLException(leases.size() + " grants for " + keys.size() + " keys");
            }
            return Optional.of(leases);
        }
    }

    /**
     * One attempt to take key shared for owner; never waits. Any number of
     * owners hold a key shared at once, each with a lease of its own (its
     * own token and TTL), which {@link #renew}, {@link #release} and
     * {@link #fence} take as they take an exclusive one. Empty while an
     * exclusive lease runs, while a waiter (a writer waiting for the
     * readers) is queued for the key, or while it is a semaphore's.
     */
    public Optional<Lease> tryAcquireShared(Connection c, String key, String owner) throws SQLException {
        return acquireShared(c, key, owner, null);
    }

    /**
     * One attempt to take one of permits permits of key for owner; never
     * waits. At most permits owners hold the key at once, each with a lease
     * of its own, as {@link #tryAcquireShared}'s. Empty while every permit
     * is held, or while the key's holders hold it shared or with other
     * permits: permits belong to the key, not to the caller.
     */
    public Optional<Lease> tryAcquirePermit(Connection c, String key, String owner, int permits) throws SQLException {
        return acquireShared(c, key, owner, permits);
    }

    private Optional<Lease> acquireShared(Connection c, String key, String owner, Integer permits) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(ACQUIRE_SHARED)) {
            s.setString(1, key);
            s.setString(2, owner);
            s.setLong(3, ttlMicros);
            if (permits == null) {
                s.setNull(4, Types.INTEGER); // shared: no permits
            } else {
                s.setInt(4, permits);
            }
            s.setBoolean(5, logGrants);
            return grant(s, key, owner);
        }
    }

    /**
     * Frees a set of leases of one owner in one call. False if any was no
     * longer current (the others are freed all the same).
     */
    public boolean releaseAll(Connection c, List<Lease> leases) throws SQLException {
        String[] keys = new String[leases.size()];
        Long[] tokens = new Long[leases.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = leases.get(i).key();
            tokens[i] = leases.get(i).token();
        }
        try (PreparedStatement s = c.prepareStatement(RELEASE_ALL)) {
            Array ks = c.createArrayOf("text", keys);
            Array ts = c.createArrayOf("bigint", tokens);
            s.setArray(1, ks);
            s.setString(2, leases.get(0).owner());
            s.setArray(3, ts);
            s.setBoolean(4, c.getAutoCommit());
            s.setBoolean(5, logGrants);
            boolean all = true;
            try (ResultSet r = s.executeQuery()) {
                while (r.next()) {
                    all &= "released".equals(r.getString("outcome"));
                }
            } finally {
                ks.free();
                ts.free();
            }
            return all;
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
