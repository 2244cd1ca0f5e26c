package cli_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// The CLI on a multi-host DSN (target_session_attrs=read-write) works on
// whichever server is primary: migrate names every host, and after the
// primary crashes and the standby is promoted the same command line
// reaches the promoted server, whose tokens are above the old primary's.
func TestCommandsFollowThePromotion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary and a standby")
	}
	ctx := context.Background()
	primary := testdb.Server(t)
	standby := testdb.Standby(t, primary)
	d := db{t: t, dsn: pgtemp.MultiHostDSN("", primary, standby)}
	hosts := "127.0.0.1:" + strconv.Itoa(primary.Port()) + ",127.0.0.1:" + strconv.Itoa(standby.Port()) + "/postgres"
	if r := d.expect(0, "migrate"); !strings.Contains(r.stdout, hosts) {
		t.Fatalf("migrate output %q does not name both hosts (%s)", r.stdout, hosts)
	}
	before := d.json(0, "acquire", "job", "--owner", "a")
	if err := pgtemp.WaitReplayed(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}
	if err := primary.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	d.json(0, "release", "job", "--owner", "a", "--token", tokenArg(before.Token))
	after := d.json(0, "acquire", "job", "--owner", "b")
	if after.Token <= before.Token {
		t.Fatalf("token after the promotion %d; want above %d", after.Token, before.Token)
	}
}
