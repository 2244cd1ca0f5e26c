package contexts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestParseChecksEveryContext(t *testing.T) {
	good := `{"default": "staging", "contexts": [
		{"name": "staging", "dsn": "postgres://ops@staging/app", "color": "green"},
		{"name": "prod-eu.1", "service": "prod", "color": "#FF5f00", "read_only": true, "actor": "alice@ops"},
		{"name": "plain", "dsn": "host=x"}]}`
	f, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Names(), " "); got != "staging prod-eu.1 plain" || f.Default != "staging" {
		t.Fatalf("names %q, default %q", got, f.Default)
	}
	if c, _ := f.Find("prod-eu.1"); !c.ReadOnly || c.Actor != "alice@ops" || c.Color != "#FF5f00" {
		t.Fatalf("prod-eu.1 = %+v", c)
	}
	for name, text := range map[string]string{
		"no JSON":            `contexts: []`,
		"unknown field":      `{"contexts": [{"name": "a", "dsn": "x", "readonly": true}]}`,
		"no name":            `{"contexts": [{"dsn": "x"}]}`,
		"name with a space":  `{"contexts": [{"name": "a b", "dsn": "x"}]}`,
		"neither":            `{"contexts": [{"name": "a"}]}`,
		"both":               `{"contexts": [{"name": "a", "dsn": "x", "service": "y"}]}`,
		"unknown colour":     `{"contexts": [{"name": "a", "dsn": "x", "color": "chartreuse"}]}`,
		"bad hex":            `{"contexts": [{"name": "a", "dsn": "x", "color": "#12345"}]}`,
		"named twice":        `{"contexts": [{"name": "a", "dsn": "x"}, {"name": "a", "dsn": "y"}]}`,
		"unknown default":    `{"default": "b", "contexts": [{"name": "a", "dsn": "x"}]}`,
		"two values":         `{"contexts": []} {}`,
		"read_only a string": `{"contexts": [{"name": "a", "dsn": "x", "read_only": "yes"}]}`,
	} {
		if _, err := Parse([]byte(text)); err == nil {
			t.Errorf("%s: Parse took %s", name, text)
		}
	}
}

func TestFindNamesTheKnownContexts(t *testing.T) {
	f, err := Parse([]byte(`{"contexts": [{"name": "staging", "dsn": "x"}, {"name": "prod", "dsn": "y"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	f.Path = "/cfg/lockctl/contexts.json"
	_, err = f.Find("prdo")
	if err == nil || !strings.Contains(err.Error(), `unknown context "prdo"`) || !strings.Contains(err.Error(), "staging, prod") {
		t.Fatalf("Find(prdo) = %v; want the known names", err)
	}
}

func TestPathFollowsXDGConfigHome(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": "/tmp/cfg"}
	if p, err := Path(func(k string) string { return env[k] }); err != nil || p != "/tmp/cfg/lockctl/contexts.json" {
		t.Fatalf("Path = %q, %v", p, err)
	}
	env["XDG_CONFIG_HOME"] = "relative" // not absolute: ignored, as the XDG spec says
	if p, err := Path(func(k string) string { return env[k] }); err == nil && strings.HasPrefix(p, "relative") {
		t.Fatalf("Path took a relative XDG_CONFIG_HOME: %q", p)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if _, err := Load(path); !errors.Is(err, ErrNoFile) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a missing file = %v; want ErrNoFile naming it", err)
	}
	if err := os.WriteFile(path, []byte(`{"contexts": [{"name": "a"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a bad file = %v; want an error naming it", err)
	}
	if err := os.WriteFile(path, []byte(`{"contexts": [{"name": "a", "dsn": "x"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil || f.Path != path || f.Mode != 0o640 {
		t.Fatalf("Load = %+v, %v", f, err)
	}
}

// A service name reaches pgx as service=NAME, quoted: the settings come
// from the service file, as libpq reads them.
func TestServiceConnString(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pg_service.conf")
	if err := os.WriteFile(file, []byte("[it's prod]\nhost=db.internal\nport=6543\ndbname=app\nuser=ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGSERVICEFILE", file)
	c := Context{Name: "p", Service: "it's prod"}
	cfg, err := pgconn.ParseConfig(c.ConnString())
	if err != nil {
		t.Fatalf("ParseConfig(%q): %v", c.ConnString(), err)
	}
	if cfg.Host != "db.internal" || cfg.Port != 6543 || cfg.Database != "app" || cfg.User != "ops" {
		t.Fatalf("service read as %s:%d/%s as %s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	}
	if d := (Context{DSN: "postgres://x/y"}); d.ConnString() != "postgres://x/y" {
		t.Fatalf("a DSN's ConnString = %q", d.ConnString())
	}
}
