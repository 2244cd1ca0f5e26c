package protocol_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// tok names a token a case expects, since the values are drawn at run time.
type tok int

const (
	noToken      tok = iota // NULL
	keptToken               // the prepared row's token
	keptPrevious            // the prepared row's previous token
	drawnToken              // drawn by the call: above every token on the key before it
	noneYet                 // 0: a row made to be granted (distributed_lock_make_row)
)

// slotToken is the token of the state's n-th holder (from 1); see
// slotTok.
const slotToken tok = 100

// slotTok names the token of the state's n-th holder (holder_state_test.go).
func slotTok(n int) tok { return slotToken + tok(n-1) }

func (w tok) String() string {
	if w >= slotToken {
		return fmt.Sprintf("holder %d's token", w-slotToken+1)
	}
	return [...]string{"NULL", "the prepared token", "the prepared previous token", "a drawn token", "none yet (0)"}[w]
}

// span bounds a time relative to the database's clock at the read after the
// call: lo ≤ t − now ≤ hi.
type span struct{ lo, hi time.Duration }

// slack is how long a call and the read after it may take, on a loaded
// machine: generous, since no bound of a case is tighter than a minute.
const slack = 20 * time.Second

// about is a lease of d set during the call: it has d left, less the time
// since.
func about(d time.Duration) span { return span{d - slack, d} }

// justNow is a time set during the call, d=0 from now.
var justNow = span{-slack, 0}

// ranOut is a time in the past.
var ranOut = span{-1000 * time.Hour, 0}

func (s span) holds(d time.Duration) bool { return s.lo <= d && d <= s.hi }

// released says what released_at must be after the call.
type released int

const (
	notReleased   released = iota // NULL
	stillReleased                 // as prepared
	releasedNow                   // set by the call
)

// rowWant is the key's row after the call. With untouched the row must be
// exactly as prepared (or still absent); with absent there must be none;
// otherwise every field is checked.
type rowWant struct {
	untouched, absent bool

	owner      string
	token      tok
	expires    span
	keptExpiry bool // expires_at as prepared, instead of expires
	ttl        time.Duration
	released   released
	kind       string
	prevOwner  string // "": NULL
	prevToken  tok
	renewals   int32
	handedTo   string // the waiter (by owner) the row was handed to; "": NULL
	metadata   string // JSON; "": {}
	wakes      *span  // wake_until − now; nil: not checked
	lockDelay  time.Duration
	delayUntil *span  // delay_until − now; nil: NULL
	keptUntil  *span  // kept_until − now; nil: NULL
	mode       string // lock_mode; "": exclusive
	permits    int    // 0: NULL
	// groupEnd: expires_at is a running group's end (distributed_lock_group_end),
	// instead of expires.
	groupEnd bool
}

var untouched = rowWant{untouched: true}

// grantTo is a new grant of the key to owner for ttl (drawn token, from the
// prepared row, or from none when there was no row).
func grantTo(owner, kind string, ttl time.Duration, from tok) rowWant {
	w := rowWant{owner: owner, token: drawnToken, expires: about(ttl), ttl: ttl, kind: kind, prevToken: from}
	return w
}

// refusalWant is what a refusal says of the queue and the lock-delay.
type refusalWant struct {
	length   int   // queue_length
	position int   // queue_position, where the function has it; 0: NULL
	delay    *span // delay_until − now; nil: NULL
}

// queueOf is a refusal with a queue of length and no delay.
func queueOf(length int) *refusalWant { return &refusalWant{length: length} }

// placeIn is a queued caller's place among length waiters.
func placeIn(position, length int) *refusalWant {
	return &refusalWant{length: length, position: position}
}

func (c checker) refusal(result map[string]any, w *refusalWant) {
	c.t.Helper()
	length, position, delay := result["queue_length"], result["queue_position"], result["delay_until"]
	if w == nil {
		if length != nil || position != nil || delay != nil {
			c.t.Errorf("queue_length %v, queue_position %v, delay_until %v; want NULL", length, position, delay)
		}
		return
	}
	if !sameJSON(length, w.length) {
		c.t.Errorf("queue_length %v; want %d", length, w.length)
	}
	if _, has := result["queue_position"]; has {
		var want any
		if w.position != 0 {
			want = w.position
		}
		if !sameJSON(position, want) {
			c.t.Errorf("queue_position %v; want %v", position, want)
		}
	}
	at, isTime := delay.(time.Time)
	switch {
	case w.delay == nil && delay != nil:
		c.t.Errorf("delay_until %v; want NULL", delay)
	case w.delay != nil && (!isTime || c.before == nil || !w.delay.holds(at.Sub(c.readAt))):
		c.t.Errorf("delay_until %v (read at %v); want within [%v, %v] of the read", delay, c.readAt, w.delay.lo, w.delay.hi)
	}
}

