package locker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// MaxKeyBytes and MaxOwnerBytes bound keys and owner ids; schema.sql's CHECK
// constraints enforce the same bounds.
const (
	MaxKeyBytes   = 255
	MaxOwnerBytes = 255
)

// MaxJSONBytes bounds the JSON a caller stores: a Locker's metadata
// (Config.Metadata, on every lease and session it opens) and the detail of
// a stale write's report. The schema refuses more (ErrInvalidValue: at most
// 8 KiB as PostgreSQL stores it, which differs a little from the text);
// New and ReportStaleWrite refuse JSON text longer than this, with
// ErrTooLarge, before anything is sent.
const MaxJSONBytes = 8192

// MaxReasonBytes bounds an operator's reason (EndDelay, EndSession), which
// an event's detail keeps beside what the event says itself.
const MaxReasonBytes = MaxJSONBytes / 2

// ValidateReason accepts a reason of at most MaxReasonBytes.
func ValidateReason(reason string) error {
	if len(reason) > MaxReasonBytes {
		return fmt.Errorf("%w: reason is %d bytes, more than %d", ErrTooLarge, len(reason), MaxReasonBytes)
	}
	return nil
}

// validJSON accepts what of (metadata, detail) is JSON of at most
// MaxJSONBytes.
func validJSON(of string, b []byte) error {
	if len(b) > MaxJSONBytes {
		return fmt.Errorf("%w: %s is %d bytes of JSON, more than %d", ErrTooLarge, of, len(b), MaxJSONBytes)
	}
	return nil
}

// ValidateKey accepts a non-empty, valid UTF-8 key of at most MaxKeyBytes
// bytes without NUL (PostgreSQL text cannot hold NUL). Other control
// characters are allowed: keys are data, and the console shows them escaped.
func ValidateKey(key string) error {
	return validateText(ErrInvalidKey, "key", key, MaxKeyBytes)
}

// ValidateOwner applies the key rules to an owner id, which may also not be
// a reserved word: "*" is the owner of a shared or semaphore group's own
// lease (LockInfo.Owner of such a key), and no caller's lease may pass for
// it. The database refuses it too (distributed_lock_reserved).
func ValidateOwner(owner string) error {
	if owner == lockdb.GroupOwner {
		return fmt.Errorf("%w: an owner id may not be a reserved word (%q)", ErrInvalidOwner, owner)
	}
	return validateText(ErrInvalidOwner, "owner", owner, MaxOwnerBytes)
}

func validateText(sentinel error, what, s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", sentinel, what)
	case len(s) > max:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", sentinel, what, len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", sentinel, what)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %s contains a NUL byte", sentinel, what)
	}
	return nil
}

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
	if len(id) > MaxOwnerBytes {
		id = id[len(id)-MaxOwnerBytes:]
	}
	return id
}

// DefaultActor is "user@host", the name recorded on events an operator
// causes.
func DefaultActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	actor := name + "@" + host
	if len(actor) > MaxOwnerBytes {
		actor = actor[:MaxOwnerBytes]
	}
	return actor
}
