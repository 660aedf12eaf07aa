package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// `status --watch` across a server crash: it says it is reconnecting
// while the server is down, says when it is back, and follows the
// campaign to its end.
func TestStatusWatchAcrossAServerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Temporal dev server")
	}
	clearConnectionEnv(t)
	srv := testenv.DevServer(t, devserver.Options{DBFile: t.TempDir() + "/temporal.db"})
	const tq = "cli-reconnect"
	testenv.Worker(t, srv, tq, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// Trials of minutes: the campaign runs until it is stopped.
	c := client.New(srv.Client(), client.Options{TaskQueue: tq, Namespace: srv.Namespace()})
	_, err := c.Submit(ctx, testenv.MLPSpec(t, "cli-reconnect", 2, 2, 6000, 50))
	require.NoError(t, err)

	var out, errOut syncBuffer
	defer func() {
		if t.Failed() {
			t.Logf("status --watch stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
	}()
	exit := make(chan int, 1)
	go func() {
		err := Run([]string{"status", "cli-reconnect", "--watch", "--interval", "200ms", "--ui", "-",
			"--address", srv.Address(), "--task-queue", tq}, &out, &errOut)
		exit <- ExitCode(err)
	}()
	waitFor(ctx, t, "a progress line", func() bool {
		return strings.Contains(out.String(), " running") && strings.Contains(out.String(), " trials  ")
	})

	srv.Kill()
	down := "reconnecting to " + srv.Address() + " (server unavailable since "
	waitFor(ctx, t, "the reconnecting line", func() bool { return strings.Contains(errOut.String(), down) })
	require.NoError(t, srv.Restart(ctx))
	waitFor(ctx, t, "the reconnected line", func() bool {
		return strings.Contains(errOut.String(), "reconnected to "+srv.Address()+" after ")
	})

	_, stopErr, code := cliRun(t, "stop", "cli-reconnect", "--address", srv.Address(), "--task-queue", tq)
	require.Equal(t, ExitOK, code, stopErr)
	select {
	case code := <-exit:
		require.Equal(t, ExitOK, code, "stderr:\n%s", errOut.String())
	case <-ctx.Done():
		t.Fatalf("status --watch did not end after the stop; stderr:\n%s", errOut.String())
	}
	require.Contains(t, out.String(), "state     stopped")
	t.Logf("stderr of status --watch:\n%s", errOut.String())
}