// eventWant is one event the call must write. detail lists its keys; a
// value of anyValue matches any, a waiterRef the id of that waiter.
type eventWant struct {
	kind      string
	owner     string // "": NULL
	token     tok
	actor     string
	prevOwner string
	prevToken tok
	detail    map[string]any
}

type waiterRef string

// aRecordOfTheCall is rowWant.handedTo for a row handed to a waiter record
// the call itself queued (an upgrade granted at once): any waiter id.
const aRecordOfTheCall = "(a record of the call's)"

var anyValue = struct{ any }{}

// msWithin matches a number of milliseconds from lo to hi: a wait the
// function measured on the database's clock (waited_ms).
type msWithin struct{ lo, hi time.Duration }

func (m msWithin) holds(v any) bool {
	ms, ok := v.(float64)
	return ok && ms >= float64(m.lo.Milliseconds()) && ms <= float64(m.hi.Milliseconds())
}

// waiterWant is one waiter row left on the key, in queue order; seenFor,
// when set, is how long it must stay live (refreshed by the call); channel
// is the wake channel it names ("": NULL).
type waiterWant struct {
	owner   string
	seenFor time.Duration
	channel string
	// mode, when set, is the lease it waits for (12_shared_queue.sql), of
	// permits (0: NULL); "": not checked.
	mode    string
	permits int
}

func waiters(owners ...string) []waiterWant {
	var ws []waiterWant
	for _, o := range owners {
		ws = append(ws, waiterWant{owner: o})
	}
	return ws
}

// notifyWant is one NOTIFY about the key: a wake-up, or a hand-off to a
// waiter (by owner) with the lease's kind, TTL and first window, on the
// shared channel for its kind or on a waiter's wake channel.
type notifyWant struct {
	handOffTo string // "": a wake-up
	kind      string
	ttl       time.Duration
	window    time.Duration
	channel   string // "": distributed_lock (a wake-up), distributed_lock_handoff (a hand-off)
	// mode: a hand-off of a holder's slot (12_shared_queue.sql), whose
	// payload names the waiter's mode and whose lease is the slot's.
	mode string
}

var wakeUp = notifyWant{}

// on is n sent on a waiter's wake channel.
func (n notifyWant) on(channel string) notifyWant {
	n.channel = channel
	return n
}

// checker resolves a case's symbolic wants against what was prepared.
type checker struct {
	t      *testing.T
	p      prepared
	before *lockState
	// sessionsBefore are the case's sessions as prepared.
	sessionsBefore []*sessionState
	// slotsBefore are the key's holder slots as prepared.
	slotsBefore []slotState
	tokenBelow  int64 // the sequence's last token before the call
	tokenAbove  int64 // and after
	readAt      time.Time
}

func (c checker) token(name string, got *int64, want tok) {
	c.t.Helper()
	switch want {
	case noToken:
		if got != nil {
			c.t.Errorf("%s = %d; want NULL", name, *got)
		}
		return
	case drawnToken:
		if got == nil || *got <= c.tokenBelow || *got > c.tokenAbove {
			c.t.Errorf("%s = %s; want %s (in (%d, %d])", name, show(got), want, c.tokenBelow, c.tokenAbove)
		}
		return
	case noneYet:
		if got == nil || *got != 0 {
			c.t.Errorf("%s = %s; want %s", name, show(got), want)
		}
		return
	}
	expect := c.p.token
	switch {
	case want == keptPrevious:
		expect = c.p.previousToken
	case want >= slotToken && int(want-slotToken) < len(c.p.slots):
		expect = c.p.slots[want-slotToken]
	case want >= slotToken:
		c.t.Fatalf("%s: want %s, but the state has %d holders", name, want, len(c.p.slots))
	}
	if got == nil || *got != expect {
		c.t.Errorf("%s = %s; want %s (%d)", name, show(got), want, expect)
	}
}

