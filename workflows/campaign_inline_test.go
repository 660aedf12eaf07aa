package workflows

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// inlineHarness runs an inline campaign in the test environment with a
// scripted pool (RegisterTrial answers with an assignment of the first
// grant nodes) and a scripted RunTrial (trains for runFor, or until it is
// cancelled, then reports a checkpoint).
type inlineHarness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment

	mu       sync.Mutex
	grant    int
	epoch    int64
	runFor   time.Duration
	running  map[string]string   // node → trial of the runs now on it
	freed    chan struct{}       // closed (and replaced) when a node frees
	canceled map[string]bool     // activity ids the campaign cancelled
	runNodes map[string][]string // activity id → its nodes
	had      map[string]bool     // RunRef of every run launched
	maxRuns  int
	launches []RunTrialInput
	released []Released
	profiles []ThroughputProfile
	deregs   int
	regs     []RegisterTrial
	records  []TrialRecords
	// hold, when set, makes a launch wait for its cancellation (launch is
	// its index in launches).
	hold func(launch int, in RunTrialInput) bool
	// onReleased runs when the campaign confirms a release.
	onReleased func()
	// onProfile runs when the campaign sends the pool a profile.
	onProfile func()
	// assignFirst: the pool's assignment reaches the campaign before the
	// registration's completion does.
	assignFirst bool
	// metrics, when set, are what a completed run reports (default: loss).
	metrics func(hpo.Params) map[string]float64
}

func newInlineHarness(t *testing.T, grant int, runFor time.Duration) *inlineHarness {
	h := &inlineHarness{t: t, grant: grant, runFor: runFor, running: map[string]string{}, runNodes: map[string][]string{}, had: map[string]bool{},
		freed: make(chan struct{}), canceled: map[string]bool{}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	h.env = env
	env.RegisterWorkflowWithOptions(CampaignWorkflow, workflow.RegisterOptions{Name: CampaignWorkflowName})
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in TrialRecords) (TrialRecords, error) {
		h.mu.Lock()
		h.records = append(h.records, in)
		h.mu.Unlock()
		return in, nil
	}, workflow.RegisterOptions{Name: TrialRecordsWorkflowName})
	env.RegisterActivityWithOptions(func(ctx context.Context, in RegisterTrialInput) error {
		h.mu.Lock()
		h.regs = append(h.regs, in.Registration)
		first := h.assignFirst
		h.mu.Unlock()
		if first {
			h.assign(h.grant)
		} else {
			env.RegisterDelayedCallback(func() { h.assign(h.grant) }, time.Millisecond)
		}
		return nil
	}, activity.RegisterOptions{Name: RegisterTrialActivityName})
	env.RegisterActivityWithOptions(h.runTrial, activity.RegisterOptions{Name: RunTrialActivityName})
	// The test environment settles a cancelled activity at once (it does
	// not wait for it, as the server does with WaitForCancellation): its
	// nodes count as free from then on.
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.canceled[info.ActivityID] = true
		for _, n := range h.runNodes[info.ActivityID] {
			delete(h.running, n)
		}
		h.free()
	})
	env.OnSignalExternalWorkflow(mock.Anything, PoolWorkflowID("default"), "", mock.Anything, mock.Anything).Return(nil).
		Run(func(args mock.Arguments) {
			h.mu.Lock()
			defer h.mu.Unlock()
			switch a := args.Get(4).(type) {
			case Released:
				h.released = append(h.released, a)
				if h.onReleased != nil {
					h.onReleased()
				}
			case DeregisterTrial:
				h.deregs++
			case ThroughputProfile:
				h.profiles = append(h.profiles, a)
				if h.onProfile != nil {
					h.onProfile()
				}
			}
		})
	return h
}

func nodeNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("n%02d", i))
	}
	return out
}

// assign sends the campaign an assignment of the first n nodes.
func (h *inlineHarness) assign(n int) {
	h.mu.Lock()
	h.epoch++
	a := Assignment{Epoch: h.epoch, Nodes: nodeNames(n)}
	h.grant = n
	h.mu.Unlock()
	h.env.SignalWorkflow(SignalAssignment, a)
}

