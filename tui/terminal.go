package tui

import (
	"errors"
	"fmt"
	"os"

	"github.com/charmbracelet/x/term"
)

// errNoTerminal is what CheckTerminal wraps when there is no terminal to
// draw in (a pipe, a cron job, CI).
var errNoTerminal = errors.New("the console needs an interactive terminal")

// CheckTerminal says whether in and out are both terminals, so a command can
// refuse to start the console (and anything it needs, such as the demo's
// server) with a clear message instead of the renderer's "could not open
// TTY" after the fact.
func CheckTerminal(in, out *os.File) error {
	var not []string
	if in == nil || !term.IsTerminal(in.Fd()) {
		not = append(not, "standard input")
	}
	if out == nil || !term.IsTerminal(out.Fd()) {
		not = append(not, "standard output")
	}
	switch len(not) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: %s is not a terminal; for scripts use the commands (lockctl ls, acquire, …; lockctl --help)", errNoTerminal, not[0])
	default:
		return fmt.Errorf("%w: %s and %s are not terminals; for scripts use the commands (lockctl ls, acquire, …; lockctl --help)", errNoTerminal, not[0], not[1])
	}
}
