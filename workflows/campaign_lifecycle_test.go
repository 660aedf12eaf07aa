package workflows

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// updateResult records what one update did.
type updateResult struct {
	accepted bool
	err      error
	status   CampaignStatus
}

func update(env *testsuite.TestWorkflowEnvironment, name string, r *updateResult) {
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept: func() { r.accepted = true },
		OnReject: func(err error) { r.err = err },
		OnComplete: func(v interface{}, err error) {
			if err != nil {
				r.err = err
				return
			}
			r.status = v.(CampaignStatus)
		},
	}, ControlRequest{Reason: "test"})
}

func TestCampaignPauseResumeStop(t *testing.T) {
	f := newFakeTrials(func(in TrialInput) fakeRun {
		return fakeRun{Reports: 3, Every: 10 * time.Second, Score: scoreOf(in.Params)}
	})
	env := newEnv(f)
	checkWindow(t, env, 4, 5*time.Minute)
	var (
		pause, pauseAgain, resumeRunning, resume, resumeAgain, stop, stopAgain, pauseStopping updateResult
		startedAtPause, startedDuringPause                                                    int
		statusPaused                                                                          CampaignStatus
	)
	env.RegisterDelayedCallback(func() { update(env, UpdateResume, &resumeRunning) }, 5*time.Second)
	env.RegisterDelayedCallback(func() {
		update(env, UpdatePause, &pause)
		update(env, UpdatePause, &pauseAgain)
		startedAtPause = f.started()
	}, 15*time.Second)
	env.RegisterDelayedCallback(func() {
		statusPaused = queryStatus(t, env)
		startedDuringPause = f.started()
		update(env, UpdateResume, &resume)
		update(env, UpdateResume, &resumeAgain)
	}, 3*time.Minute)
	env.RegisterDelayedCallback(func() {
		update(env, UpdateStop, &stop)
		update(env, UpdateStop, &stopAgain)
		update(env, UpdatePause, &pauseStopping)
	}, 4*time.Minute)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: testSpec(100, 4)})

	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		r        updateResult
		rejected string // "" when it must be accepted
		state    CampaignPhase
	}{
		{"resume while running", resumeRunning, "is not paused: it is running", ""},
		{"pause", pause, "", CampaignPaused},
		{"pause again", pauseAgain, "already paused", ""},
		{"resume", resume, "", CampaignRunning},
		{"resume again", resumeAgain, "is not paused", ""},
		{"stop", stop, "", CampaignStopping},
		{"stop again", stopAgain, "already stopping", ""},
		{"pause while stopping", pauseStopping, "cannot pause: it is stopping", ""},
	} {
		switch {
		case c.rejected == "" && (!c.r.accepted || c.r.err != nil || c.r.status.State != c.state):
			t.Errorf("%s: accepted=%v err=%v state=%s, want accepted, state %s", c.name, c.r.accepted, c.r.err, c.r.status.State, c.state)
		case c.rejected != "" && (c.r.accepted || c.r.err == nil || !strings.Contains(c.r.err.Error(), c.rejected)):
			t.Errorf("%s: accepted=%v err=%v, want rejected with %q", c.name, c.r.accepted, c.r.err, c.rejected)
		}
	}
	if statusPaused.State != CampaignPaused || statusPaused.Reason != "test" {
		t.Errorf("status while paused %+v", statusPaused)
	}
	if startedDuringPause != startedAtPause {
		t.Errorf("%d trials started while paused", startedDuringPause-startedAtPause)
	}
	paused, resumed, stopped := 0, 0, 0
	for _, acts := range f.controls {
		for _, a := range acts {
			switch a {
			case ControlPause:
				paused++
			case ControlResume:
				resumed++
			case ControlStop:
				stopped++
			}
		}
	}
	if paused != 4 || resumed != 4 || stopped != 4 {
		t.Errorf("controls sent: %d pause, %d resume, %d stop; want 4 each (the window)", paused, resumed, stopped)
	}
	if res.State != CampaignStopped || res.Stopped != 4 || res.Created >= 100 || res.Ended() != res.Created || res.Reason != "test" {
		t.Errorf("result %+v: want stopped, 4 trials stopped, all ended", res)
	}
	if s := queryStatus(t, env); s.State != CampaignStopped || s.Running != 0 {
		t.Errorf("status after stop %+v", s)
	}
}

