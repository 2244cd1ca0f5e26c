package cli

import (
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

// terminalWidth is w's width in columns when w is a terminal; ok is false
// for a pipe, a file or /dev/null, where progress lines would be noise.
func terminalWidth(w io.Writer) (width int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(f.Fd()) {
		return 0, false
	}
	width, _, err := term.GetSize(f.Fd())
	if err != nil || width <= 0 {
		width = 80
	}
	return width, true
}
