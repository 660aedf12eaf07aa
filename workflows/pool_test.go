package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	wf "github.com/gleaner-hpc/gleaner/workflows"
)

// nodeSet is a node source the test changes while the pool runs.
type nodeSet struct {
	mu    sync.Mutex
	nodes []gleaner.Node
}

func (s *nodeSet) set(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = nil
	for _, id := range ids {
		s.nodes = append(s.nodes, gleaner.Node{ID: id})
	}
}

func (s *nodeSet) Idle(context.Context, time.Time) ([]gleaner.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nodes), nil
}

// poolEnv runs the pool workflow with the real PollNodes and Allocate
// activities and records the assignments it signals to trials.
type poolEnv struct {
	*testsuite.TestWorkflowEnvironment
	nodes *nodeSet
	mu    sync.Mutex
	got   map[string][]wf.Assignment // by trial workflow id
	log   *chunkRecorder             // the chunks of the pool's log
}

func newPoolEnv(t *testing.T, trials ...string) *poolEnv {
	return newPoolEnvWith(t, &activities.Activities{}, trials...)
}

// newPoolEnvWith is newPoolEnv with the worker's activities acts (their
// node source set to the test's).
func newPoolEnvWith(t *testing.T, acts *activities.Activities, trials ...string) *poolEnv {
	var s testsuite.WorkflowTestSuite
	e := &poolEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(), nodes: &nodeSet{}, got: map[string][]wf.Assignment{}}
	acts.Default = e.nodes
	e.RegisterWorkflowWithOptions(wf.PoolWorkflow, workflow.RegisterOptions{Name: wf.PoolWorkflowName})
	e.RegisterActivityWithOptions(acts.PollNodes, activity.RegisterOptions{Name: wf.PollNodesActivityName})
	e.RegisterActivityWithOptions(acts.Allocate, activity.RegisterOptions{Name: wf.AllocateActivityName})
	e.log = &chunkRecorder{}
	e.log.register(e)
	for _, id := range trials {
		e.OnSignalExternalWorkflow(mock.Anything, id, "", wf.SignalAssignment, mock.Anything).Return(
			func(_, id, _, _ string, arg interface{}) error {
				e.mu.Lock()
				defer e.mu.Unlock()
				e.got[id] = append(e.got[id], arg.(wf.Assignment))
				return nil
			})
	}
	e.SetTestTimeout(30 * time.Second)
	return e
}

func (e *poolEnv) last(id string) wf.Assignment {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.got[id]
	if len(a) == 0 {
		return wf.Assignment{}
	}
	return a[len(a)-1]
}

func (e *poolEnv) at(d time.Duration, f func()) { e.RegisterDelayedCallback(f, d) }

// confirmReleases plays the trials' side of the node handover: every
// 250 ms until `until`, each trial confirms the newest assignment it got
// (its trainer has left the nodes taken from it).
func (e *poolEnv) confirmReleases(until time.Duration) {
	for d := 250 * time.Millisecond; d < until; d += 250 * time.Millisecond {
		e.at(d, func() {
			e.mu.Lock()
			var rel []wf.Released
			for id, got := range e.got {
				rel = append(rel, wf.Released{TrialID: id, Epoch: got[len(got)-1].Epoch})
			}
			e.mu.Unlock()
			for _, r := range rel {
				e.SignalWorkflow(wf.SignalReleased, r)
			}
		})
	}
}

func reg(id string, min, max int) wf.RegisterTrial {
	return wf.RegisterTrial{TrialID: id, CampaignID: "c", MinNodes: min, MaxNodes: max, RescaleUpCost: 20 * time.Second, RescaleDownCost: 10 * time.Second}
}

func poolInput() wf.PoolInput {
	return wf.PoolInput{Name: "p", PollInterval: time.Second, AllocatePeriod: 10 * time.Second, Debounce: 100 * time.Millisecond}
}

// ends stops the pool (it never ends by itself) once the test is done:
// a continue-as-new forced by history length.
func (e *poolEnv) endAt(d time.Duration) {
	e.at(d, func() { e.SetCurrentHistoryLength(1 << 30) })
}

func (e *poolEnv) carried(t *testing.T) wf.PoolInput {
	require.True(t, e.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(e.GetWorkflowError(), &can), "got %v", e.GetWorkflowError())
	var next wf.PoolInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	return next
}

