package workflows

import (
	"context"
	"errors"
	"fmt"
	enumspb "go.temporal.io/api/enums/v1"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// fakeTrainer stands in for RunTrial: every launch is recorded; a launch
// either completes after `completeAfter` samples' worth of work or runs
// until cancelled, when it returns a checkpoint named after its run.
type fakeTrainer struct {
	mu        sync.Mutex
	launches  []RunTrialInput
	behaviour func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) // result, error, block until cancelled
	// onCancel, when set, is what a blocked launch returns on cancellation.
	onCancel func(in RunTrialInput) (RunTrialResult, error)
}

func (f *fakeTrainer) run(ctx context.Context, in RunTrialInput) (RunTrialResult, error) {
	attempt := int(activity.GetInfo(ctx).Attempt)
	f.mu.Lock()
	f.launches = append(f.launches, in)
	f.mu.Unlock()
	res, err, block := f.behaviour(in, attempt)
	if !block {
		return res, err
	}
	<-ctx.Done()
	if f.onCancel != nil {
		return f.onCancel(in)
	}
	return RunTrialResult{Outcome: RunStopped, Samples: float64(100 * in.Run), Checkpoint: ckpt(in.Run), Attempt: attempt}, nil
}

func (f *fakeTrainer) calls() []RunTrialInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]RunTrialInput(nil), f.launches...)
}

func ckpt(run int) string { return "/ckpt/run-" + string(rune('0'+run)) }

// trialEnv is a test environment with the trial workflow, a fake trainer
// and recorded signals to the pool and the campaign.
type trialEnv struct {
	*testsuite.TestWorkflowEnvironment
	trainer   *fakeTrainer
	mu        sync.Mutex
	registers int
	lastReg   RegisterTrial
	poolSigs  []string
	profiles  []ThroughputProfile
	reports   []TrialReport
}

func newTrialEnv(t *testing.T, behaviour func(RunTrialInput, int) (RunTrialResult, error, bool)) *trialEnv {
	var s testsuite.WorkflowTestSuite
	e := &trialEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment(), trainer: &fakeTrainer{behaviour: behaviour}}
	e.RegisterWorkflowWithOptions(TrialWorkflow, workflow.RegisterOptions{Name: TrialWorkflowName})
	e.RegisterActivityWithOptions(e.trainer.run, activity.RegisterOptions{Name: RunTrialActivityName})
	e.RegisterActivityWithOptions(func(ctx context.Context, in RegisterTrialInput) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.registers++
		e.lastReg = in.Registration
		return nil
	}, activity.RegisterOptions{Name: RegisterTrialActivityName})
	e.OnSignalExternalWorkflow(mock.Anything, PoolWorkflowID("p"), "", mock.Anything, mock.Anything).Return(
		func(_, _, _, name string, arg interface{}) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.poolSigs = append(e.poolSigs, name)
			if p, ok := arg.(ThroughputProfile); ok {
				e.profiles = append(e.profiles, p)
			}
			return nil
		})
	e.OnSignalExternalWorkflow(mock.Anything, "campaign-wf", "", SignalTrialReport, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.reports = append(e.reports, arg.(TrialReport))
			return nil
		})
	e.SetTestTimeout(30 * time.Second)
	return e
}

func (e *trialEnv) assign(after time.Duration, epoch int64, nodes ...string) {
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalAssignment, Assignment{Epoch: epoch, Nodes: nodes})
	}, after)
}

// checkpointed sends what RunTrial forwards when the trainer of run
// reports a completed checkpoint.
func (e *trialEnv) checkpointed(after time.Duration, run int) {
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalProgress, Progress{Run: run, Attempt: 1, Samples: float64(100 * run), Checkpoint: ckpt(run)})
	}, after)
}

func (e *trialEnv) status(t *testing.T) TrialStatus {
	v, err := e.QueryWorkflow(QueryStatus)
	require.NoError(t, err)
	var s TrialStatus
	require.NoError(t, v.Get(&s))
	return s
}

func (e *trialEnv) result(t *testing.T) TrialReport {
	require.True(t, e.IsWorkflowCompleted())
	require.NoError(t, e.GetWorkflowError())
	var r TrialReport
	require.NoError(t, e.GetWorkflowResult(&r))
	return r
}

func trialInput() TrialInput {
	return TrialInput{
		TrialID: "t00001", Number: 1, CampaignID: "c", CampaignWorkflowID: "campaign-wf", Pool: "p",
		Params: hpo.Params{"lr": hpo.Float(0.1)}, Command: []string{"train"},
		MinNodes: 1, MaxNodes: 4, ObjectiveMetric: "loss", GracePeriod: time.Second, MaxRestarts: 2,
	}
}

