package pgtemp

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Account is the user a server and the programs around it run as: this
// process's own, or, when this process is root, another user (initdb and
// postgres refuse to run as root). The zero value is this process's own.
// Tests that start programs which start PostgreSQL themselves (Patroni)
// run them with it too.
type Account struct {
	uid, gid uint32
	other    bool
}

// AccountFor is the account servers run as: this process's own, or as
// root the user called name ("" means "postgres").
func AccountFor(name string) (Account, error) {
	if os.Geteuid() != 0 {
		return Account{}, nil
	}
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, fmt.Errorf("pgtemp: running as root needs the %q user to run PostgreSQL (initdb refuses root): %w", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return Account{uid: uint32(uid), gid: uint32(gid), other: true}, nil
}

// ProcAttr starts a program in a process group of its own (so a stuck one
// can be killed with everything it started) as the account.
func (a Account) ProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if a.other {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid}
	}
	return attr
}

// MkdirTemp makes a new directory named by os.MkdirTemp's pattern in the
// temporary directory (one the account can reach), owned by the account.
func (a Account) MkdirTemp(pattern string) (string, error) {
	return a.mkdirIn(reachableTempBase(), pattern)
}

// Chown gives path to the account (nothing to do when it is this
// process's own).
func (a Account) Chown(path string) error {
	if !a.other {
		return nil
	}
	if err := os.Chown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("pgtemp: %w", err)
	}
	return nil
}

// mkdirIn makes a new directory in base, named by os.MkdirTemp's pattern,
// owned by the account, so programs running as the account can write in it.
func (a Account) mkdirIn(base, pattern string) (string, error) {
	dir, err := os.MkdirTemp(base, pattern)
	if err != nil {
		return "", fmt.Errorf("pgtemp: %w", err)
	}
	if err := a.Chown(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// reachableTempBase is os.TempDir unless one of its parents is closed to other
// users (a TMPDIR under /root, say), where the postgres user could not reach.
func reachableTempBase() string {
	base := os.TempDir()
	for dir := base; ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if dir == filepath.Dir(dir) {
			return base
		}
	}
}
