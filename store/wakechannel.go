package store

import (
	"crypto/rand"
	"encoding/hex"
)

// WakeChannelPrefix starts every channel NewWakeChannel makes.
const WakeChannelPrefix = "distributed_lock_w_"

// NewWakeChannel returns a channel name for one process's waiters
// (QueueParams.WakeChannel): hand-offs to them and wake-ups of their keys
// reach that process alone. 64 random bits keep two processes apart; the
// name is one the distributed_lock_channel domain accepts (a lower-case
// identifier of at most 63 bytes).
func NewWakeChannel() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return WakeChannelPrefix + hex.EncodeToString(b)
}

// channelArg passes a wake channel, "" as SQL NULL (the shared channels).
func channelArg(name string) any {
	if name == "" {
		return nil
	}
	return name
}
