package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	cases := map[string]string{
		"billing:nightly":   "billing:nightly",
		"\x1b]2;owned\x07":  `\x1b]2;owned\x07`,
		"\x1b[2J":           `\x1b[2J`,
		"a\nb\tc":           `a\nb\tc`,
		`back\slash`:        `back\\slash`,
		"café 東京":           "café 東京",
		"\xff\xfe":          `\xff\xfe`,
		"\u009b31m":         `\u009b31m`,
		"evil\u202etxt.exe": `evil\u202etxt.exe`,
		"\x00":              `\x00`,
		"del\x7f":           `del\x7f`,
	}
	for in, want := range cases {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEscape: whatever the database holds, the output is valid UTF-8 with no
// byte a terminal would treat as the start of a control sequence.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]2;owned\x07", "\x1b[2J", "\u009b", "\xc2\x9b", "\xff", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q is not valid UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("Escape(%q) = %q contains control %U", s, out, r)
			}
		}
		if strings.ContainsRune(out, 0x202e) {
			t.Fatalf("Escape(%q) kept a bidi override", s)
		}
	})
}
