package locker

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// NewOwnerID returns "host:pid:random", unique per call: a process that
// restarts gets a new id, so it cannot mistake its predecessor's lease for its
// own.
func NewOwnerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
	if len(id) > lockdb.MaxOwnerBytes {
		id = id[len(id)-lockdb.MaxOwnerBytes:]
	}
	return id
}
