package cli

import (
	"context"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// Commands that write to a database only when the user named it (demo,
// bench) read ExplicitDSN; $DATABASE_URL must never reach it.
func TestExplicitDSNIsOnlyTheFlag(t *testing.T) {
	const url = "postgres://app@db/app"
	cases := []struct {
		args         []string
		wantDSN      string
		wantExplicit string
	}{
		{[]string{"probe"}, url, ""},
		{[]string{"probe", "--dsn", url}, url, url},
		{[]string{"probe", "--dsn", "postgres://other@db/x"}, "postgres://other@db/x", "postgres://other@db/x"},
	}
	for _, c := range cases {
		var got Env
		probe := &cobra.Command{Use: "probe", Short: "records its Env",
			RunE: RunE(func(_ context.Context, env Env, _ []string) int { got = env; return ExitOK })}
		root := configureRoot(&cobra.Command{Use: "lockctl"}, "", probe)
		code := Execute(context.Background(), root, Streams{Stdout: io.Discard, Stderr: io.Discard,
			Getenv: func(k string) string {
				if k == "DATABASE_URL" {
					return url
				}
				return ""
			},
		}, c.args)
		if code != ExitOK || got.DSN != c.wantDSN || got.ExplicitDSN != c.wantExplicit {
			t.Errorf("%v: exit %d, DSN %q, ExplicitDSN %q; want 0, %q, %q",
				c.args, code, got.DSN, got.ExplicitDSN, c.wantDSN, c.wantExplicit)
		}
	}
}
