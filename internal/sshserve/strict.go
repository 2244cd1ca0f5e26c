package sshserve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// errUnsafeFile is what the StrictModes checks' errors wrap.
var errUnsafeFile = errors.New("unsafe permissions")

// checkOwnedPrivately refuses, as sshd's StrictModes does, a file that
// someone else could change: one writable by group or others, or owned by
// neither this user nor root. Its directory is held to the same rule
// (whoever may write the directory may replace the file), unless the
// directory is sticky (/tmp: others cannot rename or remove the file).
// what names the file in the error ("authorized keys", "host key").
func checkOwnedPrivately(what, path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s: not a regular file", what, path)
	}
	if err := ownedPrivately(fi); err != nil {
		return fmt.Errorf("%w: %s %s %v (chmod go-w, or chown to the user running lockctl)", errUnsafeFile, what, path, err)
	}
	dir := filepath.Dir(real)
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: directory: %w", what, path, err)
	}
	if di.Mode()&fs.ModeSticky == 0 {
		if err := ownedPrivately(di); err != nil {
			return fmt.Errorf("%w: directory %s of %s %s %v", errUnsafeFile, dir, what, path, err)
		}
	}
	return nil
}

// checkSecret refuses a private key that others may read, as ssh and sshd
// refuse an "UNPROTECTED PRIVATE KEY FILE", besides checkOwnedPrivately's
// rules: whoever reads the host key can impersonate the server.
func checkSecret(what, path string) error {
	if err := checkOwnedPrivately(what, path); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s %s is readable by others (mode %04o; chmod 600 it)", errUnsafeFile, what, path, perm)
	}
	return nil
}

// ownedPrivately says what is wrong with fi's owner or mode, or nil.
func ownedPrivately(fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("is writable by group or others (mode %04o)", perm)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("has no owner this system can read")
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("is owned by uid %d, not by this user (uid %d) or root", st.Uid, uid)
	}
	return nil
}