func completes(samples float64) func(RunTrialInput, int) (RunTrialResult, error, bool) {
	return func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		return RunTrialResult{Outcome: RunCompleted, Samples: samples, Metrics: map[string]float64{"loss": 0.25}, Attempt: attempt}, nil, false
	}
}

func TestTrialRunsOnAssignmentAndCompletes(t *testing.T) {
	e := newTrialEnv(t, completes(1000))
	e.assign(time.Second, 1, "n1", "n2")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())

	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	require.True(t, r.Final)
	require.Equal(t, 0.25, r.Metrics["loss"])
	require.Equal(t, 1000.0, r.Samples)
	calls := e.trainer.calls()
	require.Len(t, calls, 1)
	require.Equal(t, []string{"n1", "n2"}, calls[0].Nodes)
	require.Empty(t, calls[0].ResumeFrom)
	require.Equal(t, 1, e.registers)
	require.Contains(t, e.poolSigs, SignalDeregisterTrial, "a finished trial gives its nodes back")
	require.NotEmpty(t, e.reports)
	require.True(t, e.reports[len(e.reports)-1].Final)
}

// A run that ends its trial sends no release of its own: the trial's
// deregistration, sent with its final report, frees the nodes (one
// signal and one round trip through the server fewer per trial). Nor is
// an assignment that finds nothing running confirmed when the pool says
// it waits for no node of the trial's; one from a pool that does not say
// so (an earlier build's, or one waiting) is.
func TestAFinishedTrialReleasesItsNodesByDeregistering(t *testing.T) {
	for _, tc := range []struct {
		noneAwaited bool
		want        []string
	}{
		{true, []string{SignalDeregisterTrial}},
		{false, []string{SignalReleased, SignalDeregisterTrial}},
	} {
		e := newTrialEnv(t, completes(1000))
		e.RegisterDelayedCallback(func() {
			e.SignalWorkflow(SignalAssignment, Assignment{Epoch: 1, Nodes: []string{"n1"}, NoReleaseAwaited: tc.noneAwaited})
		}, time.Second)
		e.ExecuteWorkflow(TrialWorkflowName, trialInput())

		require.Equal(t, TrialCompleted, e.result(t).State)
		require.Equal(t, tc.want, e.poolSigs, "none awaited: %v", tc.noneAwaited)
		// One final report (the test environment may record a progress
		// report sent in the same workflow task after it).
		finals := slices.DeleteFunc(slices.Clone(e.reports), func(r TrialReport) bool { return !r.Final })
		require.Len(t, finals, 1)
	}
}

// A trial whose run was stopped confirms it left the nodes when the run
// ends, and confirms a later assignment that finds it stopped unless the
// pool waits for nothing of it.
func TestATrialThatRanConfirmsAssignmentsWhileStopped(t *testing.T) {
	for _, noneAwaited := range []bool{false, true} {
		e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
			if in.Run == 1 {
				return RunTrialResult{}, nil, true // trains until preempted
			}
			return RunTrialResult{Outcome: RunCompleted, Samples: 1000, Metrics: map[string]float64{"loss": 0.25}, Attempt: attempt}, nil, false
		})
		at := func(after time.Duration, a Assignment) {
			e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalAssignment, a) }, after)
		}
		at(time.Second, Assignment{Epoch: 1, Nodes: []string{"n1"}, NoReleaseAwaited: true})
		at(3*time.Second, Assignment{Epoch: 2}) // preempted to 0 nodes
		at(5*time.Second, Assignment{Epoch: 3, Nodes: []string{"n1"}, NoReleaseAwaited: noneAwaited})
		e.ExecuteWorkflow(TrialWorkflowName, trialInput())

		require.Equal(t, TrialCompleted, e.result(t).State)
		require.Len(t, e.trainer.calls(), 2)
		// The preempted run's end; the assignment that found it stopped
		// unless nothing was awaited; the last run's end is the
		// deregistration.
		want := []string{SignalReleased, SignalReleased, SignalDeregisterTrial}
		if noneAwaited {
			want = []string{SignalReleased, SignalDeregisterTrial}
		}
		require.Equal(t, want, e.poolSigs, "none awaited: %v", noneAwaited)
	}
}

