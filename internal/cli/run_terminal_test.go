package cli_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// On a terminal, run's command gets the terminal: it reads the answer to
// its prompt, and its exit status passes through.
func TestRunInteractiveCommandOnTerminal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	body := fmt.Sprintf("%s run deploy --dsn %s -- bash -c 'read -p \"name? \" x; echo \"hello $x\"; exit 7'\necho \"exit=$?\"\nsleep 60\n",
		shellQuote(binary), shellQuote(d.dsn))
	sendKeys, waitFor := tmuxRun(t, "prompt", body)
	waitFor(regexp.MustCompile(`name\?`))
	sendKeys("bob", "Enter")
	s := waitFor(regexp.MustCompile(`exit=\d+`))
	if !strings.Contains(s, "hello bob") || !strings.Contains(s, "exit=7") || strings.Contains(s, "error") {
		t.Fatalf("screen:\n%s\nwant the prompt answered (hello bob) and exit=7", s)
	}
	if r := d.expect(0, "ls", "--json"); !strings.Contains(r.stdout, `"state":"free"`) {
		t.Errorf("after run the lock is not released: %s", r)
	}
}

// Ctrl-C on the terminal reaches the command once, from the terminal.
func TestRunCtrlCOnTerminal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	body := fmt.Sprintf("%s run deploy --dsn %s -- bash -c 'trap \"echo got INT; exit 3\" INT; read -p \"name? \" x'\necho \"exit=$?\"\nsleep 60\n",
		shellQuote(binary), shellQuote(d.dsn))
	sendKeys, waitFor := tmuxRun(t, "ctrlc", body)
	waitFor(regexp.MustCompile(`name\?`))
	sendKeys("C-c")
	s := waitFor(regexp.MustCompile(`exit=\d+`))
	if strings.Count(s, "got INT") != 1 || !strings.Contains(s, "exit=3") {
		t.Fatalf("screen:\n%s\nwant one SIGINT (got INT once) and exit=3", s)
	}
}

// Ctrl-Z stops the command and lockctl's job with it, as it would stop
// the command alone; fg gives the command the terminal back.
func TestRunSuspendAndResumeOnTerminal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	sendKeys, waitFor := tmuxRun(t, "suspend", "PS1='$ ' exec bash --norc --noprofile -i\n")
	waitFor(regexp.MustCompile(`(?m)^\$`))
	// The prompt is computed, so that the typed command line (which the
	// shell echoes, and prints again on fg) never matches it: Ctrl-Z sent
	// before the command runs would reach the interactive shell, which
	// ignores it.
	sendKeys(fmt.Sprintf("%s run deploy --dsn %s -- bash -c 'read -p \"name$((6*7))? \" x; echo \"hello $x\"; exit 5'",
		shellQuote(binary), shellQuote(d.dsn)), "Enter")
	prompt := regexp.MustCompile(`name42\?`)
	waitFor(prompt)
	sendKeys("C-z")
	waitFor(regexp.MustCompile(`Stopped`))
	sendKeys("clear", "Enter")
	waitFor(regexp.MustCompile(`^\$`))
	// fg prints the job's command line; read does not prompt again.
	sendKeys("fg", "Enter")
	waitFor(regexp.MustCompile(`(?m)^\$ fg\n.*run deploy`))
	sendKeys("alice", "Enter")
	waitFor(regexp.MustCompile(`hello alice`))
	sendKeys(`echo "exit=$?"`, "Enter")
	if s := waitFor(regexp.MustCompile(`exit=\d+`)); !strings.Contains(s, "exit=5") {
		t.Fatalf("screen:\n%s\nwant the command's exit status 5 after fg", s)
	}
}

// Holding the terminal changes nothing about a lost lease: the command is
// stopped, lockctl says why and exits 4, and the shell has its terminal.
func TestRunLeaseLostOnTerminal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	body := fmt.Sprintf("%s run deploy --ttl 3s --grace 1s --dsn %s -- bash -c 'read -p \"name? \" x'\necho \"exit=$?\"\nread -p 'shell? ' y\necho \"shell read $y\"\nsleep 60\n",
		shellQuote(binary), shellQuote(d.dsn))
	sendKeys, waitFor := tmuxRun(t, "lost", body)
	waitFor(regexp.MustCompile(`name\?`))
	d.expect(0, "expire", "deploy")
	s := waitFor(regexp.MustCompile(`exit=\d+`))
	if !strings.Contains(s, "exit=4") || !strings.Contains(s, "lost the lease on deploy") {
		t.Fatalf("screen:\n%s\nwant the lost lease told and exit=4", s)
	}
	waitFor(regexp.MustCompile(`shell\?`))
	sendKeys("ok", "Enter")
	waitFor(regexp.MustCompile(`shell read ok`))
}