// free wakes the runs waiting for their nodes; h.mu is held.
func (h *inlineHarness) free() {
	close(h.freed)
	h.freed = make(chan struct{})
}

func (h *inlineHarness) runTrial(ctx context.Context, in RunTrialInput) (RunTrialResult, error) {
	h.mu.Lock()
	// A pipelined campaign queues a run behind the one on its nodes: the
	// worker starts it once that run has had them and they are free
	// again (activities/gate.go), whichever the server handed over first.
	for in.Quiet && ctx.Err() == nil && (slices.ContainsFunc(in.Nodes, func(n string) bool { _, busy := h.running[n]; return busy }) ||
		in.After != "" && !h.had[in.After]) {
		freed := h.freed
		h.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
		}
		h.mu.Lock()
	}
	// A run cancelled before it started never starts (the worker
	// heartbeats before it launches a run that waited, and the gate
	// gives no nodes to a cancelled run). The test environment may call
	// the listener of a cancellation before or after it cancels ctx.
	if h.canceled[activity.GetInfo(ctx).ActivityID] || ctx.Err() != nil {
		h.mu.Unlock()
		return RunTrialResult{}, temporal.NewCanceledError()
	}

	for _, n := range in.Nodes {
		if other, busy := h.running[n]; busy {
			h.t.Errorf("trial %s launched on node %s while %s runs there", in.Trial.TrialID, n, other)
		}
		if !slices.Contains(nodeNames(h.grant), n) {
			h.t.Errorf("trial %s launched on node %s, not assigned to the campaign", in.Trial.TrialID, n)
		}
		h.running[n] = in.Trial.TrialID
	}
	h.runNodes[activity.GetInfo(ctx).ActivityID] = in.Nodes
	h.had[RunRef(in.Trial, in.Run)] = true
	h.free() // the run queued behind this one may go once it ends
	h.maxRuns = max(h.maxRuns, len(h.running))
	h.launches = append(h.launches, in)
	held := h.hold != nil && h.hold(len(h.launches)-1, in)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		for _, n := range in.Nodes {
			if h.running[n] == in.Trial.TrialID {
				delete(h.running, n)
			}
		}
		h.free()
		h.mu.Unlock()
	}()
	if !in.Quiet {
		h.t.Errorf("trial %s: inline runs must be quiet", in.Trial.TrialID)
	}
	ckpt := fmt.Sprintf("ckpt-%s-run%d", in.Trial.TrialID, in.Run)
	if held {
		<-ctx.Done()
		return RunTrialResult{Outcome: RunStopped, Samples: 50, Checkpoint: ckpt}, nil
	}
	select {
	case <-time.After(h.runFor):
		metrics := map[string]float64{"loss": scoreOf(in.Trial.Params)}
		if h.metrics != nil {
			metrics = h.metrics(in.Trial.Params)
		}
		return RunTrialResult{Outcome: RunCompleted, Samples: 100, Checkpoint: ckpt, Metrics: metrics}, nil
	case <-ctx.Done():
		return RunTrialResult{Outcome: RunStopped, Samples: 50, Checkpoint: ckpt}, nil
	}
}

func inlineSpec(trials, concurrent int) CampaignInput {
	spec := testSpec(trials, concurrent)
	spec.Trial.Inline = true
	return CampaignInput{Spec: spec}
}

