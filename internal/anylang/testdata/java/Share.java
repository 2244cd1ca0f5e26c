import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
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
 * The Java side of internal/anylang's shared-lease test (share_test.go):
 * threads take permits of a semaphore key through {@link DistributedLock}
 * while Go lockers take permits of the same key, and a reader holds a
 * shared lease of another key beside Go readers, step by step as the Go
 * test says, while a Go writer tries to take that key exclusively.
 *
 * <p>Arguments are name=value: url, clients (permit threads), client_base
 * (the first client number), owner_prefix, pool_key, permits, duration_ms,
 * ttl_ms, hold_ms, seed, and for the reader shared_key, reader_owner and
 * reader_ttl_ms.
 *
 * <p>Each permit thread loops until duration_ms has passed: tryAcquirePermit
 * (refused: pause up to a quarter of hold_ms); on a grant hold it up to
 * hold_ms, renew, hold again, release.
 *
 * <p>The reader runs on the main thread. It takes shared_key shared (trying
 * again for a few seconds while refused) and prints "shared TOKEN EXPIRES
 * OUTCOME" (EXPIRES in ns since the Unix epoch), or "refused"; then it reads commands from stdin: "renew" renews
 * the lease and prints "renewed TOKEN EXPIRES", or "not_held"; "release"
 * releases it, prints "released true" (false: it was no longer held) and
 * ends the reader.
 *
 * <p>Output: "ready" once every connection is open (the run starts then),
 * the reader's lines, then, when the permit threads end, one line per permit
 * operation ({@link Ops#line}).
 */
public final class Share {

    private static final List<String> records = Collections.synchronizedList(new ArrayList<>());
    private static final AtomicBoolean crashed = new AtomicBoolean();

    public static void main(String[] args) throws Exception {
        Map<String, String> a = Ops.args(args);
        String url = Ops.need(a, "url");
        int clients = Integer.parseInt(Ops.need(a, "clients"));
        int clientBase = Integer.parseInt(Ops.need(a, "client_base"));
        String ownerPrefix = Ops.need(a, "owner_prefix");
        String poolKey = Ops.need(a, "pool_key");
        int permits = Integer.parseInt(Ops.need(a, "permits"));
        long durationMs = Long.parseLong(Ops.need(a, "duration_ms"));
        Duration ttl = Duration.ofMillis(Long.parseLong(Ops.need(a, "ttl_ms")));
        long holdMs = Long.parseLong(Ops.need(a, "hold_ms"));
        SplittableRandom seeds = new SplittableRandom(Long.parseLong(Ops.need(a, "seed")));
        String sharedKey = Ops.need(a, "shared_key");
        String readerOwner = Ops.need(a, "reader_owner");
        Duration readerTtl = Duration.ofMillis(Long.parseLong(Ops.need(a, "reader_ttl_ms")));

        DistributedLock permitLock = new DistributedLock(ttl, true);
        List<Connection> conns = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            conns.add(DriverManager.getConnection(url));
        }
        Connection readerConn = DriverManager.getConnection(url);
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
            PermitWorker w = new PermitWorker(permitLock, conns.get(i), clientBase + i, ownerPrefix + "-" + i,
                poolKey, permits, ttl, holdMs, seeds.split(), deadline);
            Thread t = new Thread(w::run);
            t.start();
            threads.add(t);
        }
        read(new DistributedLock(readerTtl, true), readerConn, sharedKey, readerOwner);
        for (Thread t : threads) {
            t.join();
        }
        for (Connection c : conns) {
            c.close();
        }
        readerConn.close();
        synchronized (records) {
            for (String r : records) {
                System.out.println(r);
            }
        }
        if (crashed.get()) {
            System.exit(1);
        }
    }

    /** The reader: a shared lease of key, renewed and released when stdin says. */
    private static void read(DistributedLock lock, Connection c, String key, String owner) throws Exception {
        // A reader is refused here only while another transaction is
        // changing the key's row (a Go reader forming the group, or ending
        // it): it tries again shortly.
        Optional<DistributedLock.Lease> got = lock.tryAcquireShared(c, key, owner);
        for (int tries = 1; got.isEmpty() && tries < 500; tries++) {
            Thread.sleep(10);
            got = lock.tryAcquireShared(c, key, owner);
        }
        if (got.isEmpty()) {
            say("refused");
            return;
        }
        DistributedLock.Lease lease = got.get();
        say("shared " + lease.token() + " " + Ops.nanos(lease.expiresAt()) + " " + lease.outcome());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String cmd; (cmd = in.readLine()) != null; ) {
            switch (cmd) {
                case "renew" -> {
                    Optional<DistributedLock.Lease> renewed = lock.renew(c, lease);
                    say(renewed.map(l -> "renewed " + l.token() + " " + Ops.nanos(l.expiresAt())).orElse("not_held"));
                }
                case "release" -> {
                    say("released " + lock.release(c, lease));
                    return;
                }
                default -> throw new IllegalArgumentException("unknown command " + cmd);
            }
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private record PermitWorker(DistributedLock lock, Connection c, int client, String owner, String key,
                                int permits, Duration ttl, long holdMs, SplittableRandom rnd, long deadline) {

        void run() {
            try {
                while (System.nanoTime() < deadline) {
                    long call = Ops.now();
                    Optional<DistributedLock.Lease> got;
                    try {
                        got = lock.tryAcquirePermit(c, key, owner, permits);
                    } catch (SQLException e) {
                        record("grant", 0, "unknown", "", null, call, e);
                        return;
                    }
                    if (got.isEmpty()) {
                        record("grant", 0, "held", "", null, call, null);
                        Thread.sleep(rnd.nextLong(holdMs / 4 + 1));
                        continue;
                    }
                    DistributedLock.Lease lease = got.get();
                    record("grant", lease.token(), "ok", lease.outcome(), lease, call, null);

                    Thread.sleep(rnd.nextLong(holdMs + 1));
                    call = Ops.now();
                    Optional<DistributedLock.Lease> renewed;
                    try {
                        renewed = lock.renew(c, lease);
                    } catch (SQLException e) {
                        record("renew", lease.token(), "unknown", "", null, call, e);
                        return;
                    }
                    record("renew", lease.token(), renewed.isPresent() ? "ok" : "not_held", "",
                        renewed.orElse(null), call, null);
                    Thread.sleep(rnd.nextLong(holdMs + 1));

                    call = Ops.now();
                    boolean released;
                    try {
                        released = lock.release(c, lease);
                    } catch (SQLException e) {
                        record("release", lease.token(), "unknown", "", null, call, e);
                        return;
                    }
                    record("release", lease.token(), released ? "ok" : "not_held", "", null, call, null);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private void record(String kind, long token, String result, String outcome, DistributedLock.Lease lease,
                            long call, SQLException e) {
            records.add(Ops.line(kind, client, key, owner, token, result, outcome,
                lease == null ? 0 : Ops.nanos(lease.expiresAt()), lease == null ? 0 : ttl.toNanos(), 0,
                call, Ops.now(), e, ""));
        }
    }
}
