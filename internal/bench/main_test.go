package bench

import (
	"context"
	"os"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
)

// queueWorkerEnv makes this test binary a queue worker process instead of
// running tests: TestQueueScenario's RunQueue spawns it, as `lockctl bench
// --queue-worker` would be spawned by the command.
const queueWorkerEnv = "LOCKCTL_TEST_QUEUE_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(queueWorkerEnv) == "1" {
		if err := RunQueueWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testdb.Main(m))
}
