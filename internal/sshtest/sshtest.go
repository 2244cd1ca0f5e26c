// Package sshtest drives the OpenSSH client (/usr/bin/ssh, ssh-keygen) in
// tests of the SSH console: client keys, authorized_keys files and the
// client's command line.
package sshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

// Key is a client key made by ssh-keygen: the private key file and the
// public key's authorized_keys text.
type Key struct {
	Path string
	Pub  string
}

// NewKey runs ssh-keygen for an Ed25519 key without passphrase in dir.
// Without the OpenSSH tools the test fails under CI=true and is skipped
// elsewhere.
func NewKey(t testing.TB, dir, name string) Key {
	t.Helper()
	for _, tool := range []string{"ssh-keygen", "ssh"} {
		if _, err := exec.LookPath(tool); err != nil {
			testdb.Unavailable(t, "%s (OpenSSH client) not installed", tool)
		}
	}
	path := filepath.Join(dir, name)
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name+"@test", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return Key{Path: path, Pub: strings.TrimSpace(string(pub))}
}

// WriteFile writes content to path with mode 0600, as authorized_keys must
// be.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Args is an OpenSSH client command line that logs in to 127.0.0.1:port
// with key alone: no config file, agent or other identity, the host key
// trusted on first use into knownHosts. extra options come before the
// destination.
func Args(port, knownHosts string, key Key, extra ...string) []string {
	args := []string{"ssh", "-F", "/dev/null", "-p", port, "-i", key.Path,
		"-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=accept-new", "-o", "UserKnownHostsFile=" + knownHosts,
		"-o", "LogLevel=ERROR"}
	args = append(args, extra...)
	return append(args, "lockctl@127.0.0.1")
}

// Run runs argv without a terminal (ssh then asks for no PTY unless told
// -tt) and returns its combined output and exit code.
func Run(t testing.TB, argv []string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", argv[0], err)
		}
		return string(out), ee.ExitCode()
	}
	return string(out), 0
}
