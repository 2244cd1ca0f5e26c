package locker_test

import (
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
	cmd := exec.Command("go", "doc", "-all", ".")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go doc -all: %v\n%s", err, out)
	}
	store := regexp.MustCompile(`\bstore\b`)
	for i, line := range strings.Split(string(out), "\n") {
		if store.MatchString(line) {
			t.Errorf("go doc -all ./locker line %d mentions store: %s", i+1, strings.TrimSpace(line))
		}
	}
}
