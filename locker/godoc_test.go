package locker_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// A service reads locker's documentation, not the SQL layer's: every name
// go doc shows for it (errors, types, outcomes) is locker's own, so
// `go doc -all` of the package never points at package store.
func TestGoDocNeverMentionsStore(t *testing.T) {
	out := goDocAll(t)
	store := regexp.MustCompile(`\bstore\b`)
	for i, line := range strings.Split(out, "\n") {
		if store.MatchString(line) {
			t.Errorf("go doc -all ./locker line %d mentions store: %s", i+1, strings.TrimSpace(line))
		}
	}
}

// The package a service reads stays small: go doc -all of it at most 500
// lines, and at most 70 exported names (constants, variables, functions,
// types and the methods of its types), so a new export has to earn its
// place against one that goes.
func TestGoDocSurfaceIsSmall(t *testing.T) {
	if lines := strings.Count(goDocAll(t), "\n"); lines > 500 {
		t.Errorf("go doc -all ./locker is %d lines; want at most 500", lines)
	}
	if names := exportedNames(t); len(names) > 70 {
		t.Errorf("locker exports %d names; want at most 70: %s", len(names), strings.Join(names, " "))
	}
}

// exportedNames are the names go doc lists for the package (its non-test
// files): constants, variables, functions, types, and types' methods as
// Type.Method.
func exportedNames(t *testing.T) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, f := range pkgs["locker"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/lockctl/lockctl/locker")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			names = append(names, v.Names...)
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		names = append(names, f.Name)
	}
	for _, typ := range p.Types {
		names = append(names, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range typ.Methods {
			names = append(names, typ.Name+"."+m.Name)
		}
	}
	return names
}

// goDocAll is what `go doc -all` shows of the package.
func goDocAll(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "doc", "-all", ".")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go doc -all: %v\n%s", err, out)
	}
	return string(out)
}