// continued runs the first part of a 24-trial campaign until it continues
// as new, checks the carried input and returns it.
func continued(t *testing.T) (CampaignInput, *fakeTrials) {
	t.Helper()
	return continuedWith(t, testSpec(24, 4), steadyScript)
}

// continuedWith is continued with another spec (24 trials, 4 at once) and
// trial script.
func continuedWith(t *testing.T, spec gleaner.CampaignSpec, script func(TrialInput) fakeRun) (CampaignInput, *fakeTrials) {
	t.Helper()
	f := newFakeTrials(script)
	env := newEnv(f)
	env.RegisterDelayedCallback(func() { env.SetCurrentHistoryLength(500) }, 35*time.Second)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec, HistoryThreshold: 400})

	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != CampaignWorkflowName {
		t.Errorf("continued as %q, want %q", can.WorkflowType.Name, CampaignWorkflowName)
	}
	var in CampaignInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	st := in.State
	if st == nil || len(st.Searcher) == 0 || st.Runs != 1 || in.HistoryThreshold != 400 {
		t.Fatalf("carried input %+v, want state with a searcher snapshot, runs 1, threshold 400", in)
	}
	if st.Counts.Created == 0 || st.Counts.Created >= 24 || len(st.InFlight) == 0 || len(st.InFlight) > 4 ||
		st.NextNumber != st.Counts.Created+1 || st.Counts.Ended()+len(st.InFlight) != st.Counts.Created {
		t.Fatalf("carried state %+v: want a partial, consistent campaign", st)
	}
	for _, tr := range st.InFlight {
		if !tr.Started {
			t.Errorf("in-flight trial %s carried before it started", tr.TrialID)
		}
	}
	return in, f
}

// endCarriedTrials has the trials a campaign carried in flight across
// continue-as-new (st) report their end to its next run, one a second.
func endCarriedTrials(env *testsuite.TestWorkflowEnvironment, st *CampaignState) {
	for i, tr := range st.InFlight {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalTrialReport, TrialReport{TrialID: tr.TrialID, WorkflowID: tr.WorkflowID, Number: tr.Number,
				Params: tr.Params, State: TrialCompleted, Final: true, Samples: 500,
				Metrics: map[string]float64{"loss": scoreOf(tr.Params)}})
		}, time.Duration(i+1)*time.Second)
	}
}

func TestCampaignContinueAsNew(t *testing.T) {
	in, f := continued(t)
	st := in.State

	// The next run: the abandoned in-flight trials of the first run report
	// their end to it; new trials are numbered on.
	f2 := newFakeTrials(steadyScript)
	env2 := newEnv(f2)
	endCarriedTrials(env2, st)
	env2.ExecuteWorkflow(CampaignWorkflowName, in)
	var res CampaignResult
	if err := env2.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := (CampaignCounts{Created: 24, Completed: 24}); res.State != CampaignCompleted || res.CampaignCounts != want {
		t.Errorf("result %s %+v, want completed %+v", res.State, res.CampaignCounts, want)
	}
	all := &fakeTrials{inputs: append(append([]TrialInput{}, f.inputs...), f2.inputs...)}
	if got, want := strings.Join(gotLeaderboard(res.Leaderboard), " "), strings.Join(wantLeaderboard(all, nil, 10), " "); got != want {
		t.Errorf("leaderboard across runs\n got %s\nwant %s", got, want)
	}
	sort.Slice(all.inputs, func(i, j int) bool { return all.inputs[i].Number < all.inputs[j].Number })
	if len(all.inputs) != 24 {
		t.Errorf("%d trials started across runs, want 24", len(all.inputs))
	}
	for i, in := range all.inputs {
		if in.Number != i+1 || in.TrialID != fmt.Sprintf("t%05d", i+1) {
			t.Errorf("trial %d: number %d id %s, want consecutive", i, in.Number, in.TrialID)
		}
	}
	if s := queryStatus(t, env2); s.Runs != 1 || s.State != CampaignCompleted {
		t.Errorf("status %+v, want completed in run 2", s)
	}
}

