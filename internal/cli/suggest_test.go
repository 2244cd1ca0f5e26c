package cli_test

import (
	"regexp"
	"strings"
	"testing"
)

// A mistyped command or flag is still a usage error (exit 2), with the
// command or flag that was probably meant.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"list"}, `unknown command "list"; did you mean "ls"?`},
		{[]string{"aquire", "k"}, `did you mean "acquire"?`},
		{[]string{"relase"}, `did you mean "release"?`},
		{[]string{"unlock", "k"}, `did you mean "release"?`},
		{[]string{"exec"}, `did you mean "run"?`},
		{[]string{"version"}, `did you mean "--version"?`},
		{[]string{"help", "relese"}, `did you mean "release"?`},
		{[]string{"evnts"}, `did you mean "events"?`},
		{[]string{"history"}, `did you mean "events"?`},
		{[]string{"acquire", "k", "--ownr", "x"}, `unknown flag --ownr; did you mean --owner?`},
		{[]string{"acquire", "k", "--ttl=5s", "--wiat", "1s"}, `did you mean --wait?`},
		{[]string{"ls", "--jsn"}, `did you mean --json?`},
	}
	for _, c := range cases {
		r := run(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("lockctl %s: %s\nwant exit 2 and %q", strings.Join(c.args, " "), r, c.want)
		}
	}
	// Nothing close: no guess.
	r := run(t, "frobnicate")
	if r.code != 2 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("lockctl frobnicate: %s\nwant exit 2 without a suggestion", r)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := run(t, "--version")
	if r.code != 0 || !regexp.MustCompile(`^lockctl v0\.1\.0, revision ([0-9a-f]{7,}|unknown).*, built with go1\.\d+`).MatchString(r.stdout) {
		t.Fatalf("--version: %s\nwant lockctl v0.1.0, revision ..., built with go...", r)
	}
	if top := run(t, "--help"); !strings.Contains(top.stdout, "lockctl --version") {
		t.Errorf("--help does not list --version:\n%s", top.stdout)
	}
}
