package cli_test

import (
	"strings"
	"testing"
	"time"
)

// mixedSetResult is acquire's --json object for a set that mixes modes.
type mixedSetResult struct {
	Owner  string `json:"owner"`
	Leases []struct {
		Key       string    `json:"key"`
		Token     int64     `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
		Mode      string    `json:"mode"`
		Permits   int       `json:"permits"`
	} `json:"leases"`
}

// One call reads config shared, takes a permit of reports and writes
// account:7, all or none: the set is granted beside another reader of
// config, and refused whole while config is held alone.
func TestAcquireMixedSet(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.expect(0, "acquire", "config", "--shared", "--owner", "reader")
	var got mixedSetResult
	decode(t, d.expect(0, "acquire", "config", "account:7", "reports", "--key-shared", "config",
		"--key-permits", "reports=3", "--owner", "me", "--json"), &got)
	if len(got.Leases) != 3 || got.Leases[0].Mode != "shared" || got.Leases[1].Mode != "" ||
		got.Leases[2].Mode != "semaphore" || got.Leases[2].Permits != 3 {
		t.Fatalf("the mixed set = %+v; want config shared, account:7 alone, a permit of 3 of reports", got)
	}
	if h := d.holders("account:7"); h["account:7"] != "me" {
		t.Errorf("account:7 held by %q; want me", h["account:7"])
	}

	d.expect(0, "acquire", "lone", "--owner", "writer")
	r := d.expect(3, "acquire", "lone", "other", "--key-shared", "lone", "--owner", "me")
	if !strings.Contains(r.stderr, "lone") {
		t.Errorf("refusal %q does not name lone", r.stderr)
	}
	if h := d.holders("other"); h["other"] != "" {
		t.Errorf("other held by %q after the set was refused; want nobody", h["other"])
	}
}

// Modes of a set are checked before connecting.
func TestAcquireMixedSetUsage(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"a", "b", "--key-shared", "c"}, "c is not one of the keys"},
		{[]string{"a", "b", "--key-shared", "a", "--key-permits", "a=2"}, "mode of a is given twice"},
		{[]string{"a", "b", "--key-permits", "a"}, "want KEY=N"},
		{[]string{"a", "b", "--key-permits", "a=0"}, "want KEY=N"},
		{[]string{"a", "b", "--key-shared", "a", "--lock-delay", "5s"}, "--lock-delay"},
		{[]string{"a", "b", "--shared"}, "--key-shared or --key-permits"},
	} {
		r := d.expect(2, append([]string{"acquire", "--owner", "me"}, c.args...)...)
		if !strings.Contains(r.stderr, c.says) {
			t.Errorf("acquire %v: %q does not say %q", c.args, r.stderr, c.says)
		}
	}
}
