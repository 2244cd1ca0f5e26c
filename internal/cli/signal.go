package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// SignalError is the cause of a context that NotifyContext cancelled: it
// names the signal, so a command can exit with the code a shell gives a
// process the signal ended (130 for SIGINT, 143 for SIGTERM).
type SignalError struct{ Signal os.Signal }

func (e SignalError) Error() string { return e.Signal.String() + " received" }

// ExitCode is 128 plus the signal's number, the shell convention.
func (e SignalError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return ExitError
}

// NotifyContext is signal.NotifyContext with a cause that says which signal
// arrived (a SignalError). The signals stay caught until stop is called, so
// a second Ctrl-C does not kill the process in the middle of its cleanup.
func NotifyContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(SignalError{Signal: s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// interruptedCode is the exit code of a command whose context ended: 128
// plus the signal when a signal ended it, ExitError otherwise.
func interruptedCode(ctx context.Context) int {
	var sig SignalError
	if errors.As(context.Cause(ctx), &sig) {
		return sig.ExitCode()
	}
	return ExitError
}