// Two trials share four nodes; a node leaves and the trial on it is
// shrunk; a trial leaves and the other grows onto its nodes.
func TestPoolAssignsShrinksAndGrows(t *testing.T) {
	e := newPoolEnv(t, "a", "b")
	e.nodes.set("n1", "n2", "n3", "n4")
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("a", 1, 4)) })
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("b", 1, 4)) })
	e.at(3*time.Second, func() {
		a, b := e.last("a"), e.last("b")
		assert.Equal(t, 4, len(a.Nodes)+len(b.Nodes), "every node used: a %v b %v", a.Nodes, b.Nodes)
		assert.NotEmpty(t, a.Nodes)
		assert.NotEmpty(t, b.Nodes)
		assert.Empty(t, intersect(a.Nodes, b.Nodes))
		// The node of a that the batch scheduler takes back leaves the pool.
		gone := a.Nodes[0]
		var rest []string
		for _, n := range []string{"n1", "n2", "n3", "n4"} {
			if n != gone {
				rest = append(rest, n)
			}
		}
		e.nodes.set(rest...)
	})
	e.at(6*time.Second, func() {
		a, b := e.last("a"), e.last("b")
		assert.Equal(t, 3, len(a.Nodes)+len(b.Nodes))
		for _, n := range append(a.Nodes, b.Nodes...) {
			assert.NotEqual(t, "", n)
		}
		e.SignalWorkflow(wf.SignalDeregisterTrial, wf.DeregisterTrial{TrialID: "a"})
	})
	e.at(9*time.Second, func() {
		assert.Len(t, e.last("b").Nodes, 3, "b grows onto what a released")
	})
	e.endAt(12 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, poolInput())
	next := e.carried(t)
	require.NotNil(t, next.State)
	require.Len(t, next.State.Trials, 1)
	require.Equal(t, "b", next.State.Trials[0].Registration.TrialID)
	require.Len(t, next.State.Trials[0].Nodes, 3)
	require.Greater(t, next.State.Epoch, int64(2))
	require.Equal(t, "compact", next.State.Last.Formulation)
}

// Assignments carry increasing epochs; a trial that registers again hears
// its (unchanged) assignment again.
func TestPoolResendsOnReregister(t *testing.T) {
	e := newPoolEnv(t, "a")
	e.nodes.set("n1", "n2")
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("a", 1, 2)) })
	e.at(3*time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("a", 1, 2)) })
	e.endAt(6 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, poolInput())
	e.carried(t)
	e.mu.Lock()
	defer e.mu.Unlock()
	got := e.got["a"]
	require.Len(t, got, 2)
	require.Equal(t, got[0].Nodes, got[1].Nodes)
	require.Less(t, got[0].Epoch, got[1].Epoch)
}

// Measured throughput steers the allocation: a trial that scales gets the
// nodes a trial that does not scale would waste.
func TestPoolUsesProfiles(t *testing.T) {
	e := newPoolEnv(t, "scales", "flat")
	e.nodes.set("n1", "n2", "n3", "n4", "n5")
	e.at(time.Second, func() {
		e.SignalWorkflow(wf.SignalRegisterTrial, reg("scales", 1, 4))
		e.SignalWorkflow(wf.SignalRegisterTrial, reg("flat", 1, 4))
	})
	e.at(2*time.Second, func() {
		for n := 1; n <= 4; n++ {
			e.SignalWorkflow(wf.SignalProfile, wf.ThroughputProfile{TrialID: "scales", Nodes: n, Throughput: 100 * float64(n)})
			e.SignalWorkflow(wf.SignalProfile, wf.ThroughputProfile{TrialID: "flat", Nodes: n, Throughput: 100 + float64(n)})
		}
	})
	e.at(15*time.Second, func() {
		assert.Len(t, e.last("scales").Nodes, 4, "the scaling trial gets its max")
		assert.Len(t, e.last("flat").Nodes, 1, "the flat one keeps one node")
	})
	e.confirmReleases(16 * time.Second)
	e.endAt(16 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, poolInput())
	e.carried(t)
}

// The status query shows nodes, trials and the last solve.
func TestPoolStatusQuery(t *testing.T) {
	e := newPoolEnv(t, "a")
	e.nodes.set("n1", "n2", "n3")
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("a", 2, 2)) })
	e.at(3*time.Second, func() {
		v, err := e.QueryWorkflow(wf.QueryStatus)
		if !assert.NoError(t, err) {
			return
		}
		var s wf.PoolStatus
		assert.NoError(t, v.Get(&s))
		assert.Equal(t, "p", s.Name)
		assert.Len(t, s.Nodes, 3)
		assert.Len(t, s.Trials, 1)
		assert.Len(t, s.Trials[0].Nodes, 2)
		assert.Equal(t, "optimal", s.Last.Status)
		assert.Equal(t, 2, s.Last.NodesUsed)
	})
	e.endAt(4 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, poolInput())
	e.carried(t)
}

