package cli

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// An interrupted follower says that the campaign goes on and how to
// follow or stop it (with the connection flags given), with the shell's
// exit code for the signal; other ends pass unchanged.
func TestFollowInterrupted(t *testing.T) {
	flags := pflag.NewFlagSet("status", pflag.ContinueOnError)
	var o connectOptions
	o.addFlags(flags)
	require.NoError(t, flags.Parse([]string{"--address", "temporal.example.org:7233", "--namespace", "ml"}))

	for sig, want := range map[os.Signal]struct {
		name string
		code int
	}{os.Interrupt: {"SIGINT", 130}, syscall.SIGTERM: {"SIGTERM", 143}} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&signalled{sig})
		err := followInterrupted(ctx, ctx.Err(), "mnist", flags)
		require.Equal(t, want.code, ExitCode(err))
		require.Equal(t, "interrupted ("+want.name+"): stopped following campaign mnist, which goes on running on the server\n"+
			"  follow it: gleaner status mnist --watch --address temporal.example.org:7233 --namespace ml\n"+
			"  stop it:   gleaner stop mnist --address temporal.example.org:7233 --namespace ml", err.Error())
	}

	// Not a signal: unchanged.
	failed := errors.New("campaign mnist failed")
	require.Same(t, failed, followInterrupted(context.Background(), failed, "mnist", flags))
	require.NoError(t, followInterrupted(context.Background(), nil, "mnist", flags))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, followInterrupted(ctx, ctx.Err(), "mnist", flags), context.Canceled)
	require.Equal(t, ExitFailure, ExitCode(followInterrupted(ctx, ctx.Err(), "mnist", flags)))
}

// signalContext ends its context with the signal as the cause.
func TestSignalContext(t *testing.T) {
	ctx, stop := signalContext(context.Background())
	defer stop()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	<-ctx.Done()
	s := interruptedBy(ctx)
	require.NotNil(t, s)
	require.Equal(t, os.Interrupt, s.sig)
	require.Equal(t, 130, s.exitCode())

	ctx, stop = signalContext(context.Background())
	stop()
	require.Nil(t, interruptedBy(ctx), "stopped, not signalled")
}
