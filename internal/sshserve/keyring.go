package sshserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// keyring is the authorized_keys file as last read. Every lookup first
// stats the file and re-reads it when it changed (size, mtime, inode: an
// editor that writes a new file and renames it over the old one changes the
// inode), so a key removed from the file is refused from the next attempt;
// watch checks it the same way on a timer. After a re-read that changed
// what the file authorizes, changed is called (the server ends the
// sessions of keys no longer in it) before the lookup that saw the change
// returns.
//
// At start (loadKeyring) any bad line is an error: the operator is there
// to fix it. On a re-read while serving, a bad line is logged and skipped,
// the others apply (sshd does the same); a file that became unsafe or
// unreadable authorizes no one until it is fixed.
type keyring struct {
	path    string
	log     *slog.Logger
	changed func() // set before the keyring is shared; called without mu held

	mu      sync.Mutex
	stamp   fileStamp
	entries []entry
}

// fileStamp is what tells that the file changed: its content (size,
// mtime), the file itself (inode) or its mode and owner (ctime: a chmod
// g+w must take effect without a write).
type fileStamp struct {
	size         int64
	mtime, ctime time.Time
	ino, dev     uint64
	mode         os.FileMode
}

func stampOf(fi os.FileInfo) fileStamp {
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino, s.dev = st.Ino, uint64(st.Dev)
		s.ctime = time.Unix(st.Ctim.Unix())
	}
	return s
}

// loadKeyring reads path strictly: unsafe permissions, a bad line or no
// key at all is an error.
func loadKeyring(path string, log *slog.Logger) (*keyring, error) {
	k := &keyring{path: path, log: log}
	entries, stamp, errs := k.read()
	if len(errs) > 0 {
		return nil, fmt.Errorf("authorized keys %s: %w", path, errors.Join(errs...))
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("authorized keys %s: no keys: every line is empty or a comment; add `role=\"operator\",actor=\"NAME\" ssh-ed25519 AAAA…`", path)
	}
	k.entries, k.stamp = entries, stamp
	return k, nil
}

// read checks and parses the file.
func (k *keyring) read() ([]entry, fileStamp, []error) {
	if err := checkOwnedPrivately("authorized keys", k.path); err != nil {
		return nil, fileStamp{}, []error{err}
	}
	f, err := os.Open(k.path)
	if err != nil {
		return nil, fileStamp{}, []error{err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, []error{err}
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fileStamp{}, []error{err}
	}
	entries, errs := parseAuthorizedKeys(data)
	return entries, stampOf(fi), errs
}

// lookup is the identity of key, re-reading the file first if it changed.
func (k *keyring) lookup(key gossh.PublicKey) (Identity, bool) {
	k.recheck()
	return k.current(key)
}

// recheck re-reads the file if it changed, then calls changed if the
// keys it authorizes did.
func (k *keyring) recheck() {
	k.mu.Lock()
	changed := k.refresh()
	k.mu.Unlock()
	if changed && k.changed != nil {
		k.changed()
	}
}

// watch rechecks the file every interval until ctx ends, so a removed
// key's sessions end without waiting for someone to connect.
func (k *keyring) watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.recheck()
		}
	}
}

// current is the identity of key as the file was last read.
func (k *keyring) current(key gossh.PublicKey) (Identity, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	wire := string(key.Marshal())
	for _, e := range k.entries {
		if string(e.key.Marshal()) == wire {
			return e.Identity, true
		}
	}
	return Identity{}, false
}

// refresh re-reads the file if its stamp changed; k.mu is held. The
// permission check runs every time (a few stats): a directory made
// group-writable changes nothing in the file's stamp. It says whether the
// file was re-read or became unusable.
func (k *keyring) refresh() bool {
	if err := checkOwnedPrivately("authorized keys", k.path); err != nil {
		return k.unusable(err)
	}
	fi, err := os.Stat(k.path)
	if err == nil && stampOf(fi) == k.stamp {
		return false
	}
	entries, stamp, errs := k.read()
	if len(entries) == 0 && len(errs) > 0 {
		return k.unusable(errors.Join(errs...))
	}
	for _, e := range errs {
		k.log.Warn("authorized keys: line skipped", "path", k.path, "err", e)
	}
	k.entries, k.stamp = entries, stamp
	k.log.Info("authorized keys re-read", "path", k.path, "keys", len(entries))
	return true
}

// unusable drops every key (and logs why, once) until the file is fixed;
// k.mu is held. It says whether any key was authorized until now.
func (k *keyring) unusable(err error) bool {
	had := k.entries != nil
	if had {
		k.log.Error("authorized keys unusable: refusing every key until it is fixed", "path", k.path, "err", err)
	}
	k.entries, k.stamp = nil, fileStamp{}
	return had
}
