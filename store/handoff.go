package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// HandOff is the NOTIFY payload of a hand-off (distributed_lock_hand_off in
// schema.sql), a hint: it names the waiter the key was handed to, which then
// claims it through the database (Claim), and the waiter now first in line
// hears it too (it may wake when the new lease's claim window ends). Any
// role may NOTIFY any payload, so nothing here is the grant: Owner, Token,
// Kind and the times are what the sender says. Times are the database's
// clock.
type HandOff struct {
	// Schema is the lock schema (namespace) of the hand-off: NOTIFY
	// channels are per database, waiter ids per schema.
	Schema     string `json:"schema"`
	Key        string `json:"key"`
	WaiterID   int64  `json:"waiter"`
	Owner      string `json:"owner"`
	Token      int64  `json:"token"`
	Kind       string `json:"kind"` // lockdb.OutcomeAcquired, or lockdb.OutcomeStolen for a lapsed lease
	AcquiredUs int64  `json:"acquired_us"`
	ExpiresUs  int64  `json:"expires_us"`
	TTLUs      int64  `json:"ttl_us"`
}

// ParseWake decodes a NOTIFY payload on a wake channel (QueueParams.
// WakeChannel) or HandOffChannel: a hand-off (WaiterID set: the grant to
// that waiter) or, on a wake channel, a wake-up of the key's waiters
// (WaiterID 0, only Schema and Key set).
func ParseWake(payload string) (HandOff, error) {
	var h HandOff
	if err := json.Unmarshal([]byte(payload), &h); err != nil {
		return HandOff{}, fmt.Errorf("store: wake-up payload: %w", err)
	}
	if h.Key == "" || h.WaiterID != 0 && h.Token == 0 {
		return HandOff{}, fmt.Errorf("store: wake-up payload without key, or a hand-off without token")
	}
	return h, nil
}

// AcquiredAt is when the hand-off granted the lease.
func (h HandOff) AcquiredAt() time.Time { return time.UnixMicro(h.AcquiredUs) }

// Row is the lease the hand-off granted; ExpiresAt is the end of its claim
// window, TTL the lease length the waiter asked for.
func (h HandOff) Row() LeaseRow {
	return LeaseRow{Key: h.Key, Owner: h.Owner, Token: h.Token,
		ExpiresAt: time.UnixMicro(h.ExpiresUs), TTL: time.Duration(h.TTLUs) * time.Microsecond}
}
