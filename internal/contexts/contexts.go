// Package contexts reads lockctl's contexts: the databases an operator
// works with (staging, production, one per region), each named once in
// the user's config file with how to reach it, the colour the console
// shows its name in, whether it is read-only and the actor to record:
//
//	{
//	  "default": "staging",
//	  "contexts": [
//	    {"name": "staging", "dsn": "postgres://ops@staging-db/app", "color": "green"},
//	    {"name": "prod-eu", "service": "lockctl-prod-eu", "color": "red", "read_only": true, "actor": "alice@ops"}
//	  ]
//	}
//
// The file is contexts.json in the lockctl directory of the platform's
// config directory ($XDG_CONFIG_HOME/lockctl, else os.UserConfigDir's).
// It is read as it is on every run: nothing writes it but the operator.
package contexts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// FileName is the contexts file's name in the config directory.
const FileName = "contexts.json"

// Context is one named database.
type Context struct {
	Name string `json:"name"`
	// DSN is a connection string (URL or key=value), as --dsn takes it.
	DSN string `json:"dsn,omitempty"`
	// Service is a libpq service name (pg_service.conf; $PGSERVICEFILE),
	// instead of DSN.
	Service string `json:"service,omitempty"`
	// Color is the colour the console shows the name in: one of
	// ColorNames or #rgb / #rrggbb; "" for the console's neutral one.
	Color string `json:"color,omitempty"`
	// ReadOnly: no command or console action changes its locks.
	ReadOnly bool `json:"read_only,omitempty"`
	// Actor is recorded on operator actions instead of --actor's default.
	Actor string `json:"actor,omitempty"`
}

// ConnString is what connects to c: its DSN, or its service as a
// key=value string.
func (c Context) ConnString() string {
	if c.Service != "" {
		return "service=" + quoteValue(c.Service)
	}
	return c.DSN
}

// quoteValue quotes a key=value string's value as libpq reads it.
func quoteValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// ColorNames are the colour names a context may give; #rgb and #rrggbb
// are taken too. The console picks each name's shade for the theme.
var ColorNames = []string{"red", "orange", "yellow", "green", "cyan", "blue", "purple", "pink", "gray"}

var (
	hexColor = regexp.MustCompile(`^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$`)
	// validName keeps names to what a shell and completion take as one
	// word.
	validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
)

// File is the contexts file as read.
type File struct {
	// Default is the context used when neither --dsn, --context nor
	// $DATABASE_URL names a database ("": none).
	Default  string    `json:"default,omitempty"`
	Contexts []Context `json:"contexts"`
	// Path is where it was read from; Mode its permission bits.
	Path string      `json:"-"`
	Mode fs.FileMode `json:"-"`
}

// Path is where the contexts file is: $XDG_CONFIG_HOME/lockctl/contexts.json
// when getenv has XDG_CONFIG_HOME (on every platform, as for the other
// XDG tools), else in os.UserConfigDir's lockctl directory.
func Path(getenv func(string) string) (string, error) {
	if getenv != nil {
		if dir := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
			return filepath.Join(dir, "lockctl", FileName), nil
		}
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory for the contexts file: %w", err)
	}
	return filepath.Join(dir, "lockctl", FileName), nil
}

// ErrNoFile is Load's error when the file does not exist.
var ErrNoFile = errors.New("no contexts file")

// Load reads and checks the file at path. A missing file is ErrNoFile
// (wrapped, with the path); anything the file gets wrong is an error
// naming the file and what to fix.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{Path: path}, fmt.Errorf("%w: %s does not exist", ErrNoFile, path)
	}
	if err != nil {
		return File{Path: path}, err
	}
	f, err := Parse(b)
	f.Path = path
	if err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	if info, err := os.Stat(path); err == nil {
		f.Mode = info.Mode().Perm()
	}
	return f, nil
}

// Parse reads a contexts file's text and checks it: every context named
// once, with a name, exactly one of dsn and service, and a colour it can
// show; the default one of them. Unknown fields are errors, so a typo
// (readonly for read_only) is not silently ignored.
func Parse(b []byte) (File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("not a contexts file: %w", err)
	}
	if dec.More() {
		return f, errors.New("not a contexts file: more than one JSON value")
	}
	seen := map[string]bool{}
	for i, c := range f.Contexts {
		if err := c.check(); err != nil {
			return f, fmt.Errorf("context %d (%q): %w", i+1, c.Name, err)
		}
		if seen[c.Name] {
			return f, fmt.Errorf("context %q is named twice", c.Name)
		}
		seen[c.Name] = true
	}
	if f.Default != "" && !seen[f.Default] {
		return f, fmt.Errorf("default %q is not one of the contexts (%s)", f.Default, f.names())
	}
	return f, nil
}

func (c Context) check() error {
	switch {
	case !validName.MatchString(c.Name):
		return errors.New("name must be 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit")
	case c.DSN == "" && c.Service == "":
		return errors.New(`give "dsn" or "service"`)
	case c.DSN != "" && c.Service != "":
		return errors.New(`give "dsn" or "service", not both`)
	case c.Color != "" && !slices.Contains(ColorNames, c.Color) && !hexColor.MatchString(c.Color):
		return fmt.Errorf("color %q: use one of %s, or #rrggbb", c.Color, strings.Join(ColorNames, ", "))
	}
	return nil
}

// Find is the context called name; an unknown name is an error listing
// the known ones.
func (f File) Find(name string) (Context, error) {
	for _, c := range f.Contexts {
		if c.Name == name {
			return c, nil
		}
	}
	if len(f.Contexts) == 0 {
		return Context{}, fmt.Errorf("unknown context %q: %s names none", name, f.Path)
	}
	return Context{}, fmt.Errorf("unknown context %q: %s names %s", name, f.Path, f.names())
}

// Names are the contexts' names, in the file's order.
func (f File) Names() []string {
	names := make([]string, len(f.Contexts))
	for i, c := range f.Contexts {
		names[i] = c.Name
	}
	return names
}

func (f File) names() string { return strings.Join(f.Names(), ", ") }
