package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

// signalContext is signal.NotifyContext for SIGINT and SIGTERM that
// remembers which one came: context.Cause of the returned context is then
// a *signalled. The commands that follow a campaign use it, so that an
// interrupt ends them with what it means (followInterrupted).
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			cancel(&signalled{s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// signalled is the cause of a context a signal ended.
type signalled struct{ sig os.Signal }

func (s *signalled) Error() string { return s.sig.String() + " signal received" }

// name is the signal as a shell user knows it: SIGINT (Ctrl-C), SIGTERM.
func (s *signalled) name() string {
	switch s.sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.sig.String()
}

// exitCode is the shell's code for a process a signal ended: 128 + its
// number (130 for SIGINT, 143 for SIGTERM).
func (s *signalled) exitCode() int {
	if n, ok := s.sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128 + int(syscall.SIGINT)
}

// interruptedBy is the signal that ended ctx, or nil.
func interruptedBy(ctx context.Context) *signalled {
	var s *signalled
	if errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// followInterrupted turns err, the end of a command that followed campaign
// name, into what a person needs when a signal ended ctx (Ctrl-C): only
// this command stopped; the campaign goes on, and here is how to follow
// or stop it. It exits 128 + the signal's number (130 for Ctrl-C), as a
// shell reports a process a signal ended. flags are the command line's,
// for the connection flags the hints repeat. Other errors pass unchanged.
func followInterrupted(ctx context.Context, err error, name string, flags *pflag.FlagSet) error {
	s := interruptedBy(ctx)
	if s == nil || err == nil {
		return err
	}
	conn := hintFlags(flags, true)
	return withCode(s.exitCode(), fmt.Errorf("interrupted (%s): stopped following campaign %s, which goes on running on the server\n"+
		"  follow it: %s\n"+
		"  stop it:   %s",
		s.name(), name, commandHint(conn, "status", name, "--watch"), commandHint(conn, "stop", name)))
}

// interrupted gives err the exit code of the signal that ended ctx, if
// one did, for a command that had not yet started anything (a submit
// interrupted before its campaign started).
func interrupted(ctx context.Context, err error) error {
	s := interruptedBy(ctx)
	if s == nil || err == nil {
		return err
	}
	return withCode(s.exitCode(), fmt.Errorf("interrupted (%s): %w", s.name(), err))
}