// A NAS trial tells the pool its architecture (its ArchParam's value),
// from which a worker's throughput model predicts its curve; a trial of a
// campaign without one tells none.
func TestTrialRegistersItsArchitecture(t *testing.T) {
	const arch = `{"cell":{"nodes":2,"edges":[["conv_3x3"]]}}`
	for _, tc := range []struct {
		param, want string
	}{{"arch", arch}, {"", ""}} {
		e := newTrialEnv(t, completes(1000))
		e.assign(time.Second, 1, "n1")
		in := trialInput()
		in.Params["arch"], in.ArchParam = hpo.String(arch), tc.param
		e.ExecuteWorkflow(TrialWorkflowName, in)
		e.result(t)
		require.Equal(t, tc.want, e.lastReg.Arch, "ArchParam %q", tc.param)
	}
	require.Equal(t, "net", archParam(hpo.Space{{Name: "lr", Type: hpo.ParamFloat}, {Name: "net", Type: hpo.ParamArch}}))
	require.Empty(t, archParam(hpo.Space{{Name: "lr", Type: hpo.ParamFloat}}))
}

// A trial moved to another node type at the same count tells the pool
// what it measures there, even when the rate is within profileChange of
// the other type's: the pool keeps a profile per count and type. (The
// sent estimates were keyed by count alone, so the pool never learnt the
// second type.)
func TestTrialSendsProfilePerNodeType(t *testing.T) {
	e := newTrialEnv(t, func(RunTrialInput, int) (RunTrialResult, error, bool) { return RunTrialResult{}, nil, true })
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	progress := func(run int, from time.Duration) {
		for i := 0; i < 8; i++ {
			i := i
			e.RegisterDelayedCallback(func() {
				e.SignalWorkflow(SignalProgress, Progress{Run: run, Attempt: 1, Nodes: 1, Samples: float64(1000*run + 200*i),
					Time: base.Add(from + time.Duration(i)*time.Second)})
			}, from+time.Duration(i+1)*100*time.Millisecond)
		}
	}
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalAssignment, Assignment{Epoch: 1, Nodes: []string{"k1"}, NodeType: "k80"})
	}, time.Second)
	progress(1, time.Second)
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalAssignment, Assignment{Epoch: 2, Nodes: []string{"v1"}, NodeType: "v100"})
	}, 3*time.Second)
	progress(2, 5*time.Second)
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalControl, Control{Action: ControlStop}) }, 8*time.Second)
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	require.Equal(t, TrialStopped, e.result(t).State)
	types := map[string]bool{}
	for _, p := range e.profiles {
		require.Equal(t, 1, p.Nodes)
		types[p.NodeType] = true
	}
	require.Equal(t, map[string]bool{"k80": true, "v100": true}, types, "profiles sent: %+v", e.profiles)
}

// A trial waits at 0 nodes until it has at least MinNodes.
func TestTrialWaitsForMinNodes(t *testing.T) {
	e := newTrialEnv(t, completes(10))
	in := trialInput()
	in.MinNodes = 2
	e.assign(time.Second, 1, "n1")
	e.RegisterDelayedCallback(func() {
		assert.Empty(t, e.trainer.calls(), "one node is below min_nodes")
		assert.Equal(t, TrialPending, e.status(t).State)
	}, 2*time.Second)
	e.assign(3*time.Second, 2, "n1", "n2")
	e.ExecuteWorkflow(TrialWorkflowName, in)
	require.Equal(t, TrialCompleted, e.result(t).State)
	require.Len(t, e.trainer.calls(), 1)
}

// Resize up, then down: each change stops the run (checkpoint) and
// relaunches it on the new nodes from that checkpoint.
func TestTrialResizesUpAndDown(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if in.Run == 3 {
			return RunTrialResult{Outcome: RunCompleted, Samples: 999, Attempt: attempt}, nil, false
		}
		return RunTrialResult{}, nil, true
	})
	e.assign(time.Second, 1, "n1")
	e.checkpointed(1500*time.Millisecond, 1)
	e.assign(2*time.Second, 2, "n1", "n2", "n3")
	e.checkpointed(2500*time.Millisecond, 2)
	e.assign(3*time.Second, 3, "n1", "n2")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())

	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	require.Equal(t, 2, r.Rescales)
	calls := e.trainer.calls()
	require.Len(t, calls, 3)
	require.Equal(t, []string{"n1"}, calls[0].Nodes)
	require.Equal(t, []string{"n1", "n2", "n3"}, calls[1].Nodes)
	require.Equal(t, ckpt(1), calls[1].ResumeFrom, "resumes from the checkpoint of the stopped run")
	require.Equal(t, []string{"n1", "n2"}, calls[2].Nodes)
	require.Equal(t, ckpt(2), calls[2].ResumeFrom)
}

