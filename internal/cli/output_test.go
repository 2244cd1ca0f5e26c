package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/textsafe"
)

func TestFormatDuration(t *testing.T) {
	cases := map[time.Duration]string{
		0:                                      "0s",
		850 * time.Millisecond:                 "850ms",
		29540 * time.Millisecond:               "29.5s",
		12*time.Minute + 5400*time.Millisecond: "12m5s",
		3*time.Hour + 12*time.Minute + 20*time.Second: "3h12m",
		5 * time.Minute:          "5m",
		time.Hour:                "1h",
		24 * time.Hour:           "24h",
		90 * time.Second:         "1m30s",
		-1500 * time.Millisecond: "-1.5s",
	}
	for d, want := range cases {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q; want %q", d, got, want)
		}
	}
}

// JSON output is valid, keeps every character, and carries no raw C1 or
// bidi control a terminal could act on.
func TestWriteJSONEscapesTerminalControls(t *testing.T) {
	in := map[string]string{"key": "a\x1b[31m\u009b2J\u202eb<&>"}
	var buf bytes.Buffer
	if err := writeJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, raw := range []string{"\x1b", "\u009b", "\u202e"} {
		if bytes.Contains(buf.Bytes(), []byte(raw)) {
			t.Errorf("JSON %q contains raw %q", out, raw)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["key"] != in["key"] {
		t.Fatalf("JSON %q decodes to %q, %v; want the original", out, back["key"], err)
	}
}

// An array written an element at a time is byte for byte the array
// writeJSON writes whole: `ls --json` streams without changing its output.
func TestJSONArrayMatchesWriteJSON(t *testing.T) {
	type row struct {
		Key  string         `json:"key"`
		Meta map[string]any `json:"meta"`
	}
	for _, rows := range [][]row{
		{},
		{{Key: "a", Meta: map[string]any{}}},
		{{Key: "a\x1b[31m\u202e<&>", Meta: map[string]any{"n": 1.5}}, {Key: "b"}, {Key: "c", Meta: map[string]any{"x": []any{"y"}}}},
	} {
		var whole, streamed bytes.Buffer
		if err := writeJSON(&whole, rows); err != nil {
			t.Fatal(err)
		}
		a := newJSONArray(&streamed)
		for _, r := range rows {
			if err := a.add(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.close(); err != nil {
			t.Fatal(err)
		}
		if streamed.String() != whole.String() {
			t.Errorf("streamed %q; writeJSON wrote %q", streamed.String(), whole.String())
		}
	}
}

// JSON and text output keep the same runes from a terminal: every rune the
// text escape writes as an escape (format characters such as U+200B
// included), --json writes as \u too.
func TestJSONEscapesWhatTextEscapes(t *testing.T) {
	for r := rune(0x80); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // not a rune a string can carry
		}
		s := string(r)
		if textsafe.Escape(s) == s {
			continue
		}
		b, err := encodeJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("text output escapes U+%04X, --json writes it raw: %s", r, b)
		}
	}
}