func TestPoolRejectsEmptyName(t *testing.T) {
	e := newPoolEnv(t)
	e.ExecuteWorkflow(wf.PoolWorkflowName, wf.PoolInput{})
	require.ErrorContains(t, e.GetWorkflowError(), "pool: name: empty")
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

var _ = fmt.Sprint

// A node moving from a shrinking trial to a growing one is granted only
// once the shrinking trial confirms its trainer left it; without a
// confirmation, after ReleaseTimeout.
func TestPoolHandsNodesOverOnRelease(t *testing.T) {
	e := newPoolEnv(t, "old", "new", "new2")
	e.nodes.set("n1", "n2")
	in := poolInput()
	in.ReleaseTimeout = 30 * time.Second
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("old", 1, 2)) })
	e.at(3*time.Second, func() {
		assert.Len(t, e.last("old").Nodes, 2)
		assert.True(t, e.last("old").NoReleaseAwaited, "nothing taken from old yet")
		// A second trial arrives: the allocator gives it one of old's nodes.
		e.SignalWorkflow(wf.SignalRegisterTrial, reg("new", 1, 2))
	})
	e.at(5*time.Second, func() {
		assert.Len(t, e.last("old").Nodes, 1, "the shrink goes at once")
		assert.False(t, e.last("old").NoReleaseAwaited, "the shrink waits for old to confirm")
		assert.Empty(t, e.last("new").Nodes, "the grant waits for old to leave the node")
		e.SignalWorkflow(wf.SignalReleased, wf.Released{TrialID: "old", Epoch: e.last("old").Epoch})
	})
	e.at(6*time.Second, func() {
		a, b := e.last("old"), e.last("new")
		assert.Len(t, b.Nodes, 1, "granted once released")
		assert.Empty(t, intersect(a.Nodes, b.Nodes))
		// The next move is never confirmed: it happens after the timeout.
		e.SignalWorkflow(wf.SignalDeregisterTrial, wf.DeregisterTrial{TrialID: "new"})
		e.SignalWorkflow(wf.SignalRegisterTrial, reg("new2", 2, 2))
	})
	e.at(20*time.Second, func() {
		assert.Empty(t, e.last("new2").Nodes, "old has not confirmed: new2 waits")
	})
	e.at(45*time.Second, func() {
		assert.Len(t, e.last("new2").Nodes, 2, "handed over after ReleaseTimeout")
	})
	e.endAt(50 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, in)
	next := e.carried(t)
	require.Len(t, next.State.Trials, 2)
	require.Empty(t, next.State.Releasing)
}

// A trial with a grace period longer than ReleaseTimeout keeps a node
// taken from it for its whole grace period plus ReleaseMargin: the pool
// never puts a second trainer on a node the first may still be
// checkpointing on.
func TestPoolHoldsNodesForTheGracePeriod(t *testing.T) {
	e := newPoolEnv(t, "slow", "new")
	e.nodes.set("n1", "n2")
	in := poolInput()
	in.ReleaseTimeout = 30 * time.Second
	slow := reg("slow", 1, 2)
	slow.GracePeriod = 5 * time.Minute
	hold := slow.GracePeriod + wf.ReleaseMargin
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, slow) })
	e.at(3*time.Second, func() {
		assert.Len(t, e.last("slow").Nodes, 2)
		// A second trial arrives: the allocator gives it one of slow's
		// nodes; slow never confirms it left it.
		e.SignalWorkflow(wf.SignalRegisterTrial, reg("new", 1, 2))
	})
	e.at(5*time.Second, func() {
		assert.Len(t, e.last("slow").Nodes, 1, "the shrink goes at once")
		assert.Empty(t, e.last("new").Nodes, "the grant waits for slow to leave the node")
	})
	e.at(3*time.Second+2*in.ReleaseTimeout, func() {
		assert.Empty(t, e.last("new").Nodes, "past ReleaseTimeout but inside slow's grace period: new waits")
	})
	e.at(3*time.Second+hold-10*time.Second, func() {
		assert.Empty(t, e.last("new").Nodes, "still inside the grace period + margin")
	})
	e.at(3*time.Second+hold+10*time.Second, func() {
		assert.Len(t, e.last("new").Nodes, 1, "handed over once the grace period + margin passed")
	})
	e.endAt(3*time.Second + hold + 20*time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, in)
}

// A pool that handled nothing for longer than its poll timer allows was
// not running (the server or every worker was away): node holds that ran
// out meanwhile are extended, not expired.
func TestPoolAsleep(t *testing.T) {
	in := poolInput()
	in.PollInterval = 5 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		awake time.Time
		now   time.Time
		want  bool
	}{
		{time.Time{}, t0, false}, // first iteration of a run
		{t0, t0.Add(in.PollInterval), false},
		{t0, t0.Add(in.PollInterval + wf.ReleaseMargin), false},
		{t0, t0.Add(in.PollInterval + wf.ReleaseMargin + time.Second), true},
		{t0, t0.Add(10 * time.Minute), true},
	} {
		if got := wf.PoolAsleep(in, c.awake, c.now); got != c.want {
			t.Errorf("asleep(%v after) = %v, want %v", c.now.Sub(c.awake), got, c.want)
		}
	}
}
