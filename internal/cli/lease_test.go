package cli_test

import (
	"fmt"
	"github.com/lockctl/lockctl/internal/fencetoken"
	"strings"
	"testing"
)

func TestRenew(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	lease := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "10s")
	tok := tokenArg(lease.Token)

	renewed := d.json(0, "renew", "k", "--owner", "a", "--token", tok, "--ttl", "1m")
	if renewed.Outcome != "renewed" || renewed.Token != lease.Token || renewed.TTLMs != 60000 ||
		!expiresAt(t, renewed).After(expiresAt(t, lease)) {
		t.Fatalf("renew = %+v; want renewed, token %d, ttl 1m, later expiry", renewed, lease.Token)
	}

	wrongToken := d.json(4, "renew", "k", "--owner", "a", "--token", tokenArg(lease.Token+1000))
	if wrongToken.Outcome != "not_held" || wrongToken.Owner != "a" || wrongToken.Token != lease.Token ||
		wrongToken.RequestedToken != lease.Token+1000 || wrongToken.RequestedOwner != "a" || wrongToken.State != "held" {
		t.Fatalf("renew with a wrong token = %+v; want not_held showing the current lease of a", wrongToken)
	}
	wrongOwner := d.json(4, "renew", "k", "--owner", "b", "--token", tok)
	if wrongOwner.Outcome != "not_held" || !strings.Contains(wrongOwner.Detail, "belongs to a") {
		t.Fatalf("renew by the wrong owner = %+v; want not_held, belongs to a", wrongOwner)
	}
	r := d.expect(4, "renew", "k", "--owner", "b", "--token", tok)
	if r.stdout != "" || !strings.Contains(r.stderr, "not the current lease") {
		t.Fatalf("text renew by the wrong owner: %s", r)
	}
}

// Once a lease expired and another owner took the key, its holder can no
// longer renew it.
func TestRenewAfterSteal(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	old := d.json(0, "acquire", "k", "--owner", "a", "--ttl", "1m")
	d.expireLease("k")
	expired := d.json(4, "renew", "k", "--owner", "a", "--token", tokenArg(old.Token))
	if expired.State != "expired" || !strings.Contains(expired.Detail, "expired") {
		t.Fatalf("renew of an expired lease = %+v; want not_held, expired", expired)
	}
	stolen := d.json(0, "acquire", "k", "--owner", "b")
	lost := d.json(4, "renew", "k", "--owner", "a", "--token", tokenArg(old.Token))
	if lost.Owner != "b" || lost.Token != stolen.Token || !strings.Contains(lost.Detail, "now token") {
		t.Fatalf("renew after the steal = %+v; want not_held naming b's token %d", lost, stolen.Token)
	}
}

func TestRelease(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	lease := d.json(0, "acquire", "k", "--owner", "a")
	tok := tokenArg(lease.Token)

	d.json(4, "release", "k", "--owner", "a", "--token", tokenArg(lease.Token+1))
	released := d.json(0, "release", "k", "--owner", "a", "--token", tok)
	if released.Outcome != "released" || released.Token != lease.Token || released.State != "free" {
		t.Fatalf("release = %+v; want released, free", released)
	}
	again := d.json(4, "release", "k", "--owner", "a", "--token", tok)
	if again.Outcome != "not_held" || again.State != "free" || again.Owner != "a" || !strings.Contains(again.Detail, "released") {
		t.Fatalf("second release = %+v; want not_held, row kept and free", again)
	}

	rows := lsJSON(t, d)
	if len(rows) != 1 || rows[0].Key != "k" || rows[0].State != "free" || rows[0].ReleasedAt == nil {
		t.Fatalf("ls after release = %+v; want the row kept, free", rows)
	}

	r := d.expect(0, "acquire", "k2", "--owner", "a", "--json")
	var l jsonResult
	decode(t, r, &l)
	r = d.expect(0, "release", "k2", "--owner", "a", "--token", tokenArg(l.Token))
	if r.stdout != "released k2 token="+tokenArg(l.Token)+" owner=a\n" {
		t.Fatalf("text release printed %q", r.stdout)
	}
}

// --token takes the token as the console shows it, EPOCH·COUNT (or with a
// dot), as well as the full number.
func TestTokenInEpochCountForm(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	lease := d.json(0, "acquire", "k", "--owner", "a")
	shown := fencetoken.Format(lease.Token)
	renewed := d.json(0, "renew", "k", "--owner", "a", "--token", shown)
	if renewed.Outcome != "renewed" || renewed.Token != lease.Token {
		t.Fatalf("renew --token %s = %+v; want renewed, token %d", shown, renewed, lease.Token)
	}
	epoch, count := fencetoken.Parts(lease.Token)
	wrong := d.json(4, "release", "k", "--owner", "a", "--token", fmt.Sprintf("%d.%d", epoch, count+1))
	if wrong.RequestedToken != lease.Token+1 {
		t.Fatalf("release --token %d.%d asked for token %d; want %d", epoch, count+1, wrong.RequestedToken, lease.Token+1)
	}
	released := d.json(0, "release", "k", "--owner", "a", "--token", fmt.Sprintf("%d.%d", epoch, count))
	if released.Outcome != "released" {
		t.Fatalf("release --token %d.%d = %+v; want released", epoch, count, released)
	}
}
