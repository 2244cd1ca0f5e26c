package protocol_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The channels the functions NOTIFY for waiter records that name none: a
// key's wake-up (payload: the key) and a hand-off's grant (payload: JSON).
const (
	wakeChannel    = "distributed_lock"
	handOffChannel = "distributed_lock_handoff"
)

// Wake channels the cases' waiter records name, as processes' Notifiers
// would (a wake-up or a hand-off there: JSON naming the key).
const (
	chanA = "distributed_lock_w_test_a"
	chanB = "distributed_lock_w_test_b"
	chanC = "distributed_lock_w_test_c"
)

var listened = []string{wakeChannel, handOffChannel, chanA, chanB, chanC}

// notification is one NOTIFY a call sent about its key.
type notification struct {
	channel string
	payload string
}

// listener LISTENs on the shared channels and the cases' wake channels on
// a connection of its own, as waiting clients do.
type listener struct {
	conn *pgxpool.Conn
}

func listen(t *testing.T, db *pgxpool.Pool) *listener {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, channel := range listened {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
			conn.Release()
			t.Fatalf("listen: %v", err)
		}
	}
	return &listener{conn: conn}
}

// collect returns the notifications about key that transactions committed
// before now sent, in order, and stops listening. It sends a marker
// notification of its own and reads up to it: notifications reach a
// listener in commit order, so everything the call sent arrives before the
// marker, and no wait for "nothing more" is needed.
func (l *listener) collect(t *testing.T, db *pgxpool.Pool, key string) []notification {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() {
		_, _ = l.conn.Exec(context.Background(), "UNLISTEN *")
		l.conn.Release()
	}()
	marker := "end of " + t.Name()
	if _, err := db.Exec(ctx, `SELECT pg_notify($1, $2)`, wakeChannel, marker); err != nil {
		t.Fatalf("notify the marker: %v", err)
	}
	var got []notification
	for {
		n, err := l.conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("wait for notifications about %q: %v", key, err)
		}
		if n.Channel == wakeChannel && n.Payload == marker {
			return got
		}
		if n.Channel == wakeChannel && n.Payload == key || n.Channel != wakeChannel && handOffKey(n.Payload) == key {
			got = append(got, notification{channel: n.Channel, payload: n.Payload})
		}
	}
}

// handOff is the payload of a hand-off NOTIFY.
type handOff struct {
	Schema     string `json:"schema"`
	Key        string `json:"key"`
	Waiter     int64  `json:"waiter"`
	Owner      string `json:"owner"`
	Token      int64  `json:"token"`
	Kind       string `json:"kind"`
	AcquiredUS int64  `json:"acquired_us"`
	ExpiresUS  int64  `json:"expires_us"`
	TTLUS      int64  `json:"ttl_us"`
}

func handOffKey(payload string) string {
	var h handOff
	if json.Unmarshal([]byte(payload), &h) != nil {
		return ""
	}
	return h.Key
}
