package cli

import (
	"io"

	"github.com/lockctl/lockctl/internal/export"
	"github.com/lockctl/lockctl/internal/textsafe"
)

// csvFlagHelp is --csv's help, the same on every command that has it.
const csvFlagHelp = "print CSV: a header of the columns, then a row per line (exclusive with --json)"

// checkOutput refuses --csv with --json: a listing is printed one way.
func checkOutput(env Env, asJSON, asCSV bool) (int, bool) {
	if asJSON && asCSV {
		return env.Usagef("--csv and --json are exclusive: choose one"), false
	}
	return ExitOK, true
}

// newCSV writes rows of columns as CSV on w, which buffers env.Stdout
// (export.NewCSV): database text exactly, but for the formula guard, unless
// standard output is a terminal, where it is escaped as every listing
// escapes it for a terminal.
func newCSV(env Env, w io.Writer, columns []string) export.Writer {
	var escape func(string) string
	if _, onTerminal := terminalWidth(env.Stdout); onTerminal {
		escape = textsafe.Escape
	}
	return export.NewCSV(w, columns, escape)
}

// emitCSV writes rows as CSV on Stdout, their columns from T's fields
// (export.Columns), and returns ExitOK, or ExitError if writing failed.
func emitCSV[T any](env Env, rows []T) int {
	var zero T
	w := newCSV(env, env.Stdout, export.Columns(zero))
	for _, r := range rows {
		if err := w.Write(export.Values(r)); err != nil {
			return env.Errorf("write output: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		return env.Errorf("write output: %v", err)
	}
	return ExitOK
}
