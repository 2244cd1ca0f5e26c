package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file turns a primary and its standby (StartStandby) into a failover
// rig: make the standby synchronous, hold back the WAL the primary sends it,
// crash the primary, promote the standby, and read which server is primary
// on which timeline.

// replicationWait bounds each wait for replication state (a sender to
// appear, a standby to become synchronous, a promotion to finish) when the
// caller's context has no earlier deadline.
const replicationWait = 30 * time.Second

// standbyName is what an application name must look like to be named in
// synchronous_standby_names without quoting.
var standbyName = regexp.MustCompile(`^[a-z0-9_]+$`)

// IsPrimary says whether the server accepts writes (is not in recovery).
func (in *Instance) IsPrimary(ctx context.Context) (bool, error) {
	conn, err := pgx.Connect(ctx, in.DSN(""))
	if err != nil {
		return false, fmt.Errorf("pgtemp: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var inRecovery bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil {
		return false, fmt.Errorf("pgtemp: read recovery state: %w", err)
	}
	return !inRecovery, nil
}

// Timeline is the server's timeline ID: on a primary the timeline it writes
// WAL on (it rises by one with every promotion); on a standby the timeline
// of the WAL it last received, or of its last restart point when it is not
// streaming.
func (in *Instance) Timeline(ctx context.Context) (uint32, error) {
	conn, err := pgx.Connect(ctx, in.DSN(""))
	if err != nil {
		return 0, fmt.Errorf("pgtemp: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var inRecovery bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil {
		return 0, fmt.Errorf("pgtemp: read recovery state: %w", err)
	}
	if inRecovery {
		var tli int64
		err := conn.QueryRow(ctx, `SELECT coalesce(
			(SELECT received_tli FROM pg_stat_wal_receiver),
			(SELECT timeline_id FROM pg_control_checkpoint()))::bigint`).Scan(&tli)
		if err != nil {
			return 0, fmt.Errorf("pgtemp: read standby timeline: %w", err)
		}
		return uint32(tli), nil
	}
	// A WAL file name starts with the timeline as eight hex digits; unlike
	// pg_control_checkpoint() it is current right after a promotion.
	var walFile string
	if err := conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&walFile); err != nil {
		return 0, fmt.Errorf("pgtemp: read timeline: %w", err)
	}
	if len(walFile) < 8 {
		return 0, fmt.Errorf("pgtemp: unexpected WAL file name %q", walFile)
	}
	tli, err := strconv.ParseUint(walFile[:8], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("pgtemp: WAL file name %q: %w", walFile, err)
	}
	return uint32(tli), nil
}

// standbyOf returns the primary a standby streams from and its name there.
func (in *Instance) standbyOf() (*Instance, string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.upstream == nil {
		return nil, "", errors.New("pgtemp: not a standby started by StartStandby (or already promoted)")
	}
	return in.upstream, in.appName, nil
}

// SetSynchronous makes the primary wait for this standby (on) or stop
// waiting (off): it sets synchronous_standby_names on the primary to the
// standby's application name with ALTER SYSTEM, reloads, and waits until the
// primary reports the standby as sync (or async). With it on and
// synchronous_commit=on (set too), a commit on the primary is acknowledged
// only once the standby has flushed its WAL.
//
// The setting lives in the primary's postgresql.auto.conf, so this standby,
// copied before, does not carry it into its promotion; a standby copied
// from the primary afterwards would.
func (in *Instance) SetSynchronous(ctx context.Context, on bool) error {
	primary, name, err := in.standbyOf()
	if err != nil {
		return err
	}
	if !standbyName.MatchString(name) {
		return fmt.Errorf("pgtemp: standby name %q cannot be named in synchronous_standby_names; use [a-z0-9_] in cluster_name", name)
	}
	conn, err := pgx.Connect(ctx, primary.DSN(""))
	if err != nil {
		return fmt.Errorf("pgtemp: connect to primary: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// ALTER SYSTEM takes no parameters; the name is checked above.
	statements := []string{`ALTER SYSTEM RESET synchronous_standby_names`}
	want := "async"
	if on {
		statements = []string{
			`ALTER SYSTEM SET synchronous_standby_names TO ` + name,
			`ALTER SYSTEM SET synchronous_commit TO on`,
		}
		want = "sync"
	}
	for _, sql := range append(statements, `SELECT pg_reload_conf()`) {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("pgtemp: %s: %w", sql, err)
		}
	}
	err = poll(ctx, "the primary to report standby "+name+" as "+want, func(ctx context.Context) (bool, error) {
		var state string
		err := conn.QueryRow(ctx, `SELECT coalesce(
			(SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 LIMIT 1), '')`, name).Scan(&state)
		return state == want, err
	})
	if err != nil || !on {
		return err
	}
	// A -c synchronous_commit on the primary's command line outranks
	// ALTER SYSTEM; say so rather than leave commits unsynchronised.
	var commit string
	if err := conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&commit); err != nil {
		return fmt.Errorf("pgtemp: read synchronous_commit: %w", err)
	}
	if commit != "on" && commit != "remote_write" && commit != "remote_apply" {
		return fmt.Errorf("pgtemp: the primary's synchronous_commit is %q (set in its Options.Settings?), so commits do not wait for the standby", commit)
	}
	return nil
}

// PauseWALSender stops (SIGSTOP) the primary's WAL sender process for this
// standby, so WAL the primary writes from now on does not reach it: commits
// on an asynchronous primary are still acknowledged, and commits on a
// synchronous one wait. ResumeWALSender lets it go on; Crash and Stop on the
// primary deal with a paused sender. A pause longer than the standby's
// wal_receiver_timeout (60s) lets the standby reconnect through a new sender.
func (in *Instance) PauseWALSender(ctx context.Context) error {
	primary, name, err := in.standbyOf()
	if err != nil {
		return err
	}
	primary.mu.Lock()
	_, already := primary.paused[name]
	primary.mu.Unlock()
	if already {
		return fmt.Errorf("pgtemp: the WAL sender of %s is already paused", name)
	}
	conn, err := pgx.Connect(ctx, primary.DSN(""))
	if err != nil {
		return fmt.Errorf("pgtemp: connect to primary: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var pid int
	err = poll(ctx, "a streaming WAL sender for "+name, func(ctx context.Context) (bool, error) {
		err := conn.QueryRow(ctx, `SELECT coalesce(
			(SELECT pid FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming' LIMIT 1), 0)`,
			name).Scan(&pid)
		return pid != 0, err
	})
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pgtemp: stop WAL sender %d: %w", pid, err)
	}
	primary.mu.Lock()
	if primary.paused == nil {
		primary.paused = map[string]int{}
	}
	primary.paused[name] = pid
	primary.mu.Unlock()
	return nil
}

// ResumeWALSender continues (SIGCONT) the sender PauseWALSender stopped; the
// standby then receives the WAL it missed.
func (in *Instance) ResumeWALSender() error {
	primary, name, err := in.standbyOf()
	if err != nil {
		return err
	}
	primary.mu.Lock()
	pid, ok := primary.paused[name]
	delete(primary.paused, name)
	primary.mu.Unlock()
	if !ok {
		return fmt.Errorf("pgtemp: the WAL sender of %s is not paused", name)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("pgtemp: continue WAL sender %d: %w", pid, err)
	}
	return nil
}

// releasePausedSenders runs under in.mu once the postmaster has its stop
// signal. A stopped process cannot exit, so the postmaster would wait on it:
// a crash kills the paused senders (SIGKILL needs no cooperation and sends
// nothing more), a clean stop lets them continue and shut down.
func (in *Instance) releasePausedSenders(mode StopMode) {
	for name, pid := range in.paused {
		if mode == Immediate {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		} else {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		delete(in.paused, name)
	}
}

// Crash stops the server as a power cut would (Stop(Immediate): no
// checkpoint, WAL not yet sent to standbys stays unsent). Start brings it
// back through crash recovery.
func (in *Instance) Crash() error { return in.Stop(Immediate) }

// Promote turns this standby into a primary (pg_promote) and waits until it
// accepts writes. It stops following its old primary, which a test should
// have crashed or stopped first unless it wants two primaries.
func (in *Instance) Promote(ctx context.Context) error {
	if _, _, err := in.standbyOf(); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, in.DSN(""))
	if err != nil {
		return fmt.Errorf("pgtemp: connect to standby: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var promoted bool
	err = conn.QueryRow(ctx, `SELECT pg_promote(true, $1)`, int(replicationWait/time.Second)).Scan(&promoted)
	if err != nil {
		return fmt.Errorf("pgtemp: pg_promote: %w", err)
	}
	if !promoted {
		return fmt.Errorf("pgtemp: standby did not finish promotion in %s; log:\n%s", replicationWait, in.logTail())
	}
	err = poll(ctx, "the promoted server to leave recovery", func(ctx context.Context) (bool, error) {
		var inRecovery bool
		err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery)
		return !inRecovery, err
	})
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.upstream = nil
	in.mu.Unlock()
	return nil
}

// MultiHostDSN is a keyword/value connection string listing servers in
// order, with target_session_attrs=read-write: libpq and pgx try each and
// keep the first that accepts writes, so a client reaches whichever server
// is primary, before and after a promotion. db "" means "postgres".
func MultiHostDSN(db string, servers ...*Instance) string {
	if db == "" {
		db = "postgres"
	}
	hosts := make([]string, len(servers))
	ports := make([]string, len(servers))
	for i, s := range servers {
		hosts[i], ports[i] = "127.0.0.1", strconv.Itoa(s.port)
	}
	return fmt.Sprintf("host=%s port=%s user=postgres dbname=%s sslmode=disable target_session_attrs=read-write",
		strings.Join(hosts, ","), strings.Join(ports, ","), quoteValue(db))
}

// quoteValue quotes a keyword/value connection string value as libpq reads
// it: single quotes, with quotes and backslashes escaped.
func quoteValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}
