package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

func TestBehindPooler(t *testing.T) {
	t.Parallel()
	p := testdb.Bouncer(t, pgtemp.BouncerOptions{})
	for _, tc := range []struct {
		name, dsn string
		want      bool
	}{{"direct", p.DirectDSN, false}, {"through PgBouncer", p.DSN, true}} {
		conn, err := pgx.Connect(context.Background(), tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		got, err := store.BehindPooler(context.Background(), conn)
		_ = conn.Close(context.Background())
		if err != nil || got != tc.want {
			t.Errorf("%s: BehindPooler = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