// Nodes taken back: the trial checkpoints, waits at 0 nodes (paused), and
// resumes from the checkpoint when nodes come back; that is a start, not a
// rescale.
func TestTrialPreemptedToZeroAndResumed(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if in.Run == 2 {
			return RunTrialResult{Outcome: RunCompleted, Samples: 500, Attempt: attempt}, nil, false
		}
		return RunTrialResult{}, nil, true
	})
	e.assign(time.Second, 1, "n1", "n2")
	e.checkpointed(1500*time.Millisecond, 1)
	e.assign(2*time.Second, 2)
	e.RegisterDelayedCallback(func() {
		s := e.status(t)
		assert.Equal(t, TrialPaused, s.State)
		assert.Equal(t, ckpt(1), s.Checkpoint)
		assert.Empty(t, s.Nodes)
	}, 3*time.Second)
	e.assign(4*time.Second, 3, "n7")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())

	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	require.Equal(t, 0, r.Rescales, "a resume after 0 nodes is a start")
	calls := e.trainer.calls()
	require.Len(t, calls, 2)
	require.Equal(t, []string{"n7"}, calls[1].Nodes)
	require.Equal(t, ckpt(1), calls[1].ResumeFrom)
}

// A stale assignment (older epoch) is ignored.
func TestTrialIgnoresStaleAssignment(t *testing.T) {
	e := newTrialEnv(t, completes(1))
	e.assign(time.Second, 5, "n1")
	e.assign(time.Second+time.Millisecond, 4, "n1", "n2")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	e.result(t)
	require.Equal(t, []string{"n1"}, e.trainer.calls()[0].Nodes)
}

func TestTrialStopUpdate(t *testing.T) {
	e := newTrialEnv(t, func(RunTrialInput, int) (RunTrialResult, error, bool) { return RunTrialResult{}, nil, true })
	e.assign(time.Second, 1, "n1")
	e.checkpointed(1500*time.Millisecond, 1)
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(UpdateStop, "stop-1", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { t.Errorf("stop rejected: %v", err) },
			OnAccept:   func() {},
			OnComplete: func(any, error) {},
		}, ControlRequest{Reason: "test"})
	}, 2*time.Second)
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	r := e.result(t)
	require.Equal(t, TrialStopped, r.State)
	require.Equal(t, ckpt(1), e.status(t).Checkpoint, "the stopped run's checkpoint is kept")
}

// Pause releases the nodes at the pool; resume registers again and the
// trial continues from its checkpoint. The validators reject a second
// pause and a resume of a running trial.
func TestTrialPauseResumeUpdates(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if in.Run == 2 {
			return RunTrialResult{Outcome: RunCompleted, Samples: 1, Attempt: attempt}, nil, false
		}
		return RunTrialResult{}, nil, true
	})
	var rejected []string
	n := 0
	update := func(name string) {
		n++
		e.UpdateWorkflow(name, fmt.Sprintf("%s-%d", name, n), &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { rejected = append(rejected, name+": "+err.Error()) },
			OnAccept:   func() {},
			OnComplete: func(any, error) {},
		}, ControlRequest{})
	}
	e.assign(time.Second, 1, "n1")
	e.checkpointed(1200*time.Millisecond, 1)
	e.RegisterDelayedCallback(func() { update(UpdateResume) }, 1500*time.Millisecond) // running: rejected
	e.RegisterDelayedCallback(func() { update(UpdatePause) }, 2*time.Second)
	e.RegisterDelayedCallback(func() { update(UpdatePause) }, 2500*time.Millisecond) // already paused: rejected
	e.RegisterDelayedCallback(func() {
		assert.Equal(t, TrialPaused, e.status(t).State)
		update(UpdateResume)
	}, 3*time.Second)
	e.assign(4*time.Second, 2, "n2")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())

	require.Equal(t, TrialCompleted, e.result(t).State)
	require.Len(t, rejected, 2, "%v", rejected)
	require.Contains(t, rejected[0], "is not paused")
	require.Contains(t, rejected[1], "already paused")
	require.Equal(t, 2, e.registers, "registered again on resume")
	require.Contains(t, e.poolSigs, SignalDeregisterTrial)
	calls := e.trainer.calls()
	require.Len(t, calls, 2)
	require.Equal(t, ckpt(1), calls[1].ResumeFrom)
}

