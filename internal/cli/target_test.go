package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// The demo and bench write to a database only when the command line
// names it: --dsn or --context, never the file's default context.
func TestOnlyTheCommandLineNamesADatabaseExplicitly(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lockctl"), 0o700); err != nil {
		t.Fatal(err)
	}
	file := `{"default": "staging", "contexts": [{"name": "staging", "dsn": "postgres://ops@staging/app", "read_only": true}]}`
	if err := os.WriteFile(filepath.Join(dir, "lockctl", "contexts.json"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"XDG_CONFIG_HOME": dir}[k] }
	byDefault, err := resolveTarget(globals{}, getenv)
	if err != nil || byDefault.dsn != "postgres://ops@staging/app" || byDefault.explicit != "" || byDefault.context.Name != "staging" {
		t.Fatalf("the default context: %+v, %v; want its dsn, not explicit", byDefault, err)
	}
	named, err := resolveTarget(globals{context: "staging"}, getenv)
	if err != nil || named.explicit != "postgres://ops@staging/app" {
		t.Fatalf("--context staging: %+v, %v; want its dsn, explicit", named, err)
	}
	// demo and bench (ExplicitOnly) do not look at the default context:
	// its being read-only does not refuse them.
	if own, err := resolve(globals{}, getenv, false); err != nil || own.dsn != "" || own.context.ReadOnly {
		t.Fatalf("an ExplicitOnly command's target: %+v, %v; want none", own, err)
	}
}
