package fencetoken_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/fencetoken"
)

func TestFormat(t *testing.T) {
	cases := []struct {
		token int64
		want  string
	}{
		{1099511627801, "1·25"},
		{25, "0·25"},
		{1 << 40, "1·0"},
		{3<<40 | (1<<40 - 1), "3·1099511627775"},
		{1<<63 - 1, "8388607·1099511627775"},
	}
	for _, c := range cases {
		if got := fencetoken.Format(c.token); got != c.want {
			t.Errorf("Format(%d) = %q; want %q", c.token, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"1099511627801", 1099511627801, ""},
		{"1·25", 1099511627801, ""},
		{"1.25", 1099511627801, ""},
		{" 2·0 ", 2 << 40, ""},
		{"0·7", 7, ""},
		{"42", 42, ""},
		{"0", 0, "must be positive"},
		{"-3", 0, "must be positive"},
		{"0·0", 0, "must be positive"},
		{"1·-1", 0, "must be positive"},
		{"x", 0, "not a token"},
		{"", 0, "not a token"},
		{"1·", 0, "count: not a token"},
		{"·5", 0, "epoch: not a token"},
		{"1·2·3", 0, "count: not a token"},
		{"1.2.3", 0, "count: not a token"},
		{"99999999999999999999", 0, "too large"},
		{"1·1099511627776", 0, "count too large"},
		{"8388608·0", 0, "epoch too large"},
	}
	for _, c := range cases {
		got, err := fencetoken.Parse(c.in)
		switch {
		case c.wantErr == "" && (err != nil || got != c.want):
			t.Errorf("Parse(%q) = %d, %v; want %d", c.in, got, err, c.want)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("Parse(%q) = %d, %v; want an error saying %q", c.in, got, err, c.wantErr)
		}
	}
}

// Whatever FormatToken shows, ParseToken reads back as the same token.
func FuzzTokenRoundTrip(f *testing.F) {
	for _, seed := range []int64{1, 25, 1 << 40, 1099511627801, 1<<63 - 1} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token int64) {
		if token <= 0 {
			return
		}
		shown := fencetoken.Format(token)
		back, err := fencetoken.Parse(shown)
		if err != nil || back != token {
			t.Fatalf("Parse(Format(%d) = %q) = %d, %v", token, shown, back, err)
		}
		if dotted, err := fencetoken.Parse(strings.Replace(shown, fencetoken.Separator, ".", 1)); err != nil || dotted != token {
			t.Fatalf("ParseToken of %q with a dot = %d, %v", shown, dotted, err)
		}
	})
}
