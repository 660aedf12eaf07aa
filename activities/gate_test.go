package activities

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/gleaner-hpc/gleaner/workflows"
)

func TestNodeGateKeepsOneRunOnANode(t *testing.T) {
	var g nodeGate
	first, afterStop, err := g.acquire(context.Background(), gateRun{nodes: []string{"n0", "n1"}, wait: true}, time.Millisecond, func() {})
	require.NoError(t, err)
	require.False(t, afterStop)
	// A run that does not wait (a trial workflow's) is never held up.
	other, afterStop, err := g.acquire(context.Background(), gateRun{nodes: []string{"n1"}, wait: false}, time.Millisecond, func() {})
	require.NoError(t, err)
	require.False(t, afterStop)
	other(false)
	beats := make(chan struct{}, 100)
	type got struct {
		release   func(bool)
		afterStop bool
	}
	acquired := make(chan got)
	go func() {
		r, w, err := g.acquire(context.Background(), gateRun{nodes: []string{"n1"}, wait: true}, time.Millisecond, func() {
			select {
			case beats <- struct{}{}:
			default:
			}
		})
		if err == nil {
			acquired <- got{r, w}
		}
	}()
	<-beats
	<-beats // waiting, and heartbeating while it waits
	select {
	case <-acquired:
		t.Fatal("acquired n1 while the first run held it")
	default:
	}
	free, afterStop, err := g.acquire(context.Background(), gateRun{nodes: []string{"n2"}, wait: true}, time.Millisecond, func() {})
	require.NoError(t, err, "another node is not held up")
	require.False(t, afterStop)
	free(false)
	first(true)  // stopped
	first(false) // a second release does nothing
	second := <-acquired
	require.True(t, second.afterStop, "it waited for a run that was stopped")
	// A cancelled wait gives up.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = g.acquire(ctx, gateRun{nodes: []string{"n1"}, wait: true}, time.Millisecond, func() {})
	require.ErrorIs(t, err, context.Canceled)
	second.release(false)
	// A run that waited for one that ended by itself launches at once.
	third, afterStop, err := g.acquire(context.Background(), gateRun{nodes: []string{"n1"}, wait: true}, time.Millisecond, func() {})
	require.NoError(t, err)
	require.False(t, afterStop)
	third(false)
	require.Empty(t, g.held, "no node is left held")
	require.Len(t, g.idle, 2, "the second and third runs on n1 followed one there")
}

// Two inline runs queued on one node: the second's trainer starts only
// once the first's has exited, and the worker measures the gap.
func TestRunTrialQueuedOnANodeStartsWhenTheRunBeforeItEnds(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	dir := t.TempDir()
	// Each trainer notes its start and end (nanoseconds) in a file of its own.
	script := func(name string) string {
		f := filepath.Join(dir, name)
		return "date +%s%N > " + f + "; sleep 0.3; date +%s%N >> " + f
	}
	in := func(id, name string) workflows.RunTrialInput {
		r := runInput(script(name))
		r.Trial.TrialID, r.Nodes, r.Quiet = id, []string{"local-0"}, true
		return r
	}
	// One test environment each: an environment runs one activity at a
	// time (its bookkeeping is not safe for concurrent use).
	var s testsuite.WorkflowTestSuite
	env2 := s.NewTestActivityEnvironment()
	env2.RegisterActivityWithOptions(a.RunTrial, activity.RegisterOptions{Name: workflows.RunTrialActivityName})
	done := make(chan error, 2)
	for id, env := range map[string]*testsuite.TestActivityEnvironment{"t1": env, "t2": env2} {
		go func() {
			_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in(id, id))
			done <- err
		}()
	}
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	span := func(name string) (start, end int64) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		f := strings.Fields(string(b))
		require.Len(t, f, 2, "%s: %q", name, b)
		start, _ = strconv.ParseInt(f[0], 10, 64)
		end, _ = strconv.ParseInt(f[1], 10, 64)
		return start, end
	}
	s1, e1 := span("t1")
	s2, e2 := span("t2")
	require.True(t, s2 >= e1 || s1 >= e2, "the trainers overlapped on local-0: [%d, %d] and [%d, %d]", s1, e1, s2, e2)
	require.Len(t, a.NodeIdle(), 1, "the second launch on local-0 was measured")
}