func TestInlineCampaignPacksTrialsOnItsNodes(t *testing.T) {
	h := newInlineHarness(t, 3, 20*time.Millisecond)
	in := inlineSpec(10, 5)
	in.Tuning = &Tuning{RecordsChunk: 4}
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res CampaignResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	require.Equal(t, 10, res.Completed, "trials completed")
	require.Equal(t, 0, res.Failed)
	// Five in flight, but the pool gave three nodes: never more than three run.
	require.LessOrEqual(t, h.maxRuns, 3)
	require.Equal(t, 3, h.maxRuns, "the campaign used every node it was given")
	require.Len(t, h.launches, 10, "one run per trial")
	// The pool was told once (five trials of one node), and told goodbye.
	require.Len(t, h.regs, 1)
	require.Equal(t, RegisterTrial{TrialID: "default-test-workflow-id", CampaignID: "mnist", MinNodes: 1, MaxNodes: 5,
		RescaleUpCost: 20 * time.Second, RescaleDownCost: 10 * time.Second, GracePeriod: 30 * time.Second}, h.regs[0])
	require.Equal(t, 1, h.deregs)
	// Every trial's record is kept, in chunks of four.
	var ids []string
	for _, r := range h.records {
		require.LessOrEqual(t, len(r.Trials), 4)
		for _, tr := range r.Trials {
			require.Equal(t, TrialCompleted, tr.State)
			require.Equal(t, scoreOf(tr.Params), tr.Metrics["loss"])
			ids = append(ids, tr.TrialID)
		}
	}
	slices.Sort(ids)
	require.Len(t, ids, 10)
	require.Equal(t, 3, len(h.records))
	require.Equal(t, wantLeaderboard(&fakeTrials{inputs: inputsOf(h.launches)}, nil, 10), gotLeaderboard(res.Leaderboard))
}

// The pool can answer a registration before the campaign has handled the
// registration's completion (both in one workflow task): the assignment
// still counts. (It was dropped once, and the campaign waited forever.)
func TestInlineCampaignTakesAnAssignmentThatOvertakesItsRegistration(t *testing.T) {
	h := newInlineHarness(t, 2, 10*time.Millisecond)
	h.assignFirst = true
	h.env.ExecuteWorkflow(CampaignWorkflowName, inlineSpec(4, 2))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res CampaignResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	require.Equal(t, 4, res.Completed)
}

// Inline trials are measured as trial workflows are: the pool hears a
// profile under the campaign's registration at one trial's size, so its
// JPA measures an inline campaign too.
func TestInlineCampaignSendsItsTrialsProfiles(t *testing.T) {
	h := newInlineHarness(t, 2, 0)
	// Each run trains 1000 samples in 10 s of the workflow's clock (a
	// mocked activity waits on that clock; the harness's runs do not).
	h.env.OnActivity(RunTrialActivityName, mock.Anything, mock.Anything).After(10*time.Second).
		Return(RunTrialResult{Outcome: RunCompleted, Samples: 1000, Metrics: map[string]float64{"loss": 0.5}}, nil)
	in := inlineSpec(6, 2)
	in.Spec.Resources.Model, in.Spec.Resources.Batch = "mlp", 64
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.NotEmpty(t, h.profiles, "the pool heard no profile of the inline trials")
	for _, p := range h.profiles {
		require.Equal(t, h.regs[0].TrialID, p.TrialID, "a profile of the campaign's registration")
		require.Equal(t, 1, p.Nodes, "at one trial's size")
		require.InDelta(t, 100, p.Throughput, 1, "1000 samples in 10 s")
		require.Equal(t, "mlp", p.Model)
		require.Equal(t, 64, p.Batch)
	}
	require.Len(t, h.profiles, 1, "the same throughput again is not news to the pool")
}

