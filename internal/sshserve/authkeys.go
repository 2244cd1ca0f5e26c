package sshserve

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	gossh "golang.org/x/crypto/ssh"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// Role is what an authorized key may do in the console.
type Role string

const (
	// RoleViewer watches: the console's actions are disabled and the
	// session's action path refuses them.
	RoleViewer Role = "viewer"
	// RoleOperator watches and acts (acquire, renew, force-expire,
	// force-release), as far as the server's database role allows.
	RoleOperator Role = "operator"
)

// CanAct says whether the role may change locks.
func (r Role) CanAct() bool { return r == RoleOperator }

// Identity is who an authorized key is: the actor recorded on the events
// of its actions, and its role.
type Identity struct {
	Actor       string
	Role        Role
	Fingerprint string // SHA256:… of the key, for the log
}

// entry is one line of the authorized_keys file.
type entry struct {
	key gossh.PublicKey
	Identity
}

// errKeyLine is what every malformed line's error wraps.
var errKeyLine = errors.New("bad authorized_keys line")

// parseAuthorizedKeys reads an authorized_keys file in which every key
// carries role="viewer"|"operator" and actor="NAME" options. It returns the
// good entries and one error per bad line (each naming its line number);
// a key listed twice keeps its first line, as sshd uses the first match.
func parseAuthorizedKeys(data []byte) ([]entry, []error) {
	var entries []entry
	var errs []error
	seen := map[string]int{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		e, err := parseKeyLine(trimmed)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w %d: %v", errKeyLine, n, err))
			continue
		}
		wire := string(e.key.Marshal())
		if first, dup := seen[wire]; dup {
			errs = append(errs, fmt.Errorf("%w %d: key %s already listed on line %d", errKeyLine, n, e.Fingerprint, first))
			continue
		}
		seen[wire] = n
		entries = append(entries, e)
	}
	return entries, errs
}

func parseKeyLine(line []byte) (entry, error) {
	key, _, options, rest, err := gossh.ParseAuthorizedKey(line)
	if err != nil {
		return entry{}, err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return entry{}, errors.New("more than one key on the line")
	}
	if _, isCert := key.(*gossh.Certificate); isCert {
		return entry{}, errors.New("certificates are not accepted; list the plain public key")
	}
	e := entry{key: key}
	e.Fingerprint = gossh.FingerprintSHA256(key)
	for _, opt := range options {
		name, value, err := parseOption(opt)
		if err != nil {
			return entry{}, err
		}
		switch name {
		case "role":
			if e.Role != "" {
				return entry{}, errors.New(`role given twice`)
			}
			switch Role(value) {
			case RoleViewer, RoleOperator:
				e.Role = Role(value)
			default:
				return entry{}, fmt.Errorf("unknown role %q (want viewer or operator)", value)
			}
		case "actor":
			if e.Actor != "" {
				return entry{}, errors.New(`actor given twice`)
			}
			if err := validActor(value); err != nil {
				return entry{}, err
			}
			e.Actor = value
		default:
			// sshd's options (from=, command=, no-pty, restrict, …) would
			// look like restrictions here and restrict nothing: refuse them.
			return entry{}, fmt.Errorf("unsupported option %q (only role and actor are understood)", name)
		}
	}
	switch {
	case e.Role == "":
		return entry{}, errors.New(`no role option (role="viewer" or role="operator")`)
	case e.Actor == "":
		return entry{}, errors.New(`no actor option (actor="NAME", recorded on the events of this key's actions)`)
	}
	return e, nil
}

// parseOption splits `name="value"` as sshd writes options: the value in
// double quotes, `\"` for a quote inside it. A bare flag has no value.
func parseOption(opt string) (name, value string, err error) {
	name, quoted, hasValue := strings.Cut(opt, "=")
	name = strings.ToLower(name)
	if !hasValue {
		return name, "", nil
	}
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return "", "", fmt.Errorf("option %s: value must be in double quotes", name)
	}
	return name, strings.ReplaceAll(quoted[1:len(quoted)-1], `\"`, `"`), nil
}

// validActor applies the owner-id bounds (the events' actor column holds
// the same bounded text) and refuses control characters: an actor is a
// person's name and goes into the log as it is.
func validActor(actor string) error {
	switch {
	case actor == "":
		return errors.New("actor is empty")
	case len(actor) > lockdb.MaxOwnerBytes:
		return fmt.Errorf("actor is %d bytes, more than %d", len(actor), lockdb.MaxOwnerBytes)
	case !utf8.ValidString(actor):
		return errors.New("actor is not valid UTF-8")
	case strings.IndexFunc(actor, unicode.IsControl) >= 0:
		return errors.New("actor contains a control character")
	}
	return nil
}
