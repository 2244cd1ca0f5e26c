package pgtemp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoServer means no PostgreSQL server binaries were found. Its message says
// what to install, so callers can print it as it is.
var ErrNoServer = errors.New("pgtemp: no PostgreSQL server binaries found (looked in PATH, `pg_config --bindir` and /usr/lib/postgresql/*/bin); install them, e.g. `apt-get install postgresql` or `brew install postgresql`, or set PG_BINDIR")

// FindBinDir returns the directory holding initdb and postgres. Order: the
// PG_BINDIR variable, PATH, `pg_config --bindir`, then the newest
// /usr/lib/postgresql/N/bin (Debian and Ubuntu keep the server off PATH).
func FindBinDir() (string, error) {
	if dir := os.Getenv("PG_BINDIR"); dir != "" {
		if hasServer(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("pgtemp: PG_BINDIR=%s has no initdb and postgres", dir)
	}
	if p, err := exec.LookPath("initdb"); err == nil && hasServer(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServer(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(debianBinGlob)
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, dir := range dirs {
		if hasServer(dir) {
			return dir, nil
		}
	}
	return "", ErrNoServer
}

// debianBinGlob is where Debian and Ubuntu install server binaries; a
// variable so a test can point it at an empty directory.
var debianBinGlob = "/usr/lib/postgresql/*/bin"

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if !isFile(filepath.Join(dir, name)) {
			return false
		}
	}
	return true
}

// isFile says whether p exists and is not a directory: where a program or a
// jar is looked for, a directory of that name does not count.
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// majorOf reads N from /usr/lib/postgresql/N/bin so 15 sorts above 9.6.
func majorOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}