func (c checker) row(got *lockState, w rowWant) {
	c.t.Helper()
	switch {
	case w.untouched:
		if (got == nil) != (c.before == nil) || got != nil && !reflect.DeepEqual(got.stored(), c.before.stored()) {
			c.t.Errorf("row changed:\n got %v\nwant %v", deref(got), deref(c.before))
		}
		return
	case w.absent:
		if got != nil {
			c.t.Errorf("row %v; want none", *got)
		}
		return
	case got == nil:
		c.t.Fatalf("no row; want one owned by %s", w.owner)
	}
	if got.Owner != w.owner {
		c.t.Errorf("row owner %q; want %q", got.Owner, w.owner)
	}
	c.token("row fence_token", &got.Token, w.token)
	if got.Mode != orString(w.mode, "exclusive") || show(got.Permits) != show(nonZero(w.permits)) {
		c.t.Errorf("row lock_mode %s, permits %s; want %s, %s", got.Mode, show(got.Permits),
			orString(w.mode, "exclusive"), show(nonZero(w.permits)))
	}
	switch {
	case w.groupEnd || got.GroupEnd:
		if got.GroupEnd != w.groupEnd {
			c.t.Errorf("row expires at %v; a running group's end: %v", got.ExpiresAt, w.groupEnd)
		}
	case w.keptExpiry:
		if c.before == nil || !got.ExpiresAt.Equal(c.before.ExpiresAt) {
			c.t.Errorf("row expires_at %v; want it as prepared", got.ExpiresAt)
		}
	case !w.expires.holds(got.ExpiresIn):
		c.t.Errorf("row expires in %v; want within [%v, %v]", got.ExpiresIn, w.expires.lo, w.expires.hi)
	}
	if w.ttl != 0 && got.TTL != w.ttl {
		c.t.Errorf("row ttl %v; want %v", got.TTL, w.ttl)
	}
	switch w.released {
	case notReleased:
		if got.ReleasedAt != nil {
			c.t.Errorf("row released at %v; want not released", *got.ReleasedAt)
		}
	case stillReleased:
		if got.ReleasedAt == nil || c.before == nil || !got.ReleasedAt.Equal(*c.before.ReleasedAt) {
			c.t.Errorf("row released_at %v; want it as prepared", show(got.ReleasedAt))
		}
	case releasedNow:
		if got.ReleasedAgo == nil || !justNow.holds(-*got.ReleasedAgo) {
			c.t.Errorf("row released %v ago; want released by the call", show(got.ReleasedAgo))
		}
	}
	if got.GrantKind != w.kind {
		c.t.Errorf("row grant_kind %q; want %q", got.GrantKind, w.kind)
	}
	if show(got.PreviousOwner) != orString(w.prevOwner, "NULL") {
		c.t.Errorf("row previous_owner %s; want %s", show(got.PreviousOwner), orString(w.prevOwner, "NULL"))
	}
	c.token("row previous_token", got.PreviousToken, w.prevToken)
	if got.RenewCount != w.renewals {
		c.t.Errorf("row renew_count %d; want %d", got.RenewCount, w.renewals)
	}
	var handed *int64
	if w.handedTo != "" {
		id := c.p.waiter(w.handedTo)
		handed = &id
	}
	if w.handedTo == aRecordOfTheCall && got.HandedTo != nil && *got.HandedTo > 0 {
		handed = got.HandedTo // the caller's own record, queued and handed in the call
	}
	if show(got.HandedTo) != show(handed) {
		c.t.Errorf("row handed_to %s; want %s (%s)", show(got.HandedTo), show(handed), orString(w.handedTo, "nobody"))
	}
	if !sameJSON(got.Metadata, orString(w.metadata, "{}")) {
		c.t.Errorf("row metadata %v; want %s", got.Metadata, orString(w.metadata, "{}"))
	}
	if got.LockDelay != w.lockDelay {
		c.t.Errorf("row lock_delay %v; want %v", got.LockDelay, w.lockDelay)
	}
	if (got.DelayIn == nil) != (w.delayUntil == nil) || w.delayUntil != nil && !w.delayUntil.holds(*got.DelayIn) {
		c.t.Errorf("row delay_until in %s; want %v", show(got.DelayIn), deref(w.delayUntil))
	}
	if (got.KeptIn == nil) != (w.keptUntil == nil) || w.keptUntil != nil && !w.keptUntil.holds(*got.KeptIn) {
		c.t.Errorf("row kept_until in %s; want %v", show(got.KeptIn), deref(w.keptUntil))
	}
	if w.wakes != nil && (got.WakeIn == nil || !w.wakes.holds(*got.WakeIn)) {
		c.t.Errorf("row wake_until in %s; want within [%v, %v]", show(got.WakeIn), w.wakes.lo, w.wakes.hi)
	}
}

