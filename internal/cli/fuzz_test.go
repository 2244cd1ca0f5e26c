package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
)

// parsed is what a fuzzed command line parsed into.
type parsed struct {
	cmd     string
	acquire AcquireOptions
	lease   LeaseOptions
	expire  ExpireOptions
	prune   PruneOptions
}

// fuzzRoot mirrors main.go's command tree, with the same flag helpers
// and the commands' own argument checks, but actions that record what was
// parsed instead of connecting.
func fuzzRoot(out *parsed, stderr *bytes.Buffer) *cobra.Command {
	checked := func(name string, check func() error) int {
		out.cmd = name
		if err := check(); err != nil {
			return Env{Prog: "lockctl " + name, Stderr: stderr, helpHint: "Run 'lockctl " + name + " --help' for usage."}.Fail(err)
		}
		return ExitOK
	}
	command := func(use string, action Action, flags func(fs *pflag.FlagSet)) *cobra.Command {
		cmd := &cobra.Command{Use: use, RunE: RunE(action)}
		flags(cmd.Flags())
		return cmd
	}
	var ls LsOptions
	return configureRoot(&cobra.Command{Use: "lockctl"}, "",
		command("ls", func(context.Context, Env, []string) int { out.cmd = "ls"; return ExitOK }, func(fs *pflag.FlagSet) {
			fs.BoolVar(&ls.JSON, "json", false, "")
		}),
		command("acquire KEY", func(_ context.Context, _ Env, args []string) int {
			out.acquire.Key = args[0]
			return checked("acquire", out.acquire.check)
		}, func(fs *pflag.FlagSet) {
			o := &out.acquire
			OwnerVar(fs, &o.Owner, "owner", "")
			TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "")
			DurationVar(fs, &o.Wait, "wait", 0, "")
			fs.BoolVar(&o.JSON, "json", false, "")
		}),
		command("renew KEY", func(_ context.Context, _ Env, args []string) int {
			out.lease.Key = args[0]
			return checked("renew", out.lease.check)
		}, func(fs *pflag.FlagSet) {
			o := &out.lease
			OwnerVar(fs, &o.Owner, "owner", "")
			TokenVar(fs, &o.Token, "token", "")
			TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "")
			fs.BoolVar(&o.JSON, "json", false, "")
			Required(fs, "owner", "token")
		}),
		command("expire KEY", func(_ context.Context, _ Env, args []string) int {
			out.expire.Key = args[0]
			return checked("expire", out.expire.check)
		}, func(fs *pflag.FlagSet) {
			TokenVar(fs, &out.expire.Token, "token", "")
			fs.BoolVar(&out.expire.JSON, "json", false, "")
		}),
		command("prune", func(context.Context, Env, []string) int { return checked("prune", out.prune.check) }, func(fs *pflag.FlagSet) {
			DurationVar(fs, &out.prune.Older, "older", 24*time.Hour, "")
			DurationVar(fs, &out.prune.EventsOlder, "events-older", 0, "")
		}),
	)
}

// FuzzParseArgs feeds arbitrary command lines (arguments separated by NUL,
// which no real argument can contain) through Execute. It must never
// panic; it either accepts the line with values the commands can use, or
// rejects it as a usage error (exit 2) with a message and a hint to --help.
func FuzzParseArgs(f *testing.F) {
	for _, seed := range []string{
		"acquire\x00k", "acquire\x00k\x00--ttl\x00abc", "acquire\x00k\x00--ttl=-1s", "acquire\x00--wait\x005s\x00k",
		"renew\x00k\x00--owner\x00a\x00--token\x00x", "renew\x00k\x00--token=9223372036854775808", "release",
		"expire\x00k\x00--token\x000", "prune\x00--older\x000", "ls\x00--json=maybe", "frob", "--help", "acquire\x00-h",
		"acquire\x00--\x00-k", "acquire\x00k\x00--owner=", "acquire\x00k\xff", "acquire\x00k\x00-x",
		"ls\x00--actor=", "help\x00renew", "", "-", "--",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var args []string
		if line != "" {
			args = strings.Split(line, "\x00")
		}
		var out parsed
		var stdout, stderr bytes.Buffer
		code := Execute(context.Background(), fuzzRoot(&out, &stderr), Streams{Stdout: &stdout, Stderr: &stderr}, args)
		switch code {
		case ExitOK:
			checkAccepted(t, args, out)
		case ExitUsage:
			msg := stderr.String()
			if !strings.HasPrefix(msg, "lockctl") || (!strings.Contains(msg, "--help' for usage") && !strings.Contains(msg, "Usage:")) {
				t.Fatalf("args %q: exit 2 with stderr %q; want a message and a hint to --help", args, msg)
			}
		default:
			t.Fatalf("args %q: exit %d (stderr %q); want 0 or 2", args, code, stderr.String())
		}
	})
}

// checkAccepted asserts that accepted values are ones the commands can use.
func checkAccepted(t *testing.T, args []string, out parsed) {
	t.Helper()
	keyOK := func(key string) {
		if lockdb.ValidateKey(key) != nil {
			t.Fatalf("args %q: accepted invalid key %q", args, key)
		}
	}
	switch out.cmd {
	case "acquire":
		o := out.acquire
		keyOK(o.Key)
		if o.TTL < time.Millisecond || o.TTL > locker.MaxTTL || o.Wait < 0 {
			t.Fatalf("args %q: accepted ttl %v wait %v", args, o.TTL, o.Wait)
		}
		if o.Owner != "" && lockdb.ValidateOwner(o.Owner) != nil {
			t.Fatalf("args %q: accepted owner %q", args, o.Owner)
		}
	case "renew":
		o := out.lease
		keyOK(o.Key)
		if o.Token <= 0 || lockdb.ValidateOwner(o.Owner) != nil || o.TTL < time.Millisecond {
			t.Fatalf("args %q: accepted %+v", args, o)
		}
	case "expire":
		keyOK(out.expire.Key)
		if out.expire.Token < 0 {
			t.Fatalf("args %q: accepted token %d", args, out.expire.Token)
		}
	case "prune":
		if out.prune.Older <= 0 || out.prune.EventsOlder < 0 {
			t.Fatalf("args %q: accepted %+v", args, out.prune)
		}
	}
}

// FuzzParseValues: the value parsers never panic, and what they accept is
// in range.
func FuzzParseValues(f *testing.F) {
	for _, s := range []string{"30s", "0", "-1s", "abc", "1ms", "999999h", "1.5h", " 5s ", "9223372036854775807", "0x10", "+7", "007", "-0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDuration(s); err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
		if d, err := ParseTTL(s); err == nil && (d < time.Millisecond || d > locker.MaxTTL) {
			t.Fatalf("ParseTTL(%q) = %v", s, d)
		}
		if n, err := ParseToken(s); err == nil && n <= 0 {
			t.Fatalf("ParseToken(%q) = %d", s, n)
		}
	})
}