// A run queued behind another that reaches the worker first (the server
// hands over a workflow task's activities in any order) waits for that
// run to have its nodes and to end; a run it waits for that never comes
// holds it up only for the grace.
func TestNodeGateKeepsAQueuedRunBehindTheRunBeforeIt(t *testing.T) {
	g := nodeGate{grace: time.Hour}
	acquired := make(chan func(bool))
	beats := make(chan struct{}, 100)
	go func() {
		r, _, err := g.acquire(context.Background(), gateRun{nodes: []string{"n0"}, wait: true, self: "b", after: "a"},
			time.Millisecond, func() {
				select {
				case beats <- struct{}{}:
				default:
				}
			})
		if err == nil {
			acquired <- r
		}
	}()
	<-beats
	<-beats // waiting on free nodes, for a
	select {
	case <-acquired:
		t.Fatal("b took n0 before a, which it is queued behind")
	default:
	}
	first, _, err := g.acquire(context.Background(), gateRun{nodes: []string{"n0"}, wait: true, self: "a"}, time.Millisecond, func() {})
	require.NoError(t, err, "a is not held up by b")
	select {
	case <-acquired:
		t.Fatal("b took n0 while a holds it")
	case <-time.After(20 * time.Millisecond):
	}
	first(false)
	second := <-acquired
	second(false)
	require.Equal(t, map[string]bool{"b": true}, g.had, "a is forgotten once b followed it; b waits for its own successor")

	g.grace = 10 * time.Millisecond
	lone, _, err := g.acquire(context.Background(), gateRun{nodes: []string{"n0"}, wait: true, self: "d", after: "c"}, time.Millisecond, func() {})
	require.NoError(t, err, "c never came: d goes after the grace")
	lone(false)
}

// A run cancelled while it waits for its nodes ends as a cancellation the
// server records as such (the SDK answers "canceled" for an error that is
// context.Canceled) and that the SDK does not log as an activity error
// (a benign application error, by type, not wrapped).
func TestRunStoppedBeforeLaunchIsABenignCancellation(t *testing.T) {
	in := runInput("true")
	err := stoppedBeforeLaunch(in, context.Canceled)
	require.ErrorIs(t, err, context.Canceled)
	app, ok := err.(*temporal.ApplicationError)
	require.True(t, ok, "the SDK checks the type itself, not errors.As")
	require.Equal(t, temporal.ApplicationErrorCategoryBenign, app.Category())
	require.Contains(t, err.Error(), "stopped before its trainer started")
	other := errors.New("disk full")
	require.Same(t, other, stoppedBeforeLaunch(in, other), "other errors are the run's own")
}

// A run cancelled while it waits for its nodes lets the run queued behind
// it go once the nodes are free: it will never have them, and the one
// behind it would otherwise wait out the grace.
func TestNodeGateLetsARunGoBehindOneCancelledWhileWaiting(t *testing.T) {
	g := nodeGate{grace: time.Hour}
	holder, _, err := g.acquire(context.Background(), gateRun{nodes: []string{"n0"}, wait: true, self: "x"}, time.Millisecond, func() {})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, _, err := g.acquire(ctx, gateRun{nodes: []string{"n0"}, wait: true, self: "a", after: "x"}, time.Millisecond, func() {})
		cancelled <- err
	}()
	acquired := make(chan func(bool), 1)
	go func() {
		r, _, err := g.acquire(context.Background(), gateRun{nodes: []string{"n0"}, wait: true, self: "b", after: "a"}, time.Millisecond, func() {})
		if err == nil {
			acquired <- r
		}
	}()
	cancel()
	require.ErrorIs(t, <-cancelled, context.Canceled)
	holder(false)
	select {
	case r := <-acquired:
		r(false)
	case <-time.After(10 * time.Second):
		t.Fatal("b still waits for a, which was cancelled waiting")
	}
}