func (c checker) events(got []eventState, want []eventWant) {
	c.t.Helper()
	if len(got) != len(want) {
		c.t.Errorf("%d events %+v; want %d %+v", len(got), got, len(want), want)
		return
	}
	for i, w := range want {
		g := got[i]
		name := fmt.Sprintf("event %d (%s)", i, g.Kind)
		if g.Kind != w.kind || show(g.Owner) != orString(w.owner, "NULL") || g.Actor != w.actor ||
			show(g.PreviousOwner) != orString(w.prevOwner, "NULL") {
			c.t.Errorf("%s: kind %s, owner %s, actor %s, previous owner %s; want %s, %s, %s, %s", name,
				g.Kind, show(g.Owner), g.Actor, show(g.PreviousOwner),
				w.kind, orString(w.owner, "NULL"), w.actor, orString(w.prevOwner, "NULL"))
		}
		c.token(name+" fence_token", g.Token, w.token)
		c.token(name+" previous_token", g.PreviousToken, w.prevToken)
		c.detail(name, g.Detail, w.detail)
	}
}

func (c checker) detail(name string, got map[string]any, want map[string]any) {
	c.t.Helper()
	if len(got) != len(want) {
		c.t.Errorf("%s detail %v; want the keys of %v", name, got, want)
		return
	}
	for k, v := range want {
		g, ok := got[k]
		if ref, isRef := v.(waiterRef); isRef {
			v = c.p.waiter(string(ref))
		}
		if m, isRange := v.(msWithin); isRange {
			if !ok || !m.holds(g) {
				c.t.Errorf("%s detail %s = %v; want %v to %v", name, k, g, m.lo, m.hi)
			}
			continue
		}
		if !ok || v != anyValue && !sameJSON(g, v) {
			c.t.Errorf("%s detail %s = %v; want %v", name, k, g, v)
		}
	}
}

func (c checker) waiters(got []waiterState, want []waiterWant) {
	c.t.Helper()
	var owners, wantOwners []string
	for _, g := range got {
		owners = append(owners, g.Owner)
	}
	for _, w := range want {
		wantOwners = append(wantOwners, w.owner)
	}
	if !slices.Equal(owners, wantOwners) {
		c.t.Errorf("waiters %v; want %v", owners, wantOwners)
		return
	}
	for i, w := range want {
		if id, prepared := c.p.waiterIDs[w.owner]; prepared && got[i].ID != id {
			c.t.Errorf("waiter %s has id %d; want the prepared %d", w.owner, got[i].ID, id)
		}
		if w.seenFor != 0 && !about(w.seenFor).holds(got[i].SeenIn) {
			c.t.Errorf("waiter %s seen for %v more; want about %v", w.owner, got[i].SeenIn, w.seenFor)
		}
		if show(got[i].Channel) != orString(w.channel, "NULL") {
			c.t.Errorf("waiter %s names wake channel %s; want %s", w.owner, show(got[i].Channel), orString(w.channel, "NULL"))
		}
		if w.mode != "" && (show(got[i].Mode) != w.mode || show(got[i].Permits) != show(nonZero(w.permits))) {
			c.t.Errorf("waiter %s waits for %s of %s permits; want %s of %d", w.owner, show(got[i].Mode),
				show(got[i].Permits), w.mode, w.permits)
		}
	}
}

func (c checker) notifications(got []notification, want []notifyWant, key, schema string, row *lockState, slots []slotState) {
	c.t.Helper()
	if len(got) != len(want) {
		c.t.Errorf("notifications %v; want %d: %+v", got, len(want), want)
		return
	}
	for i, w := range want {
		g := got[i]
		switch {
		case w.handOffTo == "" && w.channel == "":
			if g.channel != wakeChannel || g.payload != key {
				c.t.Errorf("notification %d: %s %q; want %s %q", i, g.channel, g.payload, wakeChannel, key)
			}
			continue
		case w.handOffTo == "":
			// On a wake channel a wake-up names its schema and key, and no
			// waiter: JSON, as a hand-off there is.
			want := fmt.Sprintf(`{"schema": %q, "key": %q}`, schema, key)
			if g.channel != w.channel || !sameJSON(jsonOf(g.payload), want) {
				c.t.Errorf("notification %d: %s %q; want %s %s", i, g.channel, g.payload, w.channel, want)
			}
			continue
		}
		if wantChannel := orString(w.channel, handOffChannel); g.channel != wantChannel {
			c.t.Errorf("notification %d on %s; want %s", i, g.channel, wantChannel)
			continue
		}
		c.handOff(g.payload, w, key, schema, row, slots)
	}
}

