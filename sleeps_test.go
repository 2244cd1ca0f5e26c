package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxTestSleeps bounds the calls of Sleep (package time) in the tests. A
// test moves the schema's clock (testdb.Clock) where time must pass on the
// lock clock, and waits for what it can observe (testdb.Eventually,
// WaitUntilPast, ReadAfter, a pane's WaitFor) where something must happen;
// the sleeps left are the few shared ones that can be neither, each saying
// why: testdb's pause between a wait's looks and its Pace of simulated
// clients, and pgtemp's poll for a process to go (testdb is out of its
// reach).
const maxTestSleeps = 5

var sleepCall = regexp.MustCompile(`\btime\.Sleep\(`)

// The tests rarely sleep: Sleep is called at most maxTestSleeps times in
// the test files, and in the code only tests and
// tools run (the packages the lockctl binary does not build in: testdb,
// the workload, the fault suite, …), a sleep in a helper counted once
// however many tests call it.
func TestTestsRarelySleep(t *testing.T) {
	testOnly := map[string]bool{} // directories
	for _, dir := range goList(t, "-f", "{{.Dir}}", "./...") {
		testOnly[dir] = true
	}
	for _, dir := range goList(t, "-deps", "-f", "{{.Dir}}", ".") {
		delete(testOnly, dir)
	}
	sleeps := map[string]int{}
	total := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		abs, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return err
		}
		if !strings.HasSuffix(path, "_test.go") && !(strings.HasSuffix(path, ".go") && testOnly[abs]) {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(text), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if n := len(sleepCall.FindAllString(code, -1)); n > 0 {
				sleeps[filepath.ToSlash(path)] += n
				total += n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(testOnly) == 0 || !testOnly[mustAbs(t, "internal/testdb")] {
		t.Fatalf("no package found outside the binary, or not testdb: %v", testOnly)
	}
	if limit := maxTestSleeps; total > limit {
		t.Errorf("the tests sleep %d times, over %d: move the schema's clock (testdb.Clock) or wait "+
			"for what the test can observe (testdb.Eventually) instead; by file: %v", total, limit, sleeps)
	}
}

// goList runs go list with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