// An inline campaign whose throughput is news at every run sends its pool
// at most one profile every InlineProfileEvery of its clock: one signal
// per run made 1,000 one-second trials a fifth slower.
func TestInlineCampaignSendsAProfileAtMostEveryInlineProfileEvery(t *testing.T) {
	h := newInlineHarness(t, 2, 0)
	var at []time.Time
	h.onProfile = func() { at = append(at, h.env.Now()) }
	// Each run takes 10 s of the workflow's clock, each faster than the
	// last by more than the 5 % that is news.
	h.env.OnActivity(RunTrialActivityName, mock.Anything, mock.Anything).After(10 * time.Second).
		Return(func(_ context.Context, in RunTrialInput) (RunTrialResult, error) {
			return RunTrialResult{Outcome: RunCompleted, Samples: 1000 * math.Pow(1.5, float64(in.Trial.Number)),
				Metrics: map[string]float64{"loss": 0.5}}, nil
		})
	in := inlineSpec(16, 2)
	in.Spec.Search.Algorithm = hpo.AlgorithmTPE // not pipelined: the mock waits for no node
	start := h.env.Now()
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	span := h.env.Now().Sub(start)
	require.GreaterOrEqual(t, span, 70*time.Second, "8 rounds of 10 s")
	require.GreaterOrEqual(t, len(at), 2, "news is sent again once the interval has passed")
	require.LessOrEqual(t, len(at), 1+int(span/InlineProfileEvery), "at most one per InlineProfileEvery")
	for i := 1; i < len(at); i++ {
		require.GreaterOrEqual(t, at[i].Sub(at[i-1]), InlineProfileEvery, "profiles %d and %d", i-1, i)
	}
}

// A campaign run that began before inline trials kept their books with
// the trial core (inline-trial-core) keeps them as it did, so that its
// history replays: restarts summed over every failure, no history, no
// profile. A run that began with it counts as a trial workflow does.
func TestInlineCampaignKeepsItsBooksAsItsRunBegan(t *testing.T) {
	for _, tc := range []struct {
		version  workflow.Version
		restarts int
		history  int
		profiles bool
	}{
		{version: workflow.DefaultVersion, restarts: 5},
		{version: 1, restarts: 2, history: 1, profiles: true}, // max_restarts 2
	} {
		t.Run(fmt.Sprint(tc.version), func(t *testing.T) {
			h := newInlineHarness(t, 2, 0)
			h.env.OnGetVersion("inline-trial-core", workflow.DefaultVersion, 1).Return(tc.version)
			h.env.OnActivity(RunTrialActivityName, mock.Anything, mock.Anything).After(10*time.Second).
				Return(RunTrialResult{Outcome: RunCompleted, Samples: 1000, Failures: 5, Metrics: map[string]float64{"loss": 0.5}}, nil)
			in := inlineSpec(2, 2)
			in.Spec.Trial.MaxRestarts = 2
			h.env.ExecuteWorkflow(CampaignWorkflowName, in)
			require.True(t, h.env.IsWorkflowCompleted())
			require.NoError(t, h.env.GetWorkflowError())
			require.Len(t, h.records, 1)
			for _, r := range h.records[0].Trials {
				require.Equal(t, tc.restarts, r.Restarts)
				require.Len(t, r.History, tc.history)
			}
			require.Equal(t, tc.profiles, len(h.profiles) > 0)
		})
	}
}

func inputsOf(runs []RunTrialInput) []TrialInput {
	var out []TrialInput
	for _, r := range runs {
		out = append(out, r.Trial)
	}
	return out
}

func TestInlineCampaignResumesTrialsThePoolPreempts(t *testing.T) {
	h := newInlineHarness(t, 4, 50*time.Millisecond)
	// The first four trials start on the four nodes; the two on n02 and
	// n03 train until stopped. Once all four run, the pool takes n02 and
	// n03 back; once the campaign confirms they are free, it gives them
	// again.
	h.hold = func(i int, in RunTrialInput) bool {
		if i == 3 {
			h.env.RegisterDelayedCallback(func() { h.assign(2) }, time.Millisecond)
		}
		return i < 4 && (in.Nodes[0] == "n02" || in.Nodes[0] == "n03")
	}
	h.onReleased = func() {
		for _, n := range nodeNames(4)[2:] {
			if tr, busy := h.running[n]; busy {
				t.Errorf("release confirmed while trial %s still runs on taken node %s", tr, n)
			}
		}
		h.env.RegisterDelayedCallback(func() { h.assign(4) }, time.Millisecond)
	}
	h.env.ExecuteWorkflow(CampaignWorkflowName, inlineSpec(6, 4))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res CampaignResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	require.Equal(t, 6, res.Completed)
	// The two preempted trials ran again, in a second run.
	var again []string
	for _, l := range h.launches {
		if l.Run > 1 {
			again = append(again, fmt.Sprintf("%s run %d", l.Trial.TrialID, l.Run))
		}
	}
	slices.Sort(again) // relaunched as their stops land, in either order
	require.Equal(t, []string{"t00003 run 2", "t00004 run 2"}, again)
	require.Len(t, h.launches, 8)
	require.Len(t, h.released, 1)
	require.Equal(t, Released{TrialID: "default-test-workflow-id", Epoch: 2}, h.released[0])
}

