package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
)

// ErrMixedSetRefused: the keys scenario's set, whose keys ask for
// different modes, was refused by the locker or the server before anything
// was measured (a build without mixed-mode sets).
var ErrMixedSetRefused = errors.New("bench: a mixed-mode set was refused")

// keyMode is one entry of KeysOptions.Modes: "exclusive", "shared" or
// "semaphore:N" (N permits), as a Key without its name.
func keyMode(s string) (locker.Key, error) {
	name, n, isSemaphore := strings.Cut(s, ":")
	switch {
	case !isSemaphore && (name == locker.ModeExclusive || name == locker.ModeShared):
		return locker.Key{Mode: name}, nil
	case isSemaphore && name == locker.ModeSemaphore:
		permits, err := strconv.Atoi(n)
		if err != nil || permits < 1 || permits > locker.MaxPermits {
			return locker.Key{}, optionErrorf("mode %q: permits must be between 1 and %d", s, locker.MaxPermits)
		}
		return locker.Key{Mode: name, Permits: permits}, nil
	}
	return locker.Key{}, optionErrorf("mode %q: want %s, %s or %s:N", s, locker.ModeExclusive, locker.ModeShared, locker.ModeSemaphore)
}

// setKeys are worker's n keys: the solo key with a suffix each, asking for
// modes in turn.
func setKeys(key string, n int, modes []locker.Key) []locker.Key {
	keys := make([]locker.Key, n)
	for i := range keys {
		keys[i] = modes[i%len(modes)]
		keys[i].Name = key + "/" + strconv.Itoa(i)
	}
	return keys
}

// mixed reports whether keys ask for more than exclusive leases.
func mixed(keys []locker.Key) bool {
	for _, k := range keys {
		if k.Mode != locker.ModeExclusive {
			return true
		}
	}
	return false
}

// setModes names the modes of keys in order, as the report shows them:
// "shared, exclusive, semaphore:3, …".
func setModes(keys []locker.Key) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Mode
		if k.Mode == locker.ModeSemaphore {
			names[i] += ":" + strconv.Itoa(k.Permits)
		}
	}
	return strings.Join(names, ", ")
}

// tryMixedSet takes a mixed-mode set once and gives it back, before
// anything is measured, so a build that cannot take one says so at once,
// and why, rather than as errors in every cycle of a series.
func tryMixedSet(ctx context.Context, lk *locker.Locker, pool *pgxpool.Pool, keys []locker.Key) error {
	if !mixed(keys) {
		return nil
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: keys, Owner: "bench-probe"})
	if err == nil {
		_, err = lk.Release(ctx, pool, leases...)
	}
	if err != nil {
		return fmt.Errorf("%w (%s): %w", ErrMixedSetRefused, setModes(keys), err)
	}
	return nil
}
