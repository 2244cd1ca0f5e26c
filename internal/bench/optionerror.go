package bench

import "fmt"

// OptionError is an option a benchmark refuses before it connects to
// anything. Its Error says "bench: " and the problem; the command shows the
// problem alone, as a usage message beside the flags that caused it.
type OptionError struct {
	Problem string // what is wrong with the options, as a usage message says it
}

func (e *OptionError) Error() string { return "bench: " + e.Problem }

func optionErrorf(format string, args ...any) error {
	return &OptionError{Problem: fmt.Sprintf(format, args...)}
}
