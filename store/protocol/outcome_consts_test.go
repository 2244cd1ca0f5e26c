package protocol_test

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// The Go side spells each outcome once (internal/lockdb); these hold it to
// the SQL. A function's outcomes are checked against docs/protocol.md, whose
// outcomes the function tests here reach (TestProtocolDocMatchesFunctions);
// event kinds and modes against the domains the schema declares (a grant's
// kind is one of acquire's outcomes).
func TestGoOutcomesAreWhatTheFunctionsReport(t *testing.T) {
	t.Parallel()
	reports := map[string][]string{
		"distributed_lock_acquire": {lockdb.OutcomeAcquired, lockdb.OutcomeStolen, lockdb.OutcomeRenewed,
			lockdb.OutcomeHeld, lockdb.OutcomeQueued, lockdb.OutcomeFree, lockdb.OutcomeExpired, lockdb.OutcomeBusy,
			lockdb.OutcomeDelayed},
		"distributed_lock_renew":             {lockdb.OutcomeRenewed, lockdb.OutcomeNotHeld},
		"distributed_lock_release":           {lockdb.OutcomeReleased, lockdb.OutcomeNotHeld},
		"distributed_lock_waiter_poll":       {lockdb.OutcomeAcquired, lockdb.OutcomeStolen, lockdb.OutcomeQueued, lockdb.OutcomeGone},
		"distributed_lock_waiter_leave":      {lockdb.LeftQueue, lockdb.PassedOn, lockdb.LeftNone},
		"distributed_lock_waiter_claim":      {lockdb.OutcomeAcquired, lockdb.OutcomeStolen, lockdb.OutcomeNotHanded},
		"distributed_lock_force_expire":      {lockdb.OutcomeForceExpired, lockdb.OutcomeNotHeld},
		"distributed_lock_force_release":     {lockdb.OutcomeForceReleased, lockdb.OutcomeNotHeld},
		"distributed_lock_end_delay":         {lockdb.OutcomeDelayEnded, lockdb.OutcomeNotDelayed},
		"distributed_lock_revoke":            {lockdb.OutcomeRevoked, lockdb.OutcomeNotHeld},
		"distributed_lock_session_heartbeat": {lockdb.OutcomeRenewed, lockdb.OutcomeExpired, lockdb.OutcomeGone},
		"distributed_lock_session_bind": {lockdb.OutcomeBound, lockdb.OutcomeNotHeld, lockdb.OutcomeExpired,
			lockdb.OutcomeGone},
		"distributed_lock_close_session": {lockdb.OutcomeClosed, lockdb.OutcomeGone},
		"distributed_lock_end_session":   {lockdb.OutcomeEnded, lockdb.OutcomeGone},
		"distributed_lock_acquire_shared": {lockdb.OutcomeAcquired, lockdb.OutcomeStolen, lockdb.OutcomeRenewed,
			lockdb.OutcomeHeld, lockdb.OutcomeQueued, lockdb.OutcomeDelayed, lockdb.OutcomeConflict, lockdb.OutcomeBusy},
		"distributed_lock_downgrade": {lockdb.OutcomeDowngraded, lockdb.OutcomeNotHeld},
		"distributed_lock_upgrade": {lockdb.OutcomeAcquired, lockdb.OutcomeHeld, lockdb.OutcomeQueued,
			lockdb.OutcomeDeadlock, lockdb.OutcomeNotHeld},
	}
	for fn, outcomes := range reports {
		documented := documentedOutcomes(t, fn)
		for _, o := range outcomes {
			if !slices.Contains(documented, o) {
				t.Errorf("%s: Go's outcome %q is not among its documented outcomes %q", fn, o, documented)
			}
		}
	}

	domains := map[string][]string{
		"distributed_lock_event_kind": {lockdb.EventAcquired, lockdb.EventStolen, lockdb.EventReleased,
			lockdb.EventForceExpired, lockdb.EventForceReleased, lockdb.EventStaleWriteRejected,
			lockdb.EventDelayEnded, lockdb.EventDeadlockRefused, lockdb.EventSessionEnded, lockdb.EventPermitsChanged,
			lockdb.EventGaveUp, lockdb.EventRevoked, lockdb.EventDowngraded, lockdb.EventUpgraded},
		"distributed_lock_mode": {lockdb.ModeExclusive, lockdb.ModeShared, lockdb.ModeSemaphore},
	}
	word := regexp.MustCompile(`'([a-z_]+)'`)
	for domain, want := range domains {
		var check string
		err := sharedPool(t).QueryRow(context.Background(), `
SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_type d ON d.oid = c.contypid
WHERE d.typname = $1 AND d.typnamespace = current_schema()::regnamespace`, domain).Scan(&check)
		if err != nil {
			t.Fatalf("%s: %v", domain, err)
		}
		var got []string
		for _, m := range word.FindAllStringSubmatch(check, -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s allows %q; Go's constants are %q", domain, got, want)
		}
	}
}
