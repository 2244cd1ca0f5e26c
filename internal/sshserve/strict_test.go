package sshserve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	gossh "golang.org/x/crypto/ssh"
)

func nopApp(context.Context, Session) (tea.Model, error) { return nil, nil }

// New refuses, before anything listens, files that others could change,
// as sshd's StrictModes does, and a host key others can read.
func TestNewRefusesUnsafeFiles(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, hostKey, keys string)
		want    string
	}{
		{"group-writable authorized keys", func(t *testing.T, _, keys string) { chmod(t, keys, 0o620) },
			"authorized keys " + "%KEYS% is writable by group or others (mode 0620)"},
		{"world-writable authorized keys", func(t *testing.T, _, keys string) { chmod(t, keys, 0o602) },
			"is writable by group or others (mode 0602)"},
		{"authorized keys in a group-writable directory", func(t *testing.T, _, keys string) { chmod(t, filepath.Dir(keys), 0o770) },
			"directory"},
		{"host key readable by others", func(t *testing.T, hostKey, _ string) { chmod(t, hostKey, 0o644) },
			"is readable by others (mode 0644; chmod 600 it)"},
		{"group-writable host key", func(t *testing.T, hostKey, _ string) { chmod(t, hostKey, 0o620) },
			"host key %HOST% is writable by group or others"},
		{"authorized keys owned by another user", func(t *testing.T, _, keys string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			if err := os.Chown(keys, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, "is owned by uid 4242"},
		{"missing authorized keys", func(t *testing.T, _, keys string) { os.Remove(keys) }, "no such file"},
		{"no keys at all", func(t *testing.T, _, keys string) { writeFile(t, keys, "# nobody yet\n") }, "no keys"},
		{"a bad line at start", func(t *testing.T, _, keys string) { writeFile(t, keys, testPub+"\n") }, "line 1: no role option"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			hostKey := filepath.Join(dir, "host", "key")
			keysDir := filepath.Join(dir, "keys")
			if err := os.Mkdir(keysDir, 0o700); err != nil {
				t.Fatal(err)
			}
			keys := filepath.Join(keysDir, "authorized_keys")
			writeFile(t, keys, `role="viewer",actor="bob" `+testPub+"\n")
			if err := createHostKey(hostKey); err != nil {
				t.Fatal(err)
			}
			tt.prepare(t, hostKey, keys)
			_, err := New(Config{HostKeyPath: hostKey, AuthorizedKeysPath: keys, App: nopApp})
			want := strings.NewReplacer("%KEYS%", keys, "%HOST%", hostKey).Replace(tt.want)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("New: %v; want an error containing %q", err, want)
			}
		})
	}
}

// A sticky world-writable directory (/tmp) does not make its files unsafe:
// others cannot rename or remove them.
func TestStickyDirectoryIsAccepted(t *testing.T) {
	dir := t.TempDir()
	chmod(t, dir, os.ModeSticky|0o777)
	keys := filepath.Join(dir, "authorized_keys")
	writeFile(t, keys, `role="viewer",actor="bob" `+testPub+"\n")
	if err := checkOwnedPrivately("authorized keys", keys); err != nil {
		t.Fatal(err)
	}
	chmod(t, dir, 0o777)
	if err := checkOwnedPrivately("authorized keys", keys); !errors.Is(err, errUnsafeFile) {
		t.Fatalf("non-sticky world-writable directory: %v; want refused", err)
	}
}

// The host key is created with its directory when missing, private, and
// the same key is used on the next start.
func TestHostKeyIsCreatedOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "ssh_host_ed25519_key")
	first, created, err := loadHostKey(path)
	if err != nil || !created {
		t.Fatalf("first load: created %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("host key file: %v, mode %v; want 0600", err, fi.Mode())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("host key directory mode %v; want 0700", di.Mode())
	}
	second, created, err := loadHostKey(path)
	if err != nil || created {
		t.Fatalf("second load: created %v, %v", created, err)
	}
	if gossh.FingerprintSHA256(first.PublicKey()) != gossh.FingerprintSHA256(second.PublicKey()) {
		t.Error("the second start has another host key")
	}
	if first.PublicKey().Type() != gossh.KeyAlgoED25519 {
		t.Errorf("host key type %s; want ed25519", first.PublicKey().Type())
	}
}

// A passphrase-protected or unreadable host key is a clear error.
func TestHostKeyErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	writeFile(t, path, "not a key\n")
	if _, _, err := loadHostKey(path); err == nil || !strings.Contains(err.Error(), "host key "+path) {
		t.Errorf("garbage host key: %v", err)
	}
}

// The OpenSSH client accepts the server's key on a restart: the same host
// key, no "REMOTE HOST IDENTIFICATION HAS CHANGED".
func TestRestartKeepsTheHostKey(t *testing.T) {
	f := startFixture(t, Config{})
	f.pane(f.operator).WaitFor("hello alice", within)
	if err := f.shutdown(); err != nil {
		t.Fatal(err)
	}
	cfg := Config{HostKeyPath: f.hostKey, AuthorizedKeysPath: f.authorizedKeys, App: helloApp, Log: f.logger()}
	f.start(cfg)
	f.pane(f.operator, "-o", "StrictHostKeyChecking=yes").WaitFor("hello alice", within)
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
