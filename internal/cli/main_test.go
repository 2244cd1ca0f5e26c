package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// binary is the real lockctl, built once by TestMain; the tests run it as a
// subprocess, as scripts do.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockctl-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lockctl")
	build := exec.Command("go", "build", "-o", binary, "github.com/lockctl/lockctl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build lockctl:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := testdb.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one finished run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// cleanEnv is the environment of every run: no DATABASE_URL or PG*
// variables from the machine running the tests.
func cleanEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, extra...)
}

// run runs lockctl with args and the given environment, within 30s.
func runEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run lockctl %q: %v", args, err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	return runEnv(t, cleanEnv(), args...)
}

// db runs commands against one database.
type db struct {
	t   *testing.T
	dsn string
}

func newDB(t *testing.T) db { return db{t: t, dsn: testdb.DSN(t)} }

// expireLease makes key's lease run out on the database clock, as waiting
// out its TTL would (testdb.ExpireLease).
func (d db) expireLease(key string) {
	d.t.Helper()
	d.onConn(func(conn *pgx.Conn) { testdb.ExpireLease(d.t, conn, key) })
}

// ageLock makes key's row look as if by had passed (testdb.AgeLock).
func (d db) ageLock(key string, by time.Duration) {
	d.t.Helper()
	d.onConn(func(conn *pgx.Conn) { testdb.AgeLock(d.t, conn, key, by) })
}

func (d db) onConn(f func(*pgx.Conn)) {
	d.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		d.t.Fatal(err)
	}
	defer conn.Close(ctx)
	f(conn)
}

func (d db) run(args ...string) result {
	d.t.Helper()
	return run(d.t, d.withDSN(args)...)
}

// withDSN adds --dsn to args: at the end, or before a "--" (after which
// the arguments are run's command's, not lockctl's).
func (d db) withDSN(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return append(append(append([]string{}, args[:i]...), "--dsn", d.dsn), args[i:]...)
		}
	}
	return append(append([]string{}, args...), "--dsn", d.dsn)
}

// expect runs args and fails unless the exit code is want.
func (d db) expect(want int, args ...string) result {
	d.t.Helper()
	r := d.run(args...)
	if r.code != want {
		d.t.Fatalf("lockctl %s: %s\nwant exit %d", strings.Join(args, " "), r, want)
	}
	return r
}

// jsonResult is the --json object of acquire, renew, release and expire.
type jsonResult struct {
	Key            string  `json:"key"`
	Owner          string  `json:"owner"`
	Token          int64   `json:"token"`
	ExpiresAt      *string `json:"expires_at"`
	TTLMs          int64   `json:"ttl_ms"`
	Outcome        string  `json:"outcome"`
	State          string  `json:"state"`
	RemainingMs    *int64  `json:"remaining_ms"`
	Actor          string  `json:"actor"`
	RequestedOwner string  `json:"requested_owner"`
	RequestedToken int64   `json:"requested_token"`
	Detail         string  `json:"detail"`
	// shared and semaphore keys
	Mode         string `json:"mode"`
	Permits      int    `json:"permits"`
	HoldersEnded int    `json:"holders_ended"`

	// acquire's refusal (exit 3)
	Error       string       `json:"error"`
	Holders     []holderJSON `json:"holders"`
	QueueLength *int         `json:"queue_length"`
	Position    *int         `json:"position"`
	DelayUntil  *time.Time   `json:"delay_until"`
}

type holderJSON struct {
	Owner       string    `json:"owner"`
	Token       int64     `json:"token"`
	ExpiresAt   time.Time `json:"expires_at"`
	RemainingMs int64     `json:"remaining_ms"`
}

// decode parses r's stdout as exactly one JSON value into v.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not the expected JSON: %v\n%s", err, r)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", r)
	}
}

func (d db) json(want int, args ...string) jsonResult {
	d.t.Helper()
	r := d.expect(want, append(args, "--json")...)
	var out jsonResult
	decode(d.t, r, &out)
	return out
}

// expiresAt parses a result's expires_at, which must be RFC 3339 in UTC.
func expiresAt(t *testing.T, r jsonResult) time.Time {
	t.Helper()
	if r.ExpiresAt == nil {
		t.Fatalf("expires_at is null in %+v", r)
	}
	at, err := time.Parse(time.RFC3339Nano, *r.ExpiresAt)
	if err != nil || !strings.HasSuffix(*r.ExpiresAt, "Z") {
		t.Fatalf("expires_at %q is not RFC 3339 UTC: %v", *r.ExpiresAt, err)
	}
	return at
}

func tokenArg(n int64) string { return fmt.Sprint(n) }

// lastEvent is key's newest event, read the way the console and `events`
// read it.
func lastEvent(t *testing.T, db store.DBTX, key string) lockview.Event {
	t.Helper()
	events, err := lockview.KeyEvents(context.Background(), db, key, 1)
	if err != nil || len(events) != 1 {
		t.Fatalf("latest event of %s: %v, %v; want one", key, events, err)
	}
	return events[0]
}