// A trainer that keeps failing is retried MaxRestarts times, then the
// trial fails with the trainer's error: its final report says so, and its
// workflow fails (red in the UI) with the report as details.
func TestTrialFailsAfterBoundedRetries(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		// RunTrial's contract: Failures counts the run's trainer
		// failures; the one past max_restarts is not retryable.
		res := RunTrialResult{Failures: attempt}
		if attempt > in.Trial.MaxRestarts {
			return res, temporal.NewNonRetryableApplicationError("trainer exited with exit code 3", "TrainerFailed", nil, res), false
		}
		return res, temporal.NewApplicationError("trainer exited with exit code 3", "TrainerFailed", res), false
	})
	e.assign(time.Second, 1, "n1")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	require.True(t, e.IsWorkflowCompleted())
	var app *temporal.ApplicationError
	require.ErrorAs(t, e.GetWorkflowError(), &app)
	require.Equal(t, ErrTypeTrialFailed, app.Type())
	var r TrialReport
	require.NoError(t, app.Details(&r))
	require.Equal(t, TrialFailed, r.State)
	require.Contains(t, r.Error, "exit code 3")
	require.Equal(t, 2, r.Restarts)
	require.Len(t, e.trainer.calls(), 3, "1 attempt + MaxRestarts 2")
	require.True(t, e.reports[len(e.reports)-1].Final)
	require.Equal(t, TrialFailed, e.reports[len(e.reports)-1].State)
}

// A failure that a retry cures: the trial completes and counts the restart
// (Failures comes back in the error's details and the result).
func TestTrialRetryCures(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if attempt == 1 {
			return RunTrialResult{}, temporal.NewApplicationError("crash", "TrainerFailed", RunTrialResult{Failures: 1}), false
		}
		return RunTrialResult{Outcome: RunCompleted, Samples: 7, Attempt: attempt, Failures: 1}, nil, false
	})
	e.assign(time.Second, 1, "n1")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	require.Equal(t, 1, r.Restarts)
}

// Retries after a lost worker or server (the activity's attempt timed
// out: no trainer failure recorded) are not restarts, and do not use up
// max_restarts: a run survives more of them than MaxRestarts.
func TestTrialFaultRetriesAreNotRestarts(t *testing.T) {
	faults := 5 // > MaxRestarts (2)
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if attempt <= faults {
			return RunTrialResult{}, temporal.NewApplicationError("activity heartbeat timeout", "Lost"), false
		}
		return RunTrialResult{Outcome: RunCompleted, Samples: 7, Attempt: attempt, Metrics: map[string]float64{"loss": 0.5}}, nil, false
	})
	e.assign(time.Second, 1, "n1")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	require.Zero(t, r.Restarts)
	require.False(t, r.ObjectiveMissing)
	require.Len(t, e.trainer.calls(), faults+1)
}

// A trial that finishes without ever reporting the objective metric is
// marked in its final report and warned about in its details.
func TestTrialObjectiveMissing(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		return RunTrialResult{Outcome: RunCompleted, Samples: 7, Attempt: attempt, Metrics: map[string]float64{"val_loss": 0.5}}, nil, false
	})
	e.assign(time.Second, 1, "n1")
	in := trialInput()
	in.ObjectiveMetric = "valloss"
	e.ExecuteWorkflow(TrialWorkflowName, in)
	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	require.True(t, r.ObjectiveMissing)
	require.Equal(t, map[string]float64{"val_loss": 0.5}, r.Metrics)
	require.True(t, e.reports[len(e.reports)-1].ObjectiveMissing)
}

// An invalid trial fails at once with an error naming the field.
func TestTrialInvalidInput(t *testing.T) {
	e := newTrialEnv(t, completes(1))
	in := trialInput()
	in.MinNodes, in.MaxNodes = 3, 2
	e.ExecuteWorkflow(TrialWorkflowName, in)
	require.True(t, e.IsWorkflowCompleted())
	err := e.GetWorkflowError()
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	require.Equal(t, ErrTypeInvalidTrial, app.Type())
	require.Contains(t, err.Error(), "min_nodes 3 > max_nodes 2")
}

