package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/locker"
)

// Shared leases and semaphore permits (acquire and run --shared, --permits
// N): a key taken this way has holders, each with a lease of its own,
// instead of one owner (docs/design.md, "Shared leases and semaphores").

// holdModeVars defines --shared and --permits on fs.
func holdModeVars(fs *pflag.FlagSet, o *AcquireOptions) {
	fs.BoolVar(&o.Shared, "shared", false, "take KEY shared: any number of owners hold it at once, while nobody holds it alone")
	PermitsVar(fs, &o.Permits, "permits", "take one of `N` permits of KEY, a semaphore: at most N owners hold it at once (1 to 1000)")
}

// holder says whether opts take a holder's lease (shared, or a permit)
// rather than KEY alone.
func (o AcquireOptions) holder() bool { return o.Shared || o.Permits > 0 }

// holdModeFlag names the flag that made opts a holder's.
func (o AcquireOptions) holdModeFlag() string {
	if o.Shared {
		return "--shared"
	}
	return "--permits"
}

// checkHoldMode refuses what a holder's lease cannot be taken with: both
// modes at once, several keys (a set takes keys alone), a lock-delay (a
// holder's lease has none).
func (o AcquireOptions) checkHoldMode() error {
	modes, err := o.setModes()
	switch {
	case err != nil:
		return err
	case len(modes) > 0 && o.holder():
		return usagef("%s takes one KEY; of several, name each key's mode with --key-shared or --key-permits", o.holdModeFlag())
	case len(modes) > 0 && o.LockDelay > 0:
		return usagef("--lock-delay is for keys held alone: a set with shared or permit keys has none")
	case o.Shared && o.Permits > 0:
		return usagef("--shared and --permits cannot be used together: a key is held shared or as a semaphore, not both")
	case !o.holder():
		return nil
	case len(o.Keys) > 1:
		return usagef("%s takes one KEY: of several, name each key's mode with --key-shared or --key-permits", o.holdModeFlag())
	case o.LockDelay > 0:
		return usagef("--lock-delay is for a lease held alone: a %s lease has none", o.holdModeFlag())
	case o.AtLeast > 0:
		return usagef("--at-least is for a lease held alone: a %s lease is not kept", o.holdModeFlag())
	}
	return nil
}

// request is the Request of opts' keys (opts.Keys, or opts.Key), each in
// opts' mode (a set's: its key's, setmodes.go), waiting up to wait.
func (o AcquireOptions) request(wait time.Duration) locker.Request {
	names := o.Keys
	if len(names) == 0 {
		names = []string{o.Key}
	}
	keys := locker.Keys(names...)
	modes, _ := o.setModes() // checked already
	for i := range keys {
		if m, ok := modes[keys[i].Name]; ok {
			keys[i] = m
		}
		switch {
		case o.Shared:
			keys[i].Mode = locker.ModeShared
		case o.Permits > 0:
			keys[i].Mode, keys[i].Permits = locker.ModeSemaphore, o.Permits
		}
	}
	return locker.Request{Keys: keys, Owner: o.Owner, TTL: o.TTL, LockDelay: o.LockDelay, Wait: wait, AtLeast: o.AtLeast}
}