func TestInlineCampaignContinuesAsNewWithItsTrials(t *testing.T) {
	h := newInlineHarness(t, 2, 20*time.Millisecond)
	// From the fourth launch on, trials train until stopped: the run about
	// to continue as new must stop them.
	h.hold = func(i int, _ RunTrialInput) bool {
		if i == 4 {
			h.env.RegisterDelayedCallback(func() { h.env.SetCurrentHistoryLength(500) }, time.Millisecond)
		}
		return i >= 3
	}
	in := inlineSpec(12, 2)
	in.HistoryThreshold = 400
	in.Tuning = &Tuning{DrainWait: time.Second}
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	err := h.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	// Nothing ran when the run closed; its state carries the waiting
	// trials, the nodes and the registration.
	require.Empty(t, h.running)
	var next CampaignInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	st := next.State.Inline
	require.NotNil(t, st)
	require.Equal(t, 2, st.Told)
	require.Equal(t, nodeNames(2), st.Nodes)
	require.Equal(t, len(next.State.InFlight), len(st.Trials))
	require.Zero(t, h.deregs, "a run that continues as new keeps its nodes")
	// The stopped trials wait in the next run, and resume there: they ran,
	// so they wait paused at 0 nodes, as a trial workflow does.
	require.Len(t, h.launches, 5)
	for _, l := range h.launches[3:] {
		i := slices.IndexFunc(st.Trials, func(x InlineTrial) bool { return x.Input.TrialID == l.Trial.TrialID })
		require.GreaterOrEqual(t, i, 0, "trial %s stopped for continue-as-new is carried", l.Trial.TrialID)
		require.Equal(t, 1, st.Trials[i].Progress.Runs)
		require.Equal(t, TrialPaused, st.Trials[i].Progress.State)
	}
}

// Ended trials are cut into chunks by size too: with large parameters a
// chunk (and the state carried across continue-as-new) stays small.
func TestInlineCampaignCutsRecordChunksBySize(t *testing.T) {
	h := newInlineHarness(t, 3, 20*time.Millisecond)
	in := inlineSpec(6, 3)
	in.Tuning = &Tuning{RecordsBytes: 1} // every ended trial fills a chunk
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.Len(t, h.records, 6, "one chunk per trial")
	for _, r := range h.records {
		require.Len(t, r.Trials, 1)
	}
}

// The memo's snapshot drops leaderboard entries, worst first, to stay
// under MemoSnapshotMax: Temporal fails a workflow task whose memo is over
// 32 KB.
func TestCampaignSnapshotIsCapped(t *testing.T) {
	big := strings.Repeat("x", 3000) // a long architecture string
	var snap CampaignSnapshot
	for i := range 10 {
		snap.Leaderboard = append(snap.Leaderboard, LeaderboardEntry{TrialID: fmt.Sprintf("t%05d", i+1), Params: hpo.Params{"arch": hpo.String(big)}, Score: float64(i)})
	}
	capped := capSnapshot(snap, MemoSnapshotMax)
	require.LessOrEqual(t, jsonSize(capped), MemoSnapshotMax)
	require.NotEmpty(t, capped.Leaderboard)
	require.Less(t, len(capped.Leaderboard), 10)
	require.Equal(t, snap.Leaderboard[:len(capped.Leaderboard)], capped.Leaderboard, "the best entries stay")
	small := CampaignSnapshot{Leaderboard: snap.Leaderboard[:1]}
	require.Equal(t, small, capSnapshot(small, MemoSnapshotMax), "a small snapshot is kept whole")
}