// Past the history threshold a running trial stops its trainer at a
// checkpoint and continues as new, carrying its progress; the new run
// resumes from that checkpoint.
func TestTrialContinuesAsNew(t *testing.T) {
	e := newTrialEnv(t, func(RunTrialInput, int) (RunTrialResult, error, bool) { return RunTrialResult{}, nil, true })
	e.assign(time.Second, 1, "n1")
	for i := 0; i < 20; i++ {
		at := time.Second + time.Duration(i+1)*100*time.Millisecond
		samples := float64(10 * (i + 1))
		e.RegisterDelayedCallback(func() {
			e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Nodes: 1, Samples: samples, Time: time.Unix(int64(samples), 0), Checkpoint: ckpt(1)})
		}, at)
	}
	e.RegisterDelayedCallback(func() { e.SetCurrentHistoryLength(TrialHistoryThreshold + 1) }, 3*time.Second)
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Samples: 250}) }, 3100*time.Millisecond)
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	require.True(t, e.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(e.GetWorkflowError(), &can), "got %v", e.GetWorkflowError())
	var next TrialInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Equal(t, ckpt(1), next.State.Checkpoint)
	require.GreaterOrEqual(t, next.State.Samples, 100.0)

	// The continued run resumes from the checkpoint.
	e2 := newTrialEnv(t, completes(5000))
	e2.assign(time.Second, 1, "n4")
	e2.ExecuteWorkflow(TrialWorkflowName, next)
	require.Equal(t, TrialCompleted, e2.result(t).State)
	require.Equal(t, ckpt(1), e2.trainer.calls()[0].ResumeFrom)
	// Runs are numbered over the trial's life: the continued run's first
	// launch is run 2, never run 1 again (its directory, reports and
	// checkpoints are run 1's).
	require.Equal(t, 1, next.State.Runs)
	require.Equal(t, 2, e2.trainer.calls()[0].Run)
}

// Progress feeds the JPA: once past warm-up the trial tells the pool its
// throughput.
func TestTrialSendsProfileToPool(t *testing.T) {
	e := newTrialEnv(t, func(RunTrialInput, int) (RunTrialResult, error, bool) { return RunTrialResult{}, nil, true })
	e.assign(time.Second, 1, "n1", "n2")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 8; i++ {
		i := i
		e.RegisterDelayedCallback(func() {
			e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Nodes: 2, Samples: float64(200 * i), Time: base.Add(time.Duration(i) * time.Second),
				Metrics: map[string]float64{"loss": 1 / float64(i+1)}})
		}, time.Second+time.Duration(i+1)*100*time.Millisecond)
	}
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalControl, Control{Action: ControlStop})
	}, 3*time.Second)
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	require.Equal(t, TrialStopped, e.result(t).State)
	require.Contains(t, e.poolSigs, SignalProfile)
	s := e.status(t)
	require.NotEmpty(t, s.History, "objective history kept")
}

// The worker is lost while a run is being stopped (a resize): the server
// does not retry an activity whose cancellation was requested, it times
// it out. That is a stop, not a failure: the trial relaunches on its new
// nodes and completes.
func TestTrialLostWorkerDuringStopIsNotAFailure(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if in.Run == 1 {
			return RunTrialResult{}, nil, true
		}
		return RunTrialResult{Outcome: RunCompleted, Samples: 500, Metrics: map[string]float64{"loss": 0.1}}, nil, false
	})
	e.trainer.onCancel = func(RunTrialInput) (RunTrialResult, error) {
		return RunTrialResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
	}
	e.assign(time.Second, 1, "n1")
	e.assign(3*time.Second, 2, "n2")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State, r.Error)
	require.Zero(t, r.Restarts)
	calls := e.trainer.calls()
	require.Len(t, calls, 2)
	require.Equal(t, []string{"n2"}, calls[1].Nodes)
	require.NotEmpty(t, calls[0].Owner, "launches name the trial's workflow chain")
	require.Equal(t, calls[0].Owner, calls[1].Owner)
}

// A run's input carries the predicted metrics of the assignment it runs
// on (what a run on an agent host reports); a new assignment's replace
// them.
func TestTrialRunCarriesAssignedPredictions(t *testing.T) {
	e := newTrialEnv(t, completes(10))
	pred := map[string]float64{gleaner.MetricPredictedThroughput: 250, gleaner.MetricPredictedLatency: 4}
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(SignalAssignment, Assignment{Epoch: 1, Nodes: []string{"n1"}, PredictedMetrics: pred})
	}, time.Second)
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	require.Equal(t, TrialCompleted, e.result(t).State)
	calls := e.trainer.calls()
	require.Len(t, calls, 1)
	require.Equal(t, pred, calls[0].PredictedMetrics)
}
