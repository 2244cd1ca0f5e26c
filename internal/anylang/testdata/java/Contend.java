import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The Java side of internal/anylang's contention test: threads take keys
 * through {@link DistributedLock} while Go lockers take the same keys, and
 * every operation is printed for the Go test's history checker.
 *
 * <p>Arguments are name=value: url, clients (threads), client_base (the
 * first client number), owner_prefix, keys (comma-separated), duration_ms,
 * ttl_ms, hold_ms, pause_one_in (one hold in N outlives its lease), seed;
 * set_one_in=N makes one hold in N take two keys at once, all or none
 * ({@link DistributedLock#tryAcquireAll}), under an owner of its own,
 * drawn from set_keys (comma-separated; default: keys);
 * skip_fence=true writes without fencing, and split_sets=true takes a
 * set's keys one call at a time (giving back what it took when a key is
 * refused), so a test can show that the checker catches the stale writes
 * and the partial grants that follow.
 *
 * <p>Each thread loops: tryAcquire a random key (refused: pause up to a
 * quarter of hold_ms); on a grant hold it up to hold_ms, renew, hold again,
 * make one fenced write to the test's guarded table, release. A set's hold
 * does the same with each of its keys and releases them in one call. A
 * paused hold sleeps past the TTL before its write, so its fence must
 * refuse it if another owner took the key meanwhile.
 *
 * <p>Output: "ready" once every connection is open (the run starts then),
 * then, when the run ends, one tab-separated line per operation: kind,
 * client, key, owner, token, result, outcome, expires_at and ttl (ns),
 * writer_seq, call and return (ns since the Unix epoch: one clock with the
 * Go side, which is another process), error, set (the set call a key's
 * operation belongs to; empty for one key).
 */
public final class Contend {

    // The guarded table of internal/history (guarded.go), in JDBC syntax: a
    // per-key counter that numbers the fenced transactions in commit order,
    // and the write with the token of the newest grant its statement sees.
    private static final String GUARDED_ORDER =
        "INSERT INTO guarded_order AS o (lock_key, n) VALUES (?, 1) "
            + "ON CONFLICT (lock_key) DO UPDATE SET n = o.n + 1 RETURNING n";
    private static final String GUARDED_WRITE =
        "INSERT INTO guarded_write (lock_key, token, writer, writer_seq, commit_seq, seen_token) "
            + "VALUES (?, ?, ?, ?, ?, (SELECT e.fence_token FROM distributed_lock_event e "
            + "WHERE e.lock_key = ? AND e.kind IN ('acquired', 'stolen') ORDER BY e.event_id DESC LIMIT 1))";

    private static final List<String> records = Collections.synchronizedList(new ArrayList<>());
    private static final AtomicBoolean crashed = new AtomicBoolean();

    public static void main(String[] args) throws Exception {
        Map<String, String> a = Ops.args(args);
        String url = Ops.need(a, "url");
        int clients = Integer.parseInt(Ops.need(a, "clients"));
        int clientBase = Integer.parseInt(Ops.need(a, "client_base"));
        String ownerPrefix = Ops.need(a, "owner_prefix");
        String[] keys = Ops.need(a, "keys").split(",");
        long durationMs = Long.parseLong(Ops.need(a, "duration_ms"));
        Duration ttl = Duration.ofMillis(Long.parseLong(Ops.need(a, "ttl_ms")));
        long holdMs = Long.parseLong(Ops.need(a, "hold_ms"));
        int pauseOneIn = Integer.parseInt(Ops.need(a, "pause_one_in"));
        SplittableRandom seeds = new SplittableRandom(Long.parseLong(Ops.need(a, "seed")));
        boolean skipFence = Boolean.parseBoolean(a.getOrDefault("skip_fence", "false"));
        boolean splitSets = Boolean.parseBoolean(a.getOrDefault("split_sets", "false"));
        int setOneIn = Integer.parseInt(a.getOrDefault("set_one_in", "0"));
        String[] setKeys = a.getOrDefault("set_keys", String.join(",", keys)).split(",");

        DistributedLock lock = new DistributedLock(ttl, true);
        List<Connection> conns = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            conns.add(DriverManager.getConnection(url));
        }
        System.out.println("ready");
        System.out.flush();

        long deadline = System.nanoTime() + durationMs * 1_000_000;
        List<Thread> threads = new ArrayList<>();
        // A thread that dies of an unexpected exception fails the run (exit
        // status 1) rather than leaving a history with operations missing.
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
            crashed.set(true);
            e.printStackTrace();
        });
        for (int i = 0; i < clients; i++) {
            Worker w = new Worker(lock, conns.get(i), clientBase + i, ownerPrefix + "-" + i, keys,
                ttl, holdMs, pauseOneIn, setOneIn, setKeys, skipFence, splitSets, seeds.split(), deadline);
            Thread t = new Thread(w::run);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        for (Connection c : conns) {
            c.close();
        }
        synchronized (records) {
            for (String r : records) {
                System.out.println(r);
            }
        }
        if (crashed.get()) {
            System.exit(1);
        }
    }

    private record Worker(DistributedLock lock, Connection c, int client, String owner, String[] keys,
                          Duration ttl, long holdMs, int pauseOneIn, int setOneIn, String[] setKeys, boolean skipFence, boolean splitSets,
                          SplittableRandom rnd, long deadline) {

        void run() {
            long writerSeq = 0;
            int sets = 0;
            try {
                while (System.nanoTime() < deadline) {
                    if (setOneIn > 0 && setKeys.length > 1 && rnd.nextInt(setOneIn) == 0) {
                        writerSeq = holdSet(owner + "-set" + (++sets), writerSeq);
                        if (writerSeq < 0) {
                            return;
                        }
                        continue;
                    }
                    String key = keys[rnd.nextInt(keys.length)];
                    long call = Ops.now();
                    Optional<DistributedLock.Lease> got;
                    try {
                        got = lock.tryAcquire(c, key, owner);
                    } catch (SQLException e) {
                        record("grant", key, 0, "unknown", "", null, call, Ops.now(), e);
                        return;
                    }
                    long ret = Ops.now();
                    if (got.isEmpty()) {
                        record("grant", key, 0, "held", "", null, call, ret, null);
                        Thread.sleep(rnd.nextLong(holdMs / 4 + 1));
                        continue;
                    }
                    DistributedLock.Lease lease = got.get();
                    record("grant", key, lease.token(), "ok", lease.outcome(), lease, call, ret, null);

                    Thread.sleep(rnd.nextLong(holdMs + 1));
                    call = Ops.now();
                    Optional<DistributedLock.Lease> renewed;
                    try {
                        renewed = lock.renew(c, lease);
                    } catch (SQLException e) {
                        record("renew", key, lease.token(), "unknown", "", null, call, Ops.now(), e);
                        return;
                    }
                    record("renew", key, lease.token(), renewed.isPresent() ? "ok" : "not_held", "",
                        renewed.orElse(null), call, Ops.now(), null);
                    Thread.sleep(rnd.nextLong(holdMs + 1));
                    if (pauseOneIn > 0 && rnd.nextInt(pauseOneIn) == 0) {
                        Thread.sleep(ttl.toMillis() * 3 / 2);
                    }

                    writerSeq++;
                    if (!fencedWrite(lease, writerSeq)) {
                        return;
                    }

                    call = Ops.now();
                    boolean released;
                    try {
                        released = lock.release(c, lease);
                    } catch (SQLException e) {
                        record("release", key, lease.token(), "unknown", "", null, call, Ops.now(), e);
                        return;
                    }
                    record("release", key, lease.token(), released ? "ok" : "not_held", "", null, call, Ops.now(), null);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /**
         * A hold of two distinct keys taken at once for setOwner: as a hold
         * of one, with each key, and one release of both. Returns the last
         * writer_seq used, or -1 after an error (recorded).
         */
        private long holdSet(String setOwner, long writerSeq) throws InterruptedException {
            int i = rnd.nextInt(setKeys.length);
            int j = (i + 1 + rnd.nextInt(setKeys.length - 1)) % setKeys.length;
            List<String> set = List.of(setKeys[i], setKeys[j]);
            long call = Ops.now();
            Optional<List<DistributedLock.Lease>> got;
            try {
                got = splitSets ? tryAcquireOneByOne(set, setOwner) : lock.tryAcquireAll(c, set, setOwner);
            } catch (SQLException e) {
                long ret = Ops.now();
                for (String k : set) {
                    record("grant", k, setOwner, setOwner, 0, "unknown", "", null, call, ret, e);
                }
                return -1;
            }
            long ret = Ops.now();
            if (got.isEmpty()) {
                for (String k : set) {
                    record("grant", k, setOwner, setOwner, 0, "held", "", null, call, ret, null);
                }
                Thread.sleep(rnd.nextLong(holdMs / 4 + 1));
                return writerSeq;
            }
            List<DistributedLock.Lease> leases = got.get();
            for (DistributedLock.Lease lease : leases) {
                record("grant", lease.key(), setOwner, setOwner, lease.token(), "ok", lease.outcome(), lease, call, ret, null);
            }

            Thread.sleep(rnd.nextLong(holdMs + 1));
            for (DistributedLock.Lease lease : leases) {
                call = Ops.now();
                Optional<DistributedLock.Lease> renewed;
                try {
                    renewed = lock.renew(c, lease);
                } catch (SQLException e) {
                    record("renew", lease.key(), setOwner, "", lease.token(), "unknown", "", null, call, Ops.now(), e);
                    return -1;
                }
                record("renew", lease.key(), setOwner, "", lease.token(), renewed.isPresent() ? "ok" : "not_held", "",
                    renewed.orElse(null), call, Ops.now(), null);
            }
            Thread.sleep(rnd.nextLong(holdMs + 1));
            if (pauseOneIn > 0 && rnd.nextInt(pauseOneIn) == 0) {
                Thread.sleep(ttl.toMillis() * 3 / 2);
            }
            for (DistributedLock.Lease lease : leases) {
                if (!fencedWrite(lease, ++writerSeq)) {
                    return -1;
                }
            }

            call = Ops.now();
            boolean released;
            try {
                released = lock.releaseAll(c, leases);
            } catch (SQLException e) {
                ret = Ops.now();
                for (DistributedLock.Lease lease : leases) {
                    record("release", lease.key(), setOwner, setOwner, lease.token(), "unknown", "", null, call, ret, e);
                }
                return -1;
            }
            ret = Ops.now();
            for (DistributedLock.Lease lease : leases) {
                record("release", lease.key(), setOwner, setOwner, lease.token(), released ? "ok" : "not_held", "",
                    null, call, ret, null);
            }
            return writerSeq;
        }

        /**
         * The broken multi-key acquire: each key in its own call, so the
         * keys are granted in separate transactions, and one is held alone
         * until the next is granted or refused.
         */
        private Optional<List<DistributedLock.Lease>> tryAcquireOneByOne(List<String> set, String setOwner)
                throws SQLException {
            List<DistributedLock.Lease> leases = new ArrayList<>();
            for (String k : set) {
                Optional<DistributedLock.Lease> got = lock.tryAcquire(c, k, setOwner);
                if (got.isEmpty()) {
                    for (DistributedLock.Lease lease : leases) {
                        lock.release(c, lease);
                    }
                    return Optional.empty();
                }
                leases.add(got.get());
            }
            return Optional.of(leases);
        }

        /** One transaction: fence, guarded write, commit. False after an error (recorded). */
        private boolean fencedWrite(DistributedLock.Lease lease, long writerSeq) {
            long call = Ops.now();
            boolean committing = false;
            try {
                c.setAutoCommit(false);
                if (!skipFence && !lock.fence(c, lease)) {
                    c.rollback();
                    c.setAutoCommit(true);
                    recordWrite(lease, writerSeq, "not_held", call, null);
                    return true;
                }
                long n;
                try (PreparedStatement s = c.prepareStatement(GUARDED_ORDER)) {
                    s.setString(1, lease.key());
                    try (ResultSet r = s.executeQuery()) {
                        r.next();
                        n = r.getLong(1);
                    }
                }
                try (PreparedStatement s = c.prepareStatement(GUARDED_WRITE)) {
                    s.setString(1, lease.key());
                    s.setLong(2, lease.token());
                    s.setString(3, lease.owner());
                    s.setLong(4, writerSeq);
                    s.setLong(5, n);
                    s.setString(6, lease.key());
                    s.executeUpdate();
                }
                committing = true;
                c.commit();
                c.setAutoCommit(true);
                recordWrite(lease, writerSeq, "ok", call, null);
                return true;
            } catch (SQLException e) {
                recordWrite(lease, writerSeq, committing ? "unknown" : "failed", call, e);
                return false;
            }
        }

        private void recordWrite(DistributedLock.Lease lease, long writerSeq, String result, long call, SQLException e) {
            records.add(Ops.line("write", client, lease.key(), lease.owner(), lease.token(), result, "", 0, 0,
                writerSeq, call, Ops.now(), e, ""));
        }

        private void record(String kind, String key, long token, String result, String outcome,
                            DistributedLock.Lease lease, long call, long ret, SQLException e) {
            record(kind, key, owner, "", token, result, outcome, lease, call, ret, e);
        }

        private void record(String kind, String key, String owner, String set, long token, String result,
                            String outcome, DistributedLock.Lease lease, long call, long ret, SQLException e) {
            records.add(Ops.line(kind, client, key, owner, token, result, outcome,
                lease == null ? 0 : Ops.nanos(lease.expiresAt()), lease == null ? 0 : ttl.toNanos(), 0,
                call, ret, e, set));
        }
    }
}
