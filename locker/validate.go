package locker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
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

// ValidateOwner applies the key rules to an owner id.
func ValidateOwner(owner string) error {
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
