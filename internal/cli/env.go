package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lockctl/lockctl/internal/contexts"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Env is what a command runs with: where to write, and the global flags
// already resolved.
type Env struct {
	// Prog prefixes messages: "lockctl acquire".
	Prog string
	// Stdin is the input `run` hands to its command (nil: none).
	Stdin io.Reader
	// Stdout receives results; Stderr receives errors and held/not-held
	// explanations in text mode.
	Stdout, Stderr io.Writer
	// DSN is --dsn, else --context's, else $DATABASE_URL, else the default
	// context's (resolveTarget); "" leaves the connection to libpq's PG*
	// variables.
	DSN string
	// ExplicitDSN is the database the command line named, with --dsn or
	// --context, "" when none did (the default context does not): for
	// commands that write to a database only when the user named it (demo,
	// bench).
	ExplicitDSN string
	// NotifyDSN is --notify-dsn: where waiting commands LISTEN; "" means
	// the connection DSN makes.
	NotifyDSN string
	// Actor is --actor, recorded on the events of operator actions (a
	// context's actor when --actor is not given).
	Actor string
	// Context is the context that named the database (--context, or the
	// contexts file's default); Name "" when none did.
	Context contexts.Context

	getenv func(string) string // the environment the command runs in
	// actorFlag is --actor (or its default) and actorGiven whether it was
	// given: another context's actor is worked out from them.
	actorFlag  string
	actorGiven bool
	helpHint   string   // how to get help on this command
	secrets    []string // passwords to scrub from every message
}

// Usagef reports a usage error ("<prog>: message" and a hint to --help) and
// returns ExitUsage.
func (e Env) Usagef(format string, args ...any) int {
	e.printLine(e.Prog + ": " + fmt.Sprintf(format, args...))
	if e.helpHint != "" {
		e.printLine(e.helpHint)
	}
	return ExitUsage
}

// Fail reports err and returns its exit code: ExitHeld or ExitNotHeld for
// those outcomes, ExitUsage for invalid arguments, ExitError for the rest.
// A database error is shown by what it means first (e.g. "lock tables
// missing: run `lockctl migrate`"), then the driver's detail.
func (e Env) Fail(err error) int {
	code := exitCode(err)
	if code == ExitUsage {
		return e.Usagef("%s", textsafe.Escape(err.Error()))
	}
	var connErr *ConnectError
	if errors.As(err, &connErr) {
		e.printLine(e.Prog + ": " + textsafe.Escape(connErr.Summary()))
		if connErr.Hint != "" {
			e.printLine("  hint: " + textsafe.Escape(connErr.Hint))
		}
		for _, line := range connErr.Details() {
			e.printLine("  detail: " + textsafe.Escape(line))
		}
		return code
	}
	meaning, cause := store.Meaning(err)
	if meaning == nil {
		e.printLine(e.Prog + ": " + textsafe.Escape(err.Error()))
		return code
	}
	e.printLine(e.Prog + ": " + meaning.Error())
	detail := err.Error()
	if cause != nil {
		detail = cause.Error()
	}
	if detail == meaning.Error() {
		return code
	}
	for _, line := range strings.Split(detail, "\n") {
		e.printLine("  " + textsafe.Escape(strings.TrimLeft(line, "\t")))
	}
	return code
}

// printLine writes one line to Stderr with every known password scrubbed.
func (e Env) printLine(s string) {
	fmt.Fprintln(e.Stderr, scrub(s, e.secrets))
}

// Errorf prints "<prog>: message" to Stderr (passwords scrubbed) and
// returns ExitError.
func (e Env) Errorf(format string, args ...any) int {
	e.printLine(e.Prog + ": " + fmt.Sprintf(format, args...))
	return ExitError
}

func exitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, locker.ErrHeld):
		return ExitHeld
	case errors.Is(err, locker.ErrNotHeld):
		return ExitNotHeld
	case errors.Is(err, locker.ErrInvalid), errors.As(err, new(*usageError)):
		return ExitUsage
	}
	return ExitError
}

// usageError marks an error as the fault of the caller's arguments or
// configuration (exit 2), e.g. an unparsable connection string.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

// usagef makes a usageError.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}
func (e *usageError) Unwrap() error { return e.err }

// scrub replaces every occurrence of each secret in s with xxxxx.
func scrub(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, redacted)
		}
	}
	return s
}
