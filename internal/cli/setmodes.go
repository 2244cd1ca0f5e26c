package cli

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// A set of keys may mix modes (acquire K1 K2 --key-shared K1 --key-permits
// K2=3): each named key is taken shared or as one of N permits, the others
// alone, all or none (docs/cli.md, "Several keys at once").

// setModeVars defines --key-shared and --key-permits on fs.
func setModeVars(fs *pflag.FlagSet, o *AcquireOptions) {
	fs.StringArrayVar(&o.SharedKeys, "key-shared", nil,
		"of several keys, take `KEY` shared, the others alone unless named too (repeatable)")
	fs.StringArrayVar(&o.PermitKeys, "key-permits", nil,
		"of several keys, take one of N permits of KEY, a semaphore (`KEY=N`, repeatable)")
}

// setModes is the mode opts' --key-shared and --key-permits give each key
// they name, or a usage error: a key not in the set, named twice, or N not
// 1 to locker.MaxPermits.
func (o AcquireOptions) setModes() (map[string]locker.Key, error) {
	modes := map[string]locker.Key{}
	name := func(k string, m locker.Key) error {
		if !slices.Contains(o.Keys, k) {
			return usagef("%s is not one of the keys to take: name it as a KEY too", textsafe.Escape(k))
		}
		if _, twice := modes[k]; twice {
			return usagef("the mode of %s is given twice", textsafe.Escape(k))
		}
		modes[k] = m
		return nil
	}
	for _, k := range o.SharedKeys {
		if err := name(k, locker.Key{Name: k, Mode: locker.ModeShared}); err != nil {
			return nil, err
		}
	}
	for _, kn := range o.PermitKeys {
		i := strings.LastIndex(kn, "=")
		n, err := strconv.Atoi(kn[i+1:])
		if i < 0 || err != nil || n < 1 || n > locker.MaxPermits {
			return nil, usagef("invalid --key-permits %s: want KEY=N, N between 1 and %d", textsafe.Escape(kn), locker.MaxPermits)
		}
		if err := name(kn[:i], locker.Key{Name: kn[:i], Mode: locker.ModeSemaphore, Permits: n}); err != nil {
			return nil, err
		}
	}
	return modes, nil
}
