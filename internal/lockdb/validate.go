package lockdb

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes and MaxOwnerBytes bound keys and owner ids; schema.sql's CHECK
// constraints enforce the same bounds.
const (
	MaxKeyBytes   = 255
	MaxOwnerBytes = 255
)

// MaxJSONBytes bounds the JSON a caller stores: a Locker's metadata (on
// every lease and session it opens) and the detail of a stale write's
// report. The schema refuses more (ErrInvalidValue: at most 8 KiB as
// PostgreSQL stores it, which differs a little from the text); the library
// refuses JSON text longer than this, with ErrTooLarge, before anything is
// sent.
const MaxJSONBytes = 8192

// ErrInvalid: a request the library refuses before anything is sent (a
// bad key, owner, TTL, lock-delay, key set or permits). Its errors say
// which, as Invalid makes them.
var ErrInvalid = errors.New("invalid request")

// ErrTooLarge: metadata, a stale write's detail or an operator's reason is
// larger than the schema keeps; nothing was sent.
var ErrTooLarge = errors.New("too large")

// Invalid is the ErrInvalid of what ("lock key": "invalid lock key").
func Invalid(what string) error { return invalid("invalid " + what) }

type invalid string

func (e invalid) Error() string { return string(e) }

// Is makes errors.Is(err, ErrInvalid) true.
func (e invalid) Is(target error) bool { return target == ErrInvalid }

var (
	errInvalidKey   = Invalid("lock key")
	errInvalidOwner = Invalid("owner id")
)

// ValidateKey accepts a non-empty, valid UTF-8 key of at most MaxKeyBytes
// bytes without NUL (PostgreSQL text cannot hold NUL). Other control
// characters are allowed: keys are data, and the console shows them escaped.
func ValidateKey(key string) error {
	return validateText(errInvalidKey, "key", key, MaxKeyBytes)
}

// ValidateOwner applies the key rules to an owner id, which may also not be
// a reserved word: "*" is the owner of a shared or semaphore group's own
// lease (LockInfo.Owner of such a key), and no caller's lease may pass for
// it. The database refuses it too (distributed_lock_reserved).
func ValidateOwner(owner string) error {
	if owner == GroupOwner {
		return fmt.Errorf("%w: an owner id may not be a reserved word (%q)", errInvalidOwner, owner)
	}
	return validateText(errInvalidOwner, "owner", owner, MaxOwnerBytes)
}

func validateText(kind error, what, s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", kind, what)
	case len(s) > max:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", kind, what, len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", kind, what)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %s contains a NUL byte", kind, what)
	}
	return nil
}

// ValidJSON accepts what of (metadata, detail) is JSON of at most
// MaxJSONBytes.
func ValidJSON(of string, b []byte) error {
	if len(b) > MaxJSONBytes {
		return fmt.Errorf("%w: %s is %d bytes of JSON, more than %d", ErrTooLarge, of, len(b), MaxJSONBytes)
	}
	return nil
}
