// Package textsafe makes text from the database safe to draw on a terminal.
//
// Keys, owner ids, metadata and error messages come from whoever wrote the
// row. Drawn raw, an ESC or a C1 control could retitle the window, clear the
// screen, or hide text; Escape turns every such byte into visible escape
// notation instead (ESC becomes `\x1b`), so the operator sees exactly what is
// stored and the terminal receives only printable text.
package textsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every control character, invalid UTF-8 byte and
// bidirectional-override character written as a Go-style escape. Printable
// text, including non-ASCII letters, passes unchanged.
func Escape(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain is the fast path: printable ASCII with no backslash.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// Unsafe reports whether a non-ASCII rune must not reach a terminal as it
// is: C1 controls (0x80–0x9f; 0x9b is a one-byte CSI on some terminals),
// other non-printing format characters (U+200B …), and the bidi controls
// that can make text display in an order other than stored. It is the one
// rule for every output, text or JSON.
func Unsafe(r rune) bool {
	if r >= 0x80 && r <= 0x9f {
		return true
	}
	if r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c {
		return true
	}
	return !unicode.IsPrint(r) && !unicode.IsSpace(r) && r != 0x200d
}
