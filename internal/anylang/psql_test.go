package anylang

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// withLock runs testdata/psql/with-lock.sh as a separate process.
type withLock struct {
	script string
	env    []string
}

// newWithLock prepares the psql script to connect as user to the schema of
// dsn, through the libpq environment it documents. A missing psql skips the
// test, or fails it under CI=true.
func newWithLock(t *testing.T, dsn, user string) withLock {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		testdb.Unavailable(t, "no psql (install postgresql-client): %v", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "psql", "with-lock.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "LOCK_OWNER=psql-job",
		"PGHOST=" + cfg.Host, "PGPORT=" + strconv.Itoa(int(cfg.Port)), "PGDATABASE=" + cfg.Database,
		"PGUSER=" + user, "PGOPTIONS=-c search_path=" + cfg.RuntimeParams["search_path"], "PGSSLMODE=prefer"}
	return withLock{script: script, env: env}
}

// command is the script taking key for ttl around args.
func (w withLock) command(ctx context.Context, key, ttl string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, w.script, append([]string{key, ttl}, args...)...)
	cmd.Env = w.env
	return cmd
}

// TestPsqlScriptTakesTurnsWithGo runs the psql version of the client, as a
// role with only the service grants, against Go lockers on the same keys: it
// refuses a key Go holds without running its command; it holds the key
// while its command runs (Go is refused), with a larger token than Go's
// last, and releases it after; it releases after a failing command too and
// passes its status on; it reports a lock lost while its command ran; and a
// bad TTL is refused with a message saying why, the command not run and
// nothing taken.
func TestPsqlScriptTakesTurnsWithGo(t *testing.T) {
	dsn := testdb.DSN(t)
	admin := testdb.Pool(t, dsn)
	w := newWithLock(t, dsn, serviceRole(t, admin, dsn))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lk, err := locker.New(locker.Config{TTL: time.Minute, LogGrants: true})
	if err != nil {
		t.Fatal(err)
	}

	goLease, err := testdb.Try(ctx, lk, admin, "nightly", "go-service")
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.command(ctx, "nightly", "30", "echo", "COMMAND RAN").CombinedOutput()
	if code := exitCode(err); code != 75 || strings.Contains(string(out), "COMMAND RAN") || !strings.Contains(string(out), "nightly is held") {
		t.Fatalf("with-lock.sh on a key Go holds: exit %d, output %q; want 75, a message, and the command not run", code, out)
	}
	if _, err := testdb.One(lk.Release(ctx, admin, goLease)); err != nil {
		t.Fatal(err)
	}

	// The command prints its token and waits for a line on stdin.
	token, finish := startHolding(t, w.command(ctx, "nightly", "30", "sh", "-c", `echo "$LOCK_TOKEN"; read _`))
	if token <= goLease.Token {
		t.Errorf("psql's grant has token %d, not above Go's earlier %d", token, goLease.Token)
	}
	_, err = testdb.Try(ctx, lk, admin, "nightly", "go-service")
	var held *locker.Error
	if !errors.As(err, &held) || held.Owner != "psql-job" || held.Token != token {
		t.Errorf("Go's TryAcquire while psql's command ran = %v; want held by psql-job with token %d", err, token)
	}
	if code, stderr := finish(); code != 0 {
		t.Fatalf("with-lock.sh exited %d: %s", code, stderr)
	}
	after, err := testdb.Try(ctx, lk, admin, "nightly", "go-service")
	if err != nil || after.Outcome != locker.Acquired || after.Token <= token {
		t.Fatalf("Go's TryAcquire after the script = %+v, %v; want a fresh grant (the script released) above token %d", after, err, token)
	}
	if _, err := testdb.One(lk.Release(ctx, admin, after)); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, admin, "nightly", []string{
		"acquired go-service", "released go-service",
		"acquired psql-job", "released psql-job",
		"acquired go-service", "released go-service",
	})

	t.Run("failing command", func(t *testing.T) {
		out, err := w.command(ctx, "report", "30", "sh", "-c", "exit 3").CombinedOutput()
		if code := exitCode(err); code != 3 {
			t.Fatalf("with-lock.sh around `exit 3`: exit %d (%s); want the command's 3", code, out)
		}
		l, err := testdb.Try(ctx, lk, admin, "report", "go-service")
		if err != nil || l.Outcome != locker.Acquired {
			t.Fatalf("after a failing command, Go's TryAcquire = %+v, %v; want the key released, so acquired", l, err)
		}
	})

	t.Run("lock lost while the command ran", func(t *testing.T) {
		token, finish := startHolding(t, w.command(ctx, "export", "30", "sh", "-c", `echo "$LOCK_TOKEN"; read _`))
		// The command outlives its lease: expire it on the database's clock,
		// and Go takes the key over.
		testdb.ExpireLease(t, admin, "export")
		stolen, err := testdb.Try(ctx, lk, admin, "export", "go-service")
		if err != nil || stolen.Outcome != locker.Stolen || stolen.Token <= token {
			t.Fatalf("Go's TryAcquire of the expired key = %+v, %v; want stolen above token %d", stolen, err, token)
		}
		code, stderr := finish()
		if code != 70 || !strings.Contains(stderr, "not_held") {
			t.Fatalf("with-lock.sh after losing the lock: exit %d, %q; want 70 and a message saying it was not held", code, stderr)
		}
		if _, err := testdb.One(lk.Renew(ctx, admin, stolen)); err != nil {
			t.Fatalf("the script's late release touched Go's lease: %v", err)
		}
	})

	t.Run("bad TTL", func(t *testing.T) {
		for ttl, want := range map[string]struct {
			code    int
			message string
		}{
			"soon": {64, "TTL_SECONDS must be a number of seconds, not 'soon'"},
			"-5":   {64, "TTL_SECONDS must be a number of seconds, not '-5'"},
			"0":    {3, "ERROR:  value for domain distributed_lock_ttl violates check constraint"},
		} {
			out, err := w.command(ctx, "cleanup", ttl, "echo", "COMMAND RAN").CombinedOutput()
			if code := exitCode(err); code != want.code || strings.Contains(string(out), "COMMAND RAN") ||
				!strings.Contains(string(out), want.message) {
				t.Errorf("with-lock.sh with TTL %q: exit %d, %q; want %d, %q and the command not run", ttl, code, out, want.code, want.message)
			}
		}
		if _, found, err := store.Get[lockdb.LockInfo](ctx, admin, "cleanup"); err != nil || found {
			t.Errorf("bad TTLs left a row for the key (found %v, %v)", found, err)
		}
	})
}

// startHolding starts cmd, whose command prints LOCK_TOKEN and then waits
// for a line on stdin, and returns the token and a function that lets the
// command end and returns the script's exit code and stderr.
func startHolding(t *testing.T, cmd *exec.Cmd) (int64, func() (int, string)) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Wait()
		t.Fatalf("with-lock.sh's command printed no token (%v): %s", err, stderr.String())
	}
	token, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatalf("LOCK_TOKEN=%q: %v", line, err)
	}
	return token, func() (int, string) {
		_, _ = io.WriteString(stdin, "done\n")
		_ = stdin.Close()
		return exitCode(cmd.Wait()), stderr.String()
	}
}

func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		return -1
	}
}

// expectEvents checks key's event log, as "kind owner" in event order.
func expectEvents(t *testing.T, db *pgxpool.Pool, key string, want []string) {
	t.Helper()
	rows, err := db.Query(context.Background(),
		`SELECT kind || ' ' || owner_id FROM distributed_lock_event WHERE lock_key = $1 ORDER BY event_id`, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events of %q:\n got %q\nwant %q", key, got, want)
	}
}
