package history

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
)

func grantAt(key string, token int64, at time.Time, kind string) lockview.Event {
	return lockview.Event{Key: key, Token: &token, OccurredAt: at, Kind: kind}
}

// A key kept until a point and granted again before it is a violation;
// granted at or after it, or another key's grant, or the kept lease's own
// earlier grant, is not.
func TestCheckAtLeast(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	kept := []Kept{{Key: "job", Token: 10, KeptUntil: t0.Add(time.Minute)}}
	for _, c := range []struct {
		name   string
		events []lockview.Event
		bad    int
	}{
		{"its own grant", []lockview.Event{grantAt("job", 10, t0, lockdb.EventAcquired)}, 0},
		{"the next grant at the point", []lockview.Event{grantAt("job", 11, t0.Add(time.Minute), lockdb.EventAcquired)}, 0},
		{"another key's grant", []lockview.Event{grantAt("other", 11, t0.Add(time.Second), lockdb.EventAcquired)}, 0},
		{"a release logged", []lockview.Event{grantAt("job", 11, t0.Add(time.Second), lockdb.EventReleased)}, 0},
		{"granted before the point", []lockview.Event{grantAt("job", 11, t0.Add(59*time.Second), lockdb.EventAcquired)}, 1},
		{"stolen before the point", []lockview.Event{grantAt("job", 12, t0.Add(time.Second), lockdb.EventStolen)}, 1},
	} {
		if got := CheckAtLeast(kept, Observed{Events: c.events}); len(got) != c.bad {
			t.Errorf("%s: %q; want %d violations", c.name, got, c.bad)
		}
	}
}

// An observer's terms grow, and each is a grant on the key.
func TestCheckTerms(t *testing.T) {
	obs := Observed{Events: []lockview.Event{
		grantAt("leader", 5, time.Time{}, lockdb.EventAcquired), grantAt("leader", 7, time.Time{}, lockdb.EventAcquired),
		grantAt("other", 9, time.Time{}, lockdb.EventAcquired)}}
	for _, c := range []struct {
		name  string
		terms []int64
		bad   int
	}{
		{"growing", []int64{5, 7}, 0},
		{"back", []int64{7, 5}, 1},
		{"again", []int64{5, 5}, 1},
		{"another key's token", []int64{5, 9}, 1},
	} {
		if got := CheckTerms("o1", "leader", c.terms, obs); len(got) != c.bad {
			t.Errorf("%s: %q; want %d violations", c.name, got, c.bad)
		}
	}
}