// jsonOf decodes a JSON payload; nil when it is not JSON.
func jsonOf(payload string) any {
	var v any
	if json.Unmarshal([]byte(payload), &v) != nil {
		return nil
	}
	return v
}

// handOffFields is the documented payload (docs/protocol.md, "The fair
// queue"), plus the schema that names the namespace.
var handOffFields = []string{"acquired_us", "expires_us", "key", "kind", "owner", "schema", "token", "ttl_us", "waiter"}

func (c checker) handOff(payload string, w notifyWant, key, schema string, row *lockState, slots []slotState) {
	c.t.Helper()
	var fields map[string]any
	var h handOff
	if err := json.Unmarshal([]byte(payload), &fields); err != nil {
		c.t.Fatalf("hand-off payload %q: %v", payload, err)
	}
	_ = json.Unmarshal([]byte(payload), &h)
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	wantFields := handOffFields
	if w.mode != "" {
		// A slot's hand-off names the waiter's mode, and its lease is the
		// slot's, not the group's row.
		wantFields = slices.Sorted(slices.Values(append(slices.Clone(handOffFields), "mode")))
		if fields["mode"] != w.mode {
			c.t.Errorf("hand-off mode %v; want %s", fields["mode"], w.mode)
		}
		row = nil
		for _, s := range slots {
			if s.Token == h.Token {
				row = &lockState{Token: s.Token, AcquiredAt: s.AcquiredAt, ExpiresAt: s.ExpiresAt, RenewCount: s.RenewCount}
			}
		}
		if row == nil {
			c.t.Errorf("hand-off token %d names no slot of %v", h.Token, slots)
		}
	}
	if !slices.Equal(names, wantFields) {
		c.t.Errorf("hand-off payload fields %v; want %v", names, wantFields)
	}
	c.token("hand-off token", &h.Token, drawnToken)
	wantWaiter := c.p.waiter(w.handOffTo)
	if wantWaiter == 0 && h.Waiter > 0 {
		wantWaiter = h.Waiter // a record the call itself made: its id unknown here
	}
	if h.Schema != schema || h.Key != key || h.Waiter != wantWaiter || h.Owner != w.handOffTo || h.Kind != w.kind {
		c.t.Errorf("hand-off %+v; want schema %s, key %s, waiter %d, owner %s, kind %s",
			h, schema, key, c.p.waiter(w.handOffTo), w.handOffTo, w.kind)
	}
	if h.TTLUS != w.ttl.Microseconds() || h.ExpiresUS-h.AcquiredUS != w.window.Microseconds() {
		c.t.Errorf("hand-off ttl_us %d, window %d µs; want %d, %d", h.TTLUS, h.ExpiresUS-h.AcquiredUS,
			w.ttl.Microseconds(), w.window.Microseconds())
	}
	// The NOTIFY announces the claim window's end; a lease claimed since
	// (its waiter's own enqueue claims it at once) runs on past it.
	expiresAsAnnounced := row != nil && (row.ExpiresAt.UnixMicro() == h.ExpiresUS ||
		row.RenewCount > 0 && row.ExpiresAt.UnixMicro() > h.ExpiresUS)
	if row != nil && (row.Token != h.Token || !expiresAsAnnounced || row.AcquiredAt.UnixMicro() != h.AcquiredUS) {
		c.t.Errorf("hand-off token %d, acquired %d, expires %d µs; the row has %d, %d, %d", h.Token,
			h.AcquiredUS, h.ExpiresUS, row.Token, row.AcquiredAt.UnixMicro(), row.ExpiresAt.UnixMicro())
	}
}

func sameJSON(got any, want any) bool {
	if s, ok := want.(string); ok {
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			want = v
		}
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	return string(a) == string(b)
}

func show[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// asDuration reads an interval column of a result read with pgx.RowToMap.
func asDuration(v any) (time.Duration, bool) {
	iv, ok := v.(pgtype.Interval)
	if !ok || !iv.Valid || iv.Months != 0 {
		return 0, false
	}
	return time.Duration(iv.Microseconds)*time.Microsecond + time.Duration(iv.Days)*24*time.Hour, true
}

// nonZero is n, or NULL for 0 (a column such as permits).
func nonZero(n int) *int32 {
	if n == 0 {
		return nil
	}
	v := int32(n)
	return &v
}
