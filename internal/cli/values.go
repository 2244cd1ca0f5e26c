package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/fencetoken"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/locker"
)

// Flag value types that check their value while flags are parsed, so a bad
// value is a usage error (exit 2) naming the flag, before anything connects.

// ParseDuration reads a Go duration ("30s", "1m30s", "250ms"; "0" is zero)
// that must not be negative.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("not a duration (use e.g. 30s, 1m30s, 250ms)")
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// ParseTTL reads a lease length: a duration between 1ms and locker.MaxTTL.
func ParseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("not a duration (use e.g. 30s, 1m30s, 250ms)")
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	if d < time.Millisecond || d > locker.MaxTTL {
		return 0, fmt.Errorf("must be between 1ms and %s", locker.MaxTTL)
	}
	return d, nil
}

// ParseToken reads a fencing token: the full number or EPOCH·COUNT
// (fencetoken.Parse).
func ParseToken(s string) (int64, error) { return fencetoken.Parse(s) }

// durationValue is a pflag.Value backed by a parse function.
type durationValue struct {
	p     *time.Duration
	parse func(string) (time.Duration, error)
}

func (v durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (v durationValue) Set(s string) error {
	d, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}

func (durationValue) Type() string { return "duration" }

// DurationVar defines a flag holding a non-negative duration.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p: p, parse: ParseDuration}, name, usage)
}

// TTLVar defines a flag holding a lease length (positive, at most a year).
func TTLVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p: p, parse: ParseTTL}, name, usage)
}

// tokenValue is a pflag.Value for a fencing token; 0 means "not given".
type tokenValue struct{ p *int64 }

func (v tokenValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v tokenValue) Set(s string) error {
	n, err := ParseToken(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

func (tokenValue) Type() string { return "token" }

// TokenVar defines a flag holding a fencing token. Its value is 0 until set.
func TokenVar(fs *pflag.FlagSet, p *int64, name, usage string) {
	*p = 0
	fs.Var(tokenValue{p: p}, name, usage)
}

// permitsValue is a pflag.Value for a semaphore's permits, 1 to
// locker.MaxPermits; 0 means "not given".
type permitsValue struct{ p *int }

func (v permitsValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v permitsValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not a number")
	}
	if n < 1 || n > locker.MaxPermits {
		return fmt.Errorf("must be between 1 and %d", locker.MaxPermits)
	}
	*v.p = n
	return nil
}

func (permitsValue) Type() string { return "int" }

// PermitsVar defines a flag holding a semaphore's permits. Its value is 0
// until set.
func PermitsVar(fs *pflag.FlagSet, p *int, name, usage string) {
	*p = 0
	fs.Var(permitsValue{p: p}, name, usage)
}

// requiredAnnotation marks flags that Dispatch insists on.
const requiredAnnotation = "lockctl_required"

// Required marks flags of fs that must be given; Dispatch reports a missing
// one as a usage error, and help shows them without brackets.
func Required(fs *pflag.FlagSet, names ...string) {
	for _, name := range names {
		if err := fs.SetAnnotation(name, requiredAnnotation, []string{"true"}); err != nil {
			panic(fmt.Sprintf("cli.Required: %v", err)) // a typo in the command table
		}
	}
}

func isRequired(f *pflag.Flag) bool {
	_, ok := f.Annotations[requiredAnnotation]
	return ok
}

// checkedValue is a pflag.Value for text that check accepts (an explicit
// empty value is checked too).
type checkedValue struct {
	p     *string
	check func(string) error
}

func (v checkedValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v checkedValue) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

func (checkedValue) Type() string { return "string" }

// OwnerVar defines a flag holding an owner id (lockdb.ValidateOwner); its
// value stays "" until set.
func OwnerVar(fs *pflag.FlagSet, p *string, name, usage string) {
	*p = ""
	fs.Var(checkedValue{p: p, check: lockdb.ValidateOwner}, name, usage)
}

// ReasonVar defines a flag holding an operator's reason: at most
// operator.MaxReasonBytes, which an event's detail keeps.
func ReasonVar(fs *pflag.FlagSet, p *string, name, usage string) {
	fs.Var(checkedValue{p: p, check: operator.ValidateReason}, name, usage)
}

// choicesAnnotation lists the values an enum flag accepts, for help and
// shell completion.
const choicesAnnotation = "lockctl_choices"

// enumValue is a pflag.Value that accepts one of a fixed list; "" (the
// default) means "not given".
type enumValue struct {
	p       *string
	choices []string
}

func (v enumValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v enumValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("must be one of %s", strings.Join(v.choices, ", "))
	}
	*v.p = s
	return nil
}

func (enumValue) Type() string { return "string" }

// EnumVar defines a flag whose value must be one of choices; its value
// stays "" until set. Shell completion offers the choices.
func EnumVar(fs *pflag.FlagSet, p *string, name string, choices []string, usage string) {
	*p = ""
	fs.Var(enumValue{p: p, choices: choices}, name, usage)
	if err := fs.SetAnnotation(name, choicesAnnotation, choices); err != nil {
		panic(fmt.Sprintf("cli.EnumVar: %v", err))
	}
}

// flagChoices is what an enum flag accepts; nil for other flags.
func flagChoices(f *pflag.Flag) []string { return f.Annotations[choicesAnnotation] }

// takesValue says whether f needs a value (every flag but a boolean).
func takesValue(f *pflag.Flag) bool { return f.NoOptDefVal == "" }

// enumListValue is a pflag.Value holding values from a fixed list, given
// comma-separated, the flag repeatable: --state held,expiring --state free.
type enumListValue struct {
	p       *[]string
	choices []string
}

func (v enumListValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v enumListValue) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if !slices.Contains(v.choices, part) {
			return fmt.Errorf("%q is not one of %s", part, strings.Join(v.choices, ", "))
		}
		if !slices.Contains(*v.p, part) {
			*v.p = append(*v.p, part)
		}
	}
	return nil
}

func (enumListValue) Type() string { return "list" }

// EnumListVar defines a repeatable flag taking comma-separated values from
// choices; its value is empty until set. Shell completion offers the choices.
func EnumListVar(fs *pflag.FlagSet, p *[]string, name string, choices []string, usage string) {
	*p = nil
	fs.Var(enumListValue{p: p, choices: choices}, name, usage)
	if err := fs.SetAnnotation(name, choicesAnnotation, choices); err != nil {
		panic(fmt.Sprintf("cli.EnumListVar: %v", err))
	}
}

// AtLeastVar defines --at-least: how long after its grant a lease keeps
// its key through an early release (locker.Request.AtLeast), checked by
// the command (1ms to 365d; 0: none).
func AtLeastVar(fs *pflag.FlagSet, p *time.Duration) {
	DurationVar(fs, p, "at-least", 0,
		"a release sooner than this after the grant keeps KEY until then (state kept): a job run on every node runs once per period (0: none; up to 365d)")
}

// LockDelayVar defines --lock-delay: the lock-delay of the lease taken
// (locker.Request.LockDelay), checked by the command (0 to 60s).
func LockDelayVar(fs *pflag.FlagSet, p *time.Duration) {
	DurationVar(fs, p, "lock-delay", 0,
		"after the lease ends without a release (expiry, force-expire, force-release), nobody gets KEY for this long (0 to 60s)")
}
