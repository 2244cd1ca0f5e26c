package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/lockctl/lockctl/internal/cli"
)

// TestCommandRefusesOptions: options the benchmark refuses are a usage
// error that names the problem without the package's "bench: ", before any
// server starts.
func TestCommandRefusesOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--workers", "100"}, "lockctl bench: workers must be between 1 and 64, got 100\n"},
		{[]string{"bench", "--scenario", "pooler", "--workers", "65"}, "lockctl bench: workers must be between 1 and 64, got 65\n"},
		{[]string{"bench", "--scenario", "queue", "--processes", "65"}, "lockctl bench: processes must be between 1 and 64, got 65\n"},
		{[]string{"bench", "--scenario", "semaphore", "--permits", "20"}, "lockctl bench: permits must be between 1 and the number of workers (16), got 20\n"},
		{[]string{"bench", "--scenario", "semaphore", "--waiters", "8,16"}, "lockctl bench: --scenario semaphore measures one number of workers"},
		{[]string{"bench", "--scenario", "keys", "--modes", "shared,read"}, "lockctl bench: mode \"read\": want exclusive, shared or semaphore:N\n"},
	} {
		var stdout, stderr bytes.Buffer
		root := cli.NewRoot(cli.BuildVersion(), Command())
		code := cli.Execute(context.Background(), root, cli.Streams{Stdout: &stdout, Stderr: &stderr}, tc.args)
		if code != cli.ExitUsage || !bytes.HasPrefix(stderr.Bytes(), []byte(tc.want)) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and stderr starting %q",
				tc.args, code, stdout.String(), stderr.String(), cli.ExitUsage, tc.want)
		}
	}
}
