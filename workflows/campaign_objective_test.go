package workflows

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// warnLog records the messages logged at warn level.
type warnLog struct {
	mu    sync.Mutex
	warns []string
}

func (l *warnLog) Debug(string, ...interface{}) {}
func (l *warnLog) Info(string, ...interface{})  {}
func (l *warnLog) Error(string, ...interface{}) {}
func (l *warnLog) Warn(msg string, _ ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warns = append(l.warns, msg)
}

func (l *warnLog) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, w := range l.warns {
		if w == msg {
			n++
		}
	}
	return n
}

// newLoggedEnv is newEnv with the workflows' warnings recorded.
func newLoggedEnv(f *fakeTrials) (*testsuite.TestWorkflowEnvironment, *warnLog) {
	l := &warnLog{}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.Logger(l))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(CampaignWorkflow, workflow.RegisterOptions{Name: CampaignWorkflowName})
	env.RegisterWorkflowWithOptions(f.trial, workflow.RegisterOptions{Name: TrialWorkflowName})
	return env, l
}

func queryDetails(t *testing.T, env *testsuite.TestWorkflowEnvironment) string {
	t.Helper()
	v, err := env.QueryWorkflow("__temporal_workflow_metadata")
	if err != nil {
		t.Fatal(err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatal(err)
	}
	return md.GetCurrentDetails()
}

const missedLog = "a trial finished without reporting the objective metric"

// objective.metric: valloss while the trainer reports val_loss: the
// campaign still completes, but says so from the first finished trial on.
func TestCampaignObjectiveMissingWarns(t *testing.T) {
	f := newFakeTrials(func(in TrialInput) fakeRun {
		r := steadyScript(in)
		r.Metric = "val_loss"
		return r
	})
	env, logged := newLoggedEnv(f)
	var before, after CampaignStatus
	var detailsAfter string
	// Trials 1–3 start at once; t00001 ends first, after 3 reports (30 s).
	env.RegisterDelayedCallback(func() { before = queryStatus(t, env) }, 25*time.Second)
	env.RegisterDelayedCallback(func() {
		after = queryStatus(t, env)
		detailsAfter = queryDetails(t, env)
	}, 35*time.Second)
	spec := testSpec(12, 3)
	spec.Objective.Metric = "valloss"
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})

	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if len(before.Warnings) != 0 || before.ObjectiveMissing != 0 {
		t.Errorf("before any trial ended: warnings %q, %d missing; want none", before.Warnings, before.ObjectiveMissing)
	}
	want1 := `1 of 1 finished trials never reported objective metric "valloss" (t00001); they reported: val_loss (did you mean "val_loss"?)`
	if after.ObjectiveMissing != 1 || len(after.Warnings) != 1 || after.Warnings[0] != want1 {
		t.Errorf("after the first trial: %d missing, warnings %q\nwant 1, %q", after.ObjectiveMissing, after.Warnings, want1)
	}
	if !strings.Contains(detailsAfter, `**Warning:** 1 of 1 finished trials never reported objective metric "valloss" (t00001); they reported: val\_loss (did you mean "val\_loss"?)`) {
		t.Errorf("details after the first trial:\n%s", detailsAfter)
	}

	want := CampaignCounts{Created: 12, Completed: 12, ObjectiveMissing: 12}
	if res.State != CampaignCompleted || res.CampaignCounts != want || res.Best != nil || len(res.Leaderboard) != 0 {
		t.Errorf("result %s %+v best %v leaderboard %d, want completed %+v, nothing ranked",
			res.State, res.CampaignCounts, res.Best, len(res.Leaderboard), want)
	}
	s := queryStatus(t, env)
	if len(s.Warnings) != 1 || len(res.Warnings) != 1 || s.Warnings[0] != res.Warnings[0] {
		t.Fatalf("warnings: status %q, result %q; want one, the same", s.Warnings, res.Warnings)
	}
	for _, part := range []string{
		`12 of 12 finished trials never reported objective metric "valloss" (t00001, `, `, …); `,
		`they reported: val_loss (did you mean "val_loss"?)`,
	} {
		if !strings.Contains(s.Warnings[0], part) {
			t.Errorf("warning %q lacks %q", s.Warnings[0], part)
		}
	}
	details := queryDetails(t, env)
	if !strings.Contains(details, "**Warning:** 12 of 12 finished trials") || !strings.Contains(details, "No trial has reported valloss yet.") {
		t.Errorf("details:\n%s", details)
	}
	if n := logged.count(missedLog); n != 1 {
		t.Errorf("logged %q %d times, want once", missedLog, n)
	}
}

// 50 trials of /bin/true: they complete without a single report line.
func TestCampaignObjectiveMissingSilentTrainer(t *testing.T) {
	f := newFakeTrials(func(in TrialInput) fakeRun { return fakeRun{Silent: true} })
	env := newEnv(f)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: testSpec(50, 8)})
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := (CampaignCounts{Created: 50, Completed: 50, ObjectiveMissing: 50}); res.CampaignCounts != want {
		t.Errorf("counts %+v, want %+v", res.CampaignCounts, want)
	}
	s := queryStatus(t, env)
	if len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0], `50 of 50 finished trials never reported objective metric "loss" (t000`) ||
		!strings.HasSuffix(s.Warnings[0], `, …) and reported no metrics at all: does the trainer append JSON lines to $GLEANER_REPORT_FILE? (see docs/protocol.md)`) {
		t.Errorf("warnings %q", s.Warnings)
	}
	if d := queryDetails(t, env); !strings.Contains(d, `$GLEANER\_REPORT\_FILE`) {
		t.Errorf("details:\n%s", d)
	}
}

