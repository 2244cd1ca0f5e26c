// Package contextstest writes contexts files for tests: a config
// directory to point XDG_CONFIG_HOME at.
package contextstest

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/contexts"
)

// ConfigDir writes file, with mode, as the contexts file of a fresh
// config directory and returns that directory (XDG_CONFIG_HOME).
func ConfigDir(t testing.TB, file string, mode fs.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lockctl"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "lockctl", contexts.FileName)
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Quote is s as a JSON string, for a DSN in a contexts file.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
