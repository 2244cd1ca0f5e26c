package protocol_test

import (
	"strings"
	"testing"
)

// staleWriteArgs are distributed_lock_report_stale_write's arguments but
// the key and token.
type staleWriteArgs struct {
	owner  string
	token  tok
	actor  string
	detail string
}

func (a staleWriteArgs) call(key string, p prepared) (string, []any) {
	return `SELECT distributed_lock_report_stale_write(key => $1, owner => $2, token => $3,
		event_actor => $4, event_detail => $5::jsonb) AS result`,
		[]any{key, a.owner, tokenArg(p, a.token), null(a.actor), null(a.detail)}
}

// A report only logs: the row and the queue are left as they are, whatever
// the key's state.
func TestReportStaleWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_report_stale_write")
	old := staleWriteArgs{owner: me, token: keptPrevious, detail: `{"resource": "ledger"}`}
	logged := func(token tok, actor string, detail map[string]any) want {
		return want{row: untouched, events: []eventWant{{kind: "stale_write_rejected", owner: me, token: token, actor: actor, detail: detail}},
			check: eventIDReturned}
	}
	f.run(t, []fnCase{
		{name: "held by another", state: heldBy(other), call: old.call, want: logged(keptPrevious, me, map[string]any{"resource": "ledger"})},
		{name: "held by the caller, an older token, by an actor", state: heldBy(me),
			call: staleWriteArgs{owner: me, token: keptPrevious, actor: "svc"}.call, want: logged(keptPrevious, "svc", map[string]any{})},
		{name: "queued", state: heldBy(other).queued(w1), call: old.call, want: func() want {
			w := logged(keptPrevious, me, map[string]any{"resource": "ledger"})
			w.waiters = waiters(w1)
			return w
		}()},
		{name: "actor of 256 bytes", state: heldBy(other), call: staleWriteArgs{owner: me, token: keptPrevious, actor: strings.Repeat("a", 256)}.call,
			want: want{err: "23514"}},
		{name: "detail over 8 KiB", state: heldBy(other), call: staleWriteArgs{owner: me, token: keptPrevious, detail: overSizedJSON}.call,
			want: want{err: "23514"}},
		{name: "owner of 256 bytes, by an actor", state: heldBy(other),
			call: staleWriteArgs{owner: strings.Repeat("o", 256), token: keptPrevious, actor: "svc"}.call, want: want{err: "23514"}},
	})
}

// eventIDReturned: the function returns the id of the event it wrote.
func eventIDReturned(t *testing.T, result map[string]any, _ prepared, after observed) {
	t.Helper()
	if id, ok := result["result"].(int64); !ok || len(after.events) != 1 || id != after.events[0].ID {
		t.Errorf("result %v; want the id of the event written (%+v)", result["result"], after.events)
	}
}
