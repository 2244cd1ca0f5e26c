package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby makes a streaming replica of primary and starts it on a port
// of its own: pg_basebackup -R copies the primary's data directory and writes
// primary_conninfo and standby.signal, so the copy starts in recovery and
// follows the primary's WAL. Its sessions are read-only (pg_is_in_recovery()
// is true), which is what tests of "writes refused on a standby" need.
//
// The primary must accept replication connections from 127.0.0.1, which a
// cluster made by Start does (initdb's pg_hba.conf trusts local replication,
// and wal_level=replica with max_wal_senders=10 are PostgreSQL's defaults).
// opts.Fast and opts.Settings apply to the standby. Close removes it; closing
// the primary first leaves the standby running, retrying its connection.
//
// The standby starts asynchronous; replication.go has the failover controls
// (SetSynchronous, PauseWALSender, Crash, Promote, Timeline).
func StartStandby(ctx context.Context, primary *Instance, opts Options) (*Instance, error) {
	if primary == nil || primary.port == 0 {
		return nil, errors.New("pgtemp: StartStandby needs a started primary")
	}
	if opts.User == "" {
		opts.User = primary.opts.User
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	in := &Instance{opts: opts, binDir: primary.binDir, upstream: primary}
	// The WAL receiver reports cluster_name as its application_name, which
	// names this standby in the primary's pg_stat_replication and in
	// synchronous_standby_names.
	in.appName = opts.Settings["cluster_name"]
	if in.appName == "" {
		in.appName = fmt.Sprintf("pgtemp_standby_%d_%d", os.Getpid(), standbySeq.Add(1))
		in.opts.Settings = map[string]string{"cluster_name": in.appName}
		for k, v := range opts.Settings {
			in.opts.Settings[k] = v
		}
	}
	var err error
	if in.acct, err = AccountFor(opts.User); err != nil {
		return nil, err
	}
	dir, err := in.acct.MkdirTemp(dirPrefix + strconv.Itoa(os.Getpid()) + "-")
	if err != nil {
		return nil, err
	}
	in.dir = dir
	register(in, opts.HandleSignals)
	basebackup, err := findTool(primary.binDir, "pg_basebackup")
	if err != nil {
		in.Close()
		return nil, err
	}
	cmd := in.command(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port),
		"-U", "postgres", "-D", in.dataDir(), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
	cmd.Path, cmd.Err = basebackup, nil // the tool may live outside binDir
	// An application_name in the environment would be written into
	// primary_conninfo and win over cluster_name.
	cmd.Env = append(cmd.Env, "PGAPPNAME=")
	if out, err := cmd.CombinedOutput(); err != nil {
		in.Close()
		return nil, fmt.Errorf("pgtemp: pg_basebackup: %w\n%s", err, out)
	}
	if err := in.Start(ctx); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

// standbySeq numbers standbys so each has its own application name.
var standbySeq atomic.Int64

// findTool finds a client program of the same installation as the server:
// beside initdb, beside the real postgres binary (the bin directory may hold
// only symlinks to it), or else on PATH.
func findTool(binDir, name string) (string, error) {
	dirs := []string{binDir}
	if real, err := filepath.EvalSymlinks(filepath.Join(binDir, "postgres")); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if isFile(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("pgtemp: %s not found beside %s or on PATH", name, binDir)
}

// WaitReplayed waits until standby has replayed everything primary had
// written when it was called, so a test reads on the standby what it just
// committed on the primary.
func WaitReplayed(ctx context.Context, primary, standby *Instance) error {
	pc, err := pgx.Connect(ctx, primary.DSN(""))
	if err != nil {
		return fmt.Errorf("pgtemp: connect to primary: %w", err)
	}
	defer pc.Close(context.WithoutCancel(ctx))
	var lsn string
	if err := pc.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return fmt.Errorf("pgtemp: read primary WAL position: %w", err)
	}
	sc, err := pgx.Connect(ctx, standby.DSN(""))
	if err != nil {
		return fmt.Errorf("pgtemp: connect to standby: %w", err)
	}
	defer sc.Close(context.WithoutCancel(ctx))
	err = pollUntil(ctx, 0, nil, func(ctx context.Context) (bool, error) {
		var done bool
		err := sc.QueryRow(ctx,
			`SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)`, lsn).Scan(&done)
		return done, err
	})
	if err != nil {
		return fmt.Errorf("pgtemp: waiting for the standby to replay up to %s: %w", lsn, err)
	}
	return nil
}
