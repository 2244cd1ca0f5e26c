package pgtemp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func requireBouncer(t *testing.T) {
	t.Helper()
	requireServer(t)
	if _, err := FindBouncer(); err != nil {
		unavailable(t, err)
	}
}

func startBouncer(t *testing.T, up *Instance, opts BouncerOptions) *Bouncer {
	t.Helper()
	b, err := StartBouncer(context.Background(), up, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// connectAs opens a connection through b as user. The simple protocol keeps
// pgx's per-connection statement cache out of the way of the pooler.
func connectAs(t *testing.T, b *Bouncer, user string) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig(b.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = user
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
	}
	return conn, err
}

func mustConnect(t *testing.T, b *Bouncer) *pgx.Conn {
	t.Helper()
	conn, err := connectAs(t, b, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func backendPID(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var pid int
	if err := conn.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// pgbouncerDirs lists the bouncer directories inside a server's directory.
func pgbouncerDirs(t *testing.T, up *Instance) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(up.Dir(), "pgbouncer-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestBouncer runs one server and puts poolers of each kind in front of it.
func TestBouncer(t *testing.T) {
	requireBouncer(t)
	ctx := context.Background()
	up := startServer(t)

	t.Run("queries reach the server", func(t *testing.T) {
		conn := mustConnect(t, startBouncer(t, up, BouncerOptions{}))
		var port string
		if err := conn.QueryRow(ctx, `SELECT current_setting('port')`).Scan(&port); err != nil {
			t.Fatal(err)
		}
		if port != strconv.Itoa(up.port) {
			t.Fatalf("through the pooler the server says port %s, want the upstream's %d", port, up.port)
		}
	})

	t.Run("transaction mode shares one server connection between clients", func(t *testing.T) {
		b := startBouncer(t, up, BouncerOptions{PoolMode: "transaction", PoolSize: 1})
		first, second := mustConnect(t, b), mustConnect(t, b)
		p1, p2, p3 := backendPID(t, first), backendPID(t, second), backendPID(t, first)
		// Both clients stay connected, yet each transaction ran on the one
		// server connection the pool has.
		if p1 != p2 || p2 != p3 {
			t.Fatalf("backends %d, %d, %d: want one shared by both clients", p1, p2, p3)
		}
	})

	t.Run("session mode gives each client its own server connection", func(t *testing.T) {
		b := startBouncer(t, up, BouncerOptions{PoolMode: "session", PoolSize: 2})
		first, second := mustConnect(t, b), mustConnect(t, b)
		p1, p2, p3 := backendPID(t, first), backendPID(t, second), backendPID(t, first)
		if p1 == p2 || p1 != p3 {
			t.Fatalf("backends %d, %d, %d: want the first client's own backend twice and another for the second", p1, p2, p3)
		}
	})

	t.Run("listed users log in, others are refused", func(t *testing.T) {
		admin, err := pgx.Connect(ctx, up.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		for _, role := range []string{"svc", "intruder"} {
			if _, err := admin.Exec(ctx, `CREATE ROLE `+role+` LOGIN`); err != nil {
				t.Fatal(err)
			}
		}
		b := startBouncer(t, up, BouncerOptions{Users: []string{"svc"}})
		conn, err := connectAs(t, b, "svc")
		if err != nil {
			t.Fatalf("listed user: %v", err)
		}
		var who string
		if err := conn.QueryRow(ctx, `SELECT current_user`).Scan(&who); err != nil || who != "svc" {
			t.Fatalf("current_user = %q, %v; want svc", who, err)
		}
		if _, err := connectAs(t, b, "intruder"); err == nil {
			t.Fatal("a role missing from the pooler's user list was let in")
		}
	})

	t.Run("bad options are refused and start nothing", func(t *testing.T) {
		before := len(pgbouncerDirs(t, up))
		for _, tc := range []struct {
			opts BouncerOptions
			want string
		}{
			{BouncerOptions{PoolMode: "sometimes"}, "pool mode"},
			{BouncerOptions{PoolSize: -1}, "negative"},
			{BouncerOptions{Users: []string{`evil" "x`}}, "bouncer user"},
			{BouncerOptions{Settings: map[string]string{"listen_port": "6432"}}, "free port"},
			{BouncerOptions{Settings: map[string]string{"pool_mode": "session"}}, "PoolMode"},
			{BouncerOptions{Settings: map[string]string{"server_login_retry": "1\nauth_type = any"}}, "one-line"},
		} {
			_, err := StartBouncer(ctx, up, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: error %v, want one mentioning %q", tc.opts, err, tc.want)
			}
		}
		if _, err := StartBouncer(ctx, nil, BouncerOptions{}); err == nil {
			t.Error("a pooler without a server started")
		}
		if after := len(pgbouncerDirs(t, up)); after != before {
			t.Errorf("refused options left %d new pooler directories", after-before)
		}
	})

	t.Run("Close leaves no process, port or directory", func(t *testing.T) {
		b, err := StartBouncer(ctx, up, BouncerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pid := b.cmd.Process.Pid
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if processAlive(pid) {
			t.Fatalf("pgbouncer %d still running after Close", pid)
		}
		if _, err := pgx.Connect(ctx, b.DSN("")); err == nil {
			t.Fatal("the pooler's port still accepts connections after Close")
		}
		if _, err := os.Stat(b.dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("directory %s still there after Close (stat: %v)", b.dir, err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})

	// Last: it closes the shared server.
	t.Run("closing the server closes its poolers", func(t *testing.T) {
		b, err := StartBouncer(ctx, up, BouncerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pid := b.cmd.Process.Pid
		if err := up.Close(); err != nil {
			t.Fatal(err)
		}
		if processAlive(pid) {
			t.Fatalf("pgbouncer %d outlived its server's Close", pid)
		}
	})
}

func TestKilledOwnerLeavesNoBouncer(t *testing.T) {
	requireBouncer(t)
	cmd, dir, pids := startChild(t, "bouncer")
	if len(pids) != 2 {
		t.Fatalf("child printed pids %v, want the postmaster's and pgbouncer's", pids)
	}
	_ = cmd.Process.Kill() // SIGKILL: only the kernel's parent-death signal acts
	_ = cmd.Wait()
	waitGone(t, "pgbouncer", func() bool { return !processAlive(pids[1]) })
	waitGone(t, "postmaster", func() bool { return !processAlive(pids[0]) })
	removeStale(filepath.Dir(dir))
}

func TestMissingBouncerSaysWhatToInstall(t *testing.T) {
	t.Setenv("PGBOUNCER", "")
	t.Setenv("PATH", t.TempDir())
	old := bouncerPaths
	bouncerPaths = nil
	t.Cleanup(func() { bouncerPaths = old })

	_, err := FindBouncer()
	if !errors.Is(err, ErrNoBouncer) || !strings.Contains(err.Error(), "apt-get install pgbouncer") {
		t.Fatalf("FindBouncer without pgbouncer = %v, want ErrNoBouncer saying what to install", err)
	}
	t.Setenv("PGBOUNCER", filepath.Join(t.TempDir(), "nothing"))
	if _, err := FindBouncer(); !errors.Is(err, ErrNoBouncer) || !strings.Contains(err.Error(), "PGBOUNCER=") {
		t.Fatalf("a PGBOUNCER naming nothing = %v, want an error naming PGBOUNCER", err)
	}
}
