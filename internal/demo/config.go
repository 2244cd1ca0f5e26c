package demo

import (
	"fmt"
	"math"
	"time"
)

// Config sets the size, pace and randomness of the simulation. The zero
// value is valid: every field has a documented default.
type Config struct {
	// Workers is how many contenders queue on the hot keys (besides the
	// fixed cast: leaders, ledger writers, the stuck report, the transfer
	// and its tellers, the backups, the inventory syncers, the report pool,
	// the pricing readers and their writer). Defaults to 8; at most
	// MaxWorkers.
	Workers int
	// HotKeys is how many keys the contenders fight over. Defaults to 4; at
	// most MaxHotKeys.
	HotKeys int
	// Speed scales every pause, hold and TTL of the story (2 = twice as
	// fast). The stuck report's one-hour TTL is not scaled: only an operator
	// frees it. Defaults to 1; between MinSpeed and MaxSpeed.
	Speed float64
	// Seed drives every random choice (which key, how long, who crashes,
	// who freezes). The same seed gives the same choices; the interleaving
	// of goroutines and the database still varies. 0 picks one from the
	// clock (Sim.Seed reports it, and the status line shows it).
	Seed uint64
	// CrashChance is the probability that a contender crashes while it
	// holds a key instead of releasing it. Defaults to 0.08; negative means
	// never.
	CrashChance float64
}

// Bounds of Config, checked by Start and Run.
const (
	MaxWorkers = 200
	MaxHotKeys = 100
	MinSpeed   = 0.1
	MaxSpeed   = 100
)

// StuckTTL is the lease the hung report generator takes: far longer than
// anyone watches, so only an operator frees it.
const StuckTTL = time.Hour

func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 8
	}
	if c.HotKeys == 0 {
		c.HotKeys = 4
	}
	if c.Speed == 0 {
		c.Speed = 1
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano()%1_000_000) + 1
	}
	if c.CrashChance == 0 {
		c.CrashChance = 0.08
	}
	return c
}

// Validate reports the first field out of bounds, in the words of the
// command-line flag that sets it.
func (c Config) Validate() error {
	switch {
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return fmt.Errorf("--workers %d: must be between 1 and %d", c.Workers, MaxWorkers)
	case c.HotKeys < 0 || c.HotKeys > MaxHotKeys:
		return fmt.Errorf("--keys %d: must be between 1 and %d", c.HotKeys, MaxHotKeys)
	case math.IsNaN(c.Speed) || c.Speed != 0 && (c.Speed < MinSpeed || c.Speed > MaxSpeed):
		return fmt.Errorf("--speed %g: must be between %g and %g", c.Speed, MinSpeed, float64(MaxSpeed))
	case c.CrashChance > 1:
		return fmt.Errorf("crash chance %g: must be at most 1", c.CrashChance)
	}
	return nil
}

// scale turns a duration of the story at speed 1 into real time.
func (c Config) scale(d time.Duration) time.Duration {
	return max(time.Millisecond, time.Duration(float64(d)/c.Speed))
}
