package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// scriptedWatch is a campaignWatcher that sends its script, then closes,
// or stops when the reader's ctx ends.
type scriptedWatch []client.Progress

func (s scriptedWatch) Watch(ctx context.Context, _ string, _ time.Duration) <-chan client.Progress {
	out := make(chan client.Progress)
	go func() {
		defer close(out)
		for _, p := range s {
			select {
			case out <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// stepClock is a clock that moves by step each time it is read.
func stepClock(start time.Time, step time.Duration) func() time.Time {
	now := start.Add(-step)
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

func statusAt(state workflows.CampaignPhase, ended int) client.Progress {
	s := sampleStatus()
	s.State, s.Completed, s.Stopped, s.Failed = state, ended, 0, 0
	return client.Progress{Status: s}
}

// unavailable is what a query gets while the server is down, as the
// client wraps it.
func unavailable() client.Progress {
	err := serviceerror.NewUnavailable("connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:7233: connect: connection refused\"")
	return client.Progress{Err: fmt.Errorf("querying campaign %q: %w", "c", err)}
}

// watchOptions watches localhost:7233 with a clock that moves 20s a
// read; the server takes connections when up.
func watchOptions(jsonOut, up bool) *statusOptions {
	o := &statusOptions{watch: true, json: jsonOut, interval: time.Millisecond,
		now: stepClock(time.Date(2025, 3, 1, 12, 3, 4, 0, time.Local), 20*time.Second),
		reach: func(context.Context, string) error {
			if up {
				return nil
			}
			return syscall.ECONNREFUSED
		}}
	o.conn.resolved.HostPort = "localhost:7233"
	return o
}

// timedOut is what a query gets while the server is down as the SDK
// reports it (it retries until its own deadline), and also while no
// worker answers.
func timedOut() client.Progress {
	return client.Progress{Err: fmt.Errorf("querying campaign %q: %w", "c", context.DeadlineExceeded)}
}

// While the server is down, --watch says on stderr that it is
// reconnecting, since when and how many times it tried, and says when it
// is back; the watch goes on to the end of the campaign.
func TestStatusWatchSaysWhileItReconnects(t *testing.T) {
	script := scriptedWatch{
		statusAt(workflows.CampaignRunning, 3),
		unavailable(), unavailable(), unavailable(),
		statusAt(workflows.CampaignRunning, 6),
		statusAt(workflows.CampaignCompleted, 10),
	}
	for _, jsonOut := range []bool{false, true} {
		var out, errOut bytes.Buffer
		err := watchOptions(jsonOut, true).follow(t.Context(), script, "c", "", &out, &errOut)
		require.NoError(t, err, "json %v", jsonOut)
		want := "reconnecting to localhost:7233 (server unavailable since 12:03:04, retry 1)…\n" +
			"reconnecting to localhost:7233 (server unavailable since 12:03:04, retry 2)…\n" +
			"reconnecting to localhost:7233 (server unavailable since 12:03:04, retry 3)…\n" +
			"reconnected to localhost:7233 after 20s\n"
		require.Equal(t, want, errOut.String(), "json %v", jsonOut)
		if jsonOut {
			require.Equal(t, 3, strings.Count(out.String(), "\n"), "one JSON object per status:\n%s", out.String())
		} else {
			require.Contains(t, out.String(), "state     completed")
		}
	}
}

// Errors that retrying cannot mend end the watch with their exit code: no
// such campaign 3, a refused permission 1; the rest of the script is not
// waited for.
func TestStatusWatchEndsOnErrorsRetryCannotMend(t *testing.T) {
	denied := serviceerror.NewPermissionDenied("namespace default: request unauthorized", "")
	notFound := serviceerror.NewNotFound("workflow not found")
	for _, tc := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("querying campaign %q: %w", "c", denied), ExitFailure},
		{fmt.Errorf("querying campaign %q: %w", "c", serviceerror.NewNamespaceNotFound("nope")), ExitFailure},
		{fmt.Errorf("campaign %q: %w", "c", client.ErrNotFound), ExitNotFound},
		{notFound, ExitNotFound},
	} {
		script := scriptedWatch{statusAt(workflows.CampaignRunning, 3), unavailable(), {Err: tc.err},
			statusAt(workflows.CampaignCompleted, 10)}
		for _, jsonOut := range []bool{false, true} {
			var out, errOut bytes.Buffer
			err := watchOptions(jsonOut, true).follow(t.Context(), script, "c", "", &out, &errOut)
			require.Error(t, err, "%v", tc.err)
			require.Equal(t, tc.code, ExitCode(err), "%v: %v", tc.err, err)
			if jsonOut {
				require.Equal(t, 1, strings.Count(out.String(), "\n"), "the watch went on after %v:\n%s", tc.err, out.String())
			} else {
				require.NotContains(t, out.String(), "state     completed", "the watch went on after %v", tc.err)
			}
		}
	}
}

// A timed-out query while the server takes no connections is the server
// down, as the SDK reports it.
func TestStatusWatchTimeoutsOfAServerDown(t *testing.T) {
	script := scriptedWatch{timedOut(), timedOut(), statusAt(workflows.CampaignCompleted, 10)}
	var out, errOut bytes.Buffer
	require.NoError(t, watchOptions(false, false).follow(t.Context(), script, "c", "", &out, &errOut))
	require.Equal(t,
		"reconnecting to localhost:7233 (server unavailable since 12:03:04, retry 1)…\n"+
			"reconnecting to localhost:7233 (server unavailable since 12:03:04, retry 2)…\n"+
			"reconnected to localhost:7233 after 20s\n", errOut.String())
}

// An error while the server is there (no worker answers the query, say)
// is retried and said as it is, not as a reconnect.
func TestStatusWatchRetriesOtherErrors(t *testing.T) {
	script := scriptedWatch{timedOut(), timedOut(), statusAt(workflows.CampaignCompleted, 10)}
	var out, errOut bytes.Buffer
	require.NoError(t, watchOptions(true, true).follow(t.Context(), script, "c", "http://ui/c", &out, &errOut))
	require.Equal(t,
		"retrying campaign c on localhost:7233 (no status since 12:03:04, retry 1: querying campaign \"c\": context deadline exceeded)…\n"+
			"retrying campaign c on localhost:7233 (no status since 12:03:04, retry 2: querying campaign \"c\": context deadline exceeded)…\n"+
			"status again from localhost:7233 after 20s\n", errOut.String())
	var got statusJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, workflows.CampaignCompleted, got.State)
	require.Equal(t, "http://ui/c", got.UIURL)
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retryable bool
		down      bool
	}{
		{serviceerror.NewUnavailable("down"), true, true},
		{fmt.Errorf("wrapped: %w", serviceerror.NewUnavailable("down")), true, true},
		{serviceerror.NewDeadlineExceeded("slow"), true, false},
		{context.DeadlineExceeded, true, false},
		{serviceerror.NewResourceExhausted(0, "busy"), true, false},
		{serviceerror.NewQueryFailed("the query handler panicked"), true, false},
		{errors.New("something else"), true, false},
		{serviceerror.NewPermissionDenied("no", ""), false, false},
		{serviceerror.NewNamespaceNotFound("ns"), false, false},
		{serviceerror.NewInvalidArgument("bad"), false, false},
	} {
		require.Equal(t, tc.retryable, retryable(tc.err), "%v", tc.err)
		require.Equal(t, tc.down, unreachable(tc.err), "%v", tc.err)
	}
}

// The server back before the worker: the retries say so, and the end of
// the run of failures is still a reconnect.
func TestStatusWatchServerBackBeforeTheWorker(t *testing.T) {
	o := watchOptions(false, true)
	reaches := 0
	o.reach = func(context.Context, string) error {
		if reaches++; reaches == 1 {
			return syscall.ECONNREFUSED
		}
		return nil
	}
	noPoller := client.Progress{Err: fmt.Errorf("querying campaign %q: %w", "c",
		serviceerror.NewFailedPrecondition("no poller seen for task queue recently, worker may be down"))}
	script := scriptedWatch{timedOut(), noPoller, statusAt(workflows.CampaignCompleted, 10)}
	var out, errOut bytes.Buffer
	require.NoError(t, o.follow(t.Context(), script, "c", "", &out, &errOut))
	require.Equal(t,
		"reconnecting to localhost:7233 (server unavailable since 12:03:04, retry 1)…\n"+
			"retrying campaign c on localhost:7233 (no status since 12:03:04, retry 2: querying campaign \"c\": no poller seen for task queue recently, worker may be down)…\n"+
			"reconnected to localhost:7233 after 20s\n", errOut.String())
}

func TestDialTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, dialTCP(t.Context(), addr))
	require.NoError(t, l.Close())
	require.Error(t, dialTCP(t.Context(), addr), "a closed port")
}