// Some trials report the objective, some do not: the leaderboard has the
// first, the warning counts the others, with no far-fetched suggestion.
func TestCampaignObjectiveMissingSome(t *testing.T) {
	missing := func(in TrialInput) bool { return in.Number%3 == 0 }
	f := newFakeTrials(func(in TrialInput) fakeRun {
		r := steadyScript(in)
		if missing(in) {
			r.Metric = "val_loss"
		}
		return r
	})
	env := newEnv(f)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: testSpec(12, 3)})
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := (CampaignCounts{Created: 12, Completed: 12, ObjectiveMissing: 4}); res.CampaignCounts != want {
		t.Errorf("counts %+v, want %+v", res.CampaignCounts, want)
	}
	if got, want := strings.Join(gotLeaderboard(res.Leaderboard), " "), strings.Join(wantLeaderboard(f, missing, 10), " "); got != want {
		t.Errorf("leaderboard\n got %s\nwant %s", got, want)
	}
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], `4 of 12 finished trials never reported objective metric "loss" (t00003, `) ||
		!strings.HasSuffix(res.Warnings[0], "; they reported: val_loss") {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// Trials stopped before their first report had no chance to report the
// objective: no warning.
func TestCampaignObjectiveStoppedEarlyIsNoWarning(t *testing.T) {
	f := newFakeTrials(func(in TrialInput) fakeRun {
		return fakeRun{Reports: 5, Every: time.Minute, Score: scoreOf(in.Params), Metric: "val_loss"}
	})
	env := newEnv(f)
	var stop updateResult
	env.RegisterDelayedCallback(func() { update(env, UpdateStop, &stop) }, 10*time.Second)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: testSpec(12, 3)})
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if !stop.accepted || res.State != CampaignStopped || res.Stopped != 3 || res.ObjectiveMissing != 0 || len(res.Warnings) != 0 {
		t.Errorf("result %+v: want stopped, 3 trials stopped, no warning", res)
	}
}

// The count and what the campaign remembers of the trials survive
// continue-as-new, and the warning goes on counting in the next run.
func TestCampaignObjectiveMissingContinueAsNew(t *testing.T) {
	script := func(in TrialInput) fakeRun {
		r := steadyScript(in)
		r.Metric = fmt.Sprintf("val_loss_%d", in.Number%2)
		return r
	}
	spec := testSpec(24, 4)
	spec.Objective.Metric = "val_loss"
	in, _ := continuedWith(t, spec, script)
	st := in.State
	if st.Counts.ObjectiveMissing == 0 || st.Counts.ObjectiveMissing != st.Counts.Completed || st.Missed == nil ||
		len(st.Missed.Trials) == 0 || len(st.Missed.Metrics) == 0 {
		t.Fatalf("carried counts %+v, missed %+v: want the trials without the objective", st.Counts, st.Missed)
	}

	env, logged := newLoggedEnv(newFakeTrials(script))
	for i, tr := range st.InFlight {
		tr := tr
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalTrialReport, TrialReport{TrialID: tr.TrialID, WorkflowID: tr.WorkflowID, Number: tr.Number,
				Params: tr.Params, State: TrialCompleted, Final: true, Samples: 500, ObjectiveMissing: true,
				Metrics: map[string]float64{"val_loss_x": 1}})
		}, time.Duration(i+1)*time.Second)
	}
	env.ExecuteWorkflow(CampaignWorkflowName, in)
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := (CampaignCounts{Created: 24, Completed: 24, ObjectiveMissing: 24}); res.CampaignCounts != want {
		t.Errorf("counts %+v, want %+v", res.CampaignCounts, want)
	}
	want := `24 of 24 finished trials never reported objective metric "val_loss" (` + strings.Join(st.Missed.Trials, ", ")
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], want) ||
		!strings.HasSuffix(res.Warnings[0], "they reported: val_loss_0, val_loss_1, val_loss_x (did you mean \"val_loss_0\"?)") {
		t.Errorf("warnings %q\nwant %s…", res.Warnings, want)
	}
	if n := logged.count(missedLog); n != 0 {
		t.Errorf("the second run logged %q %d times, want 0 (the first run did)", missedLog, n)
	}
}

// A failed trial is a failure, not a missing objective.
func TestCampaignObjectiveFailedTrialsDoNotCount(t *testing.T) {
	env := newEnv(newFakeTrials(func(in TrialInput) fakeRun {
		r := steadyScript(in)
		if in.Number%2 == 1 {
			r.Fail, r.Metric = true, "val_loss"
		}
		return r
	}))
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: testSpec(4, 2)})
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := (CampaignCounts{Created: 4, Completed: 2, Failed: 2}); res.CampaignCounts != want || len(res.Warnings) != 0 {
		t.Errorf("result %+v: want %+v, no warning", res, want)
	}
}