func TestCampaignInvalidSpec(t *testing.T) {
	for _, c := range []struct {
		edit func(*gleaner.CampaignSpec)
		want string
	}{
		{func(s *gleaner.CampaignSpec) { s.Budget.MaxTrials = 0 }, "budget.max_trials"},
		{func(s *gleaner.CampaignSpec) { s.Objective.Metric = "" }, "objective.metric"},
		{func(s *gleaner.CampaignSpec) { s.Search.Algorithm = "hyperopt" }, "search.algorithm"},
		{func(s *gleaner.CampaignSpec) { s.Space[0].Max = -10 }, `parameter "x"`},
	} {
		env := newEnv(newFakeTrials(steadyScript))
		spec := testSpec(5, 2)
		c.edit(&spec)
		env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})
		var appErr *temporal.ApplicationError
		err := env.GetWorkflowError()
		if !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidSpec || !appErr.NonRetryable() ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want a non-retryable %s naming %s", err, ErrTypeInvalidSpec, c.want)
		}
	}
}

// A trial of an earlier run that closed without its final report is found
// out when a control to it fails, and counted as failed: stop still ends.
func TestCampaignLostTrialsAfterContinueAsNew(t *testing.T) {
	in, _ := continued(t)
	env := newEnv(newFakeTrials(steadyScript))
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, SignalControl, mock.Anything).
		Return(errors.New("unknown external workflow execution"))
	var stop updateResult
	env.RegisterDelayedCallback(func() { update(env, UpdateStop, &stop) }, time.Second)
	env.ExecuteWorkflow(CampaignWorkflowName, in)
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := in.State.Counts
	want.Failed += len(in.State.InFlight)
	if !stop.accepted || res.State != CampaignStopped || res.CampaignCounts != want {
		t.Errorf("stop accepted=%v, result %s %+v, want stopped %+v", stop.accepted, res.State, res.CampaignCounts, want)
	}
}

// search.warm_start: the campaign reads the earlier campaigns' trials
// (activity WarmStart) once, before its searcher exists, and its status
// says how many it started from; a campaign that does not exist fails it
// as an invalid spec naming the field.
func TestCampaignWarmStart(t *testing.T) {
	spec := testSpec(4, 2)
	spec.Search.Algorithm = hpo.AlgorithmTPE
	spec.Search.WarmStart = []string{"earlier"}
	obs := []hpo.Observation{
		{Params: hpo.Params{"x": hpo.Float(1), "layers": hpo.Float(2), "opt": hpo.String("a")}, Metric: 0.5},
		{Params: hpo.Params{"x": hpo.Float(-3), "layers": hpo.Float(1), "opt": hpo.String("b")}, Metric: 2, Stopped: true},
	}
	env := newEnv(newFakeTrials(steadyScript))
	var got WarmStartInput
	calls := 0
	env.RegisterActivityWithOptions(func(_ context.Context, in WarmStartInput) (WarmStartResult, error) {
		calls++
		got = in
		return WarmStartResult{Observations: obs, Taken: map[string]int{"earlier": 2}, Skipped: map[string]int{"earlier": 1}}, nil
	}, activity.RegisterOptions{Name: WarmStartActivityName})
	var status CampaignStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryStatus)
		if err == nil {
			_ = v.Get(&status)
		}
	}, time.Second)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || got.Metric != "loss" || len(got.Campaigns) != 1 || got.Campaigns[0] != "earlier" || len(got.Space) != 3 {
		t.Errorf("WarmStart called %d times with %+v", calls, got)
	}
	if status.WarmStarted != 2 || res.Completed != 4 {
		t.Errorf("status warm_started %d, result %+v", status.WarmStarted, res.CampaignCounts)
	}

	env = newEnv(newFakeTrials(steadyScript))
	env.RegisterActivityWithOptions(func(_ context.Context, in WarmStartInput) (WarmStartResult, error) {
		return WarmStartResult{}, temporal.NewNonRetryableApplicationError(`search.warm_start[0]: campaign "earlier" not found`, ErrTypeInvalidSpec, nil)
	}, activity.RegisterOptions{Name: WarmStartActivityName})
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidSpec || !strings.Contains(err.Error(), "search.warm_start[0]") {
		t.Errorf("unknown campaign: %v, want an invalid spec naming search.warm_start[0]", err)
	}
}
