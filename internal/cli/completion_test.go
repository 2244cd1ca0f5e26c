package cli_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

// completionCases are command lines being typed (a trailing space: a new
// word) and what completion must offer for the last word.
var completionCases = []struct {
	line string
	want []string
}{
	{"lockctl ac", []string{"acquire"}},
	{"lockctl --dsn postgres://x r", []string{"release", "renew", "run"}},
	{"lockctl comp", []string{"completion"}},
	{"lockctl completion ", []string{"bash", "fish", "zsh"}},
	{"lockctl run k --gr", []string{"--grace"}},
	{"lockctl acquire k --ow", []string{"--owner"}},
	{"lockctl help rel", []string{"release"}},
	{"lockctl bench --qu", nil}, // --queue-worker is hidden
	{"lockctl grant r --as ", []string{"operator", "service", "viewer"}},
}

func requireShell(t *testing.T, shell string) {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		testdb.Unavailable(t, "%s not installed", shell)
	}
}

// bashComplete sources `lockctl completion bash` and runs its function for
// line as bash would, returning COMPREPLY sorted.
func bashComplete(t *testing.T, line string) []string {
	t.Helper()
	prog := `source <("$LOCKCTL" completion bash) || exit 9
read -ra COMP_WORDS <<< "$LINE"
[[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_lockctl_completion
printf '%s\n' "${COMPREPLY[@]}"`
	return shellLines(t, "bash", prog, line)
}

func shellLines(t *testing.T, shell, prog, line string) []string {
	t.Helper()
	cmd := exec.Command(shell, "-c", prog)
	cmd.Env = cleanEnv("LOCKCTL="+binary, "LINE="+line)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s completing %q: %v\n%s", shell, line, err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	return got
}

func TestBashCompletion(t *testing.T) {
	t.Parallel()
	requireShell(t, "bash")
	for _, c := range completionCases {
		if got := bashComplete(t, c.line); !slices.Equal(got, c.want) {
			t.Errorf("bash completes %q to %q; want %q", c.line, got, c.want)
		}
	}
	// After run's "--" the words are the command's: bash's own (file)
	// completion, not lockctl's.
	if got := bashComplete(t, "lockctl run k -- "); len(got) != 0 {
		t.Errorf("bash completes after -- to %q; want nothing from lockctl", got)
	}
}

// zsh runs the same function through bashcompinit; zsh filters the words
// by what was typed itself, so each wanted word must be among the offers.
func TestZshCompletion(t *testing.T) {
	t.Parallel()
	requireShell(t, "zsh")
	prog := `autoload -U compinit && compinit -u -D
source <("$LOCKCTL" completion zsh) || exit 9
[[ "${_comps[lockctl]}" == "_bash_complete -F _lockctl_completion" ]] || { echo "not registered: ${_comps[lockctl]}"; exit 8; }
setopt ksharrays
COMP_WORDS=(${=LINE})
[[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_lockctl_completion
printf '%s\n' "${COMPREPLY[@]}"`
	for _, c := range completionCases {
		got := shellLines(t, "zsh", prog, c.line)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("zsh offers %q for %q; want %q among them", got, c.line, w)
			}
		}
	}
}

func TestFishCompletion(t *testing.T) {
	t.Parallel()
	requireShell(t, "fish")
	prog := `"$LOCKCTL" completion fish | source; or exit 9
complete -C "$LINE" | string replace -r '\t.*' ''
true`
	for _, c := range completionCases {
		if got := shellLines(t, "fish", prog, c.line); !slices.Equal(got, c.want) {
			t.Errorf("fish completes %q to %q; want %q", c.line, got, c.want)
		}
	}
}

func TestCompletionUsage(t *testing.T) {
	t.Parallel()
	r := run(t, "completion", "powershell")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown shell "powershell": want one of bash, zsh, fish`) {
		t.Fatalf("%s\nwant exit 2 naming the shells", r)
	}
}
