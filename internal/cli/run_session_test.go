package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
)

// heartbeatCallsSQL counts the statements run sent, by the protocol
// function each calls, as pg_stat_statements recorded them.
const heartbeatCallsSQL = `
SELECT coalesce(sum(calls) FILTER (WHERE query LIKE '%FROM distributed_lock_session_heartbeat(%'), 0)::int,
       coalesce(sum(calls) FILTER (WHERE query LIKE '%FROM distributed_lock_renew%'), 0)::int
FROM pg_stat_statements`

// lockctl run of a hundred keys keeps them with one heartbeat per interval
// (a third of --ttl), not a renewal per key, as pg_stat_statements counts
// the statements the server ran.
func TestRunOfManyKeysCostsOneHeartbeatPerInterval(t *testing.T) {
	t.Parallel()
	srv := testdb.ServerWith(t, map[string]string{"shared_preload_libraries": "pg_stat_statements"})
	d := db{t: t, dsn: srv.DSN("postgres")}
	d.expect(0, "migrate")
	conn, err := pgx.Connect(context.Background(), d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `CREATE EXTENSION pg_stat_statements`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `SELECT pg_stat_statements_reset()`); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--owner", "batch", "--ttl", "1500ms"}
	for i := range 100 {
		args = append(args, fmt.Sprintf("item:%03d", i))
	}
	// Held for 3 s: six intervals of 500 ms.
	d.expect(0, append(args, "--", "sleep", "3")...)
	var heartbeats, renewals int
	if err := conn.QueryRow(context.Background(), heartbeatCallsSQL).Scan(&heartbeats, &renewals); err != nil {
		t.Fatal(err)
	}
	if heartbeats < 3 || heartbeats > 7 || renewals != 0 {
		t.Errorf("run of 100 keys for 6 intervals: %d heartbeats, %d renewals; want about 6 heartbeats and no renewal", heartbeats, renewals)
	}
}
