package locker_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The README's embedding example is a whole program: it must compile
// against this package as it is, and a service must need no lockctl
// package besides locker.
func TestReadmeEmbeddingExampleCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet on the README's example (-short)")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	program := readmeProgram(string(readme))
	if program == "" {
		t.Fatal("README.md has no ```go block with a whole program (package main) using locker")
	}

	file, err := parser.ParseFile(token.NewFileSet(), "main.go", program, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("README example does not parse: %v", err)
	}
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(path, "github.com/lockctl/lockctl/") && path != "github.com/lockctl/lockctl/locker" {
			t.Errorf("README example imports %s: a service should need only locker", path)
		}
	}

	// Inside the module (testdata is never part of ./...), so the example
	// builds with the module's own dependency versions.
	dir, err := os.MkdirTemp("testdata", "readme-example-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./"+filepath.ToSlash(dir))
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README example does not compile: %v\n%s", err, out)
	}
}

// readmeProgram returns the first ```go block of markdown that is a whole
// program using locker.
func readmeProgram(markdown string) string {
	const open, end = "```go\n", "\n```"
	for rest := markdown; ; {
		i := strings.Index(rest, open)
		if i < 0 {
			return ""
		}
		rest = rest[i+len(open):]
		j := strings.Index(rest, end)
		if j < 0 {
			return ""
		}
		block := rest[:j+1]
		rest = rest[j+len(end):]
		if strings.HasPrefix(block, "package main\n") && strings.Contains(block, `"github.com/lockctl/lockctl/locker"`) {
			return block
		}
	}
}
