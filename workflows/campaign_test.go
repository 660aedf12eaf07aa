package workflows

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// fakeTrials is a TrialWorkflow stand-in registered under TrialWorkflowName:
// it reports a scripted learning curve to its campaign by signal, honours
// SignalControl, and records what it saw.
type fakeTrials struct {
	script func(TrialInput) fakeRun

	mu         sync.Mutex
	running    int
	maxRunning int
	inputs     []TrialInput
	ids        []string                   // "workflow id < parent id" per trial
	controls   map[string][]ControlAction // by trial id
}

// fakeRun is one trial's script: Reports non-final reports Every apart
// (loss = Score + 1/step), then a final one: completed with loss = Score,
// or failed. Metric renames loss; Silent reports no metrics at all. A
// trial that did not report the objective ends with ObjectiveMissing set.
type fakeRun struct {
	Reports int
	Every   time.Duration
	Score   float64
	Fail    bool
	Metric  string
	Silent  bool
}

func newFakeTrials(script func(TrialInput) fakeRun) *fakeTrials {
	return &fakeTrials{script: script, controls: map[string][]ControlAction{}}
}

func (f *fakeTrials) enter(ctx workflow.Context, in TrialInput) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running++
	f.maxRunning = max(f.maxRunning, f.running)
	f.inputs = append(f.inputs, in)
	info := workflow.GetInfo(ctx)
	f.ids = append(f.ids, info.WorkflowExecution.ID+" < "+info.ParentWorkflowExecution.ID)
}

func (f *fakeTrials) exit() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running--
}

func (f *fakeTrials) control(in TrialInput, a ControlAction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controls[in.TrialID] = append(f.controls[in.TrialID], a)
}

func (f *fakeTrials) started() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.inputs)
}

func (f *fakeTrials) trial(ctx workflow.Context, in TrialInput) error {
	f.enter(ctx, in)
	defer f.exit() // after the final report has been delivered
	run := f.script(in)
	metric := "loss"
	if run.Metric != "" {
		metric = run.Metric
	}
	metrics := func(v float64) map[string]float64 {
		if run.Silent {
			return nil
		}
		return map[string]float64{metric: v}
	}
	report := func(r TrialReport) error {
		r.TrialID, r.WorkflowID, r.Number, r.Params = in.TrialID, workflow.GetInfo(ctx).WorkflowExecution.ID, in.Number, in.Params
		return workflow.SignalExternalWorkflow(ctx, in.CampaignWorkflowID, "", SignalTrialReport, r).Get(ctx, nil)
	}
	ctrl := workflow.GetSignalChannel(ctx, SignalControl)
	paused, stopped, step := false, false, 0
	for step < run.Reports && !stopped {
		tctx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		if !paused {
			sel.AddFuture(workflow.NewTimer(tctx, run.Every), func(workflow.Future) {
				step++
				_ = report(TrialReport{State: TrialRunning, Samples: float64(100 * step),
					Metrics: metrics(run.Score + 1/float64(step))})
			})
		}
		sel.AddReceive(ctrl, func(ch workflow.ReceiveChannel, _ bool) {
			var c Control
			ch.Receive(ctx, &c)
			f.control(in, c.Action)
			switch c.Action {
			case ControlPause:
				paused = true
			case ControlResume:
				paused = false
			case ControlStop:
				stopped = true
			}
		})
		sel.Select(ctx)
		cancel()
	}
	final := TrialReport{Final: true, State: TrialCompleted, Samples: float64(100 * step),
		Metrics: metrics(run.Score)}
	switch {
	case stopped:
		final.State = TrialStopped
		if step == 0 {
			final.Metrics = nil
		} else {
			final.Metrics = metrics(run.Score + 1/float64(step))
		}
	case run.Fail:
		final.State, final.Metrics, final.Error = TrialFailed, nil, "trainer exited 1"
	}
	_, reported := final.Metrics[in.ObjectiveMetric]
	final.ObjectiveMissing = !reported // on a failure too: the campaign must not count it
	return report(final)
}

func testSpace() hpo.Space {
	return hpo.Space{
		{Name: "x", Type: hpo.ParamFloat, Min: -5, Max: 5},
		{Name: "layers", Type: hpo.ParamInt, Min: 1, Max: 4},
		{Name: "opt", Type: hpo.ParamChoice, Choices: []string{"a", "b"}},
	}
}

// scoreOf is the scripted final loss of a trial with params p.
func scoreOf(p hpo.Params) float64 {
	x := p["x"].Num
	s := (x-1)*(x-1) + p["layers"].Num/10
	if p["opt"].Str == "b" {
		s += 0.5
	}
	return s
}

func testSpec(trials, concurrent int) gleaner.CampaignSpec {
	return gleaner.CampaignSpec{
		Name:      "mnist",
		Command:   []string{"train"},
		Space:     testSpace(),
		Objective: gleaner.ObjectiveSpec{Metric: "loss"},
		Budget:    gleaner.Budget{MaxTrials: trials, MaxConcurrent: concurrent},
	}
}

// Trials take 2–5 reports 10 s apart, so they end out of order.
func steadyScript(in TrialInput) fakeRun {
	return fakeRun{Reports: 2 + in.Number%4, Every: 10 * time.Second, Score: scoreOf(in.Params)}
}

func newEnv(f *fakeTrials) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(CampaignWorkflow, workflow.RegisterOptions{Name: CampaignWorkflowName})
	env.RegisterWorkflowWithOptions(f.trial, workflow.RegisterOptions{Name: TrialWorkflowName})
	return env
}

// recordSearchAttributes merges every upsert into one map and counts them.
type recordedAttrs struct {
	upserts int
	vals    map[string]any
}

func recordSearchAttributes(env *testsuite.TestWorkflowEnvironment) *recordedAttrs {
	r := &recordedAttrs{vals: map[string]any{}}
	env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		r.upserts++
		for k, v := range args.Get(0).(temporal.SearchAttributes).GetUntypedValues() {
			r.vals[k.GetName()] = v
		}
	})
	return r
}

// checkWindow queries the campaign every 5 s of workflow time and fails if
// more than max trials are ever in flight.
func checkWindow(t *testing.T, env *testsuite.TestWorkflowEnvironment, max int, until time.Duration) {
	for d := 5 * time.Second; d < until; d += 5 * time.Second {
		env.RegisterDelayedCallback(func() {
			s := queryStatus(t, env)
			if s.InFlight() > max {
				t.Errorf("at %v: %d trials in flight > max_concurrent %d", d, s.InFlight(), max)
			}
		}, d)
	}
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) CampaignStatus {
	t.Helper()
	v, err := env.QueryWorkflow(QueryStatus)
	if err != nil {
		t.Fatalf("query status: %v", err)
	}
	var s CampaignStatus
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// wantLeaderboard is the top n of the trials f ran, by scripted score.
func wantLeaderboard(f *fakeTrials, skip func(TrialInput) bool, n int) []string {
	type e struct {
		id    string
		num   int
		score float64
	}
	var es []e
	for _, in := range f.inputs {
		if skip == nil || !skip(in) {
			es = append(es, e{in.TrialID, in.Number, scoreOf(in.Params)})
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].score != es[j].score {
			return es[i].score < es[j].score
		}
		return es[i].num < es[j].num
	})
	var ids []string
	for i := 0; i < n && i < len(es); i++ {
		ids = append(ids, fmt.Sprintf("%s=%.6g", es[i].id, es[i].score))
	}
	return ids
}

func gotLeaderboard(lb []LeaderboardEntry) []string {
	var ids []string
	for _, e := range lb {
		ids = append(ids, fmt.Sprintf("%s=%.6g", e.TrialID, e.Score))
	}
	return ids
}

func TestCampaignCompletesWithLeaderboard(t *testing.T) {
	f := newFakeTrials(steadyScript)
	env := newEnv(f)
	attrs := recordSearchAttributes(env)
	checkWindow(t, env, 5, 10*time.Minute)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: testSpec(24, 5)})

	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := CampaignCounts{Created: 24, Completed: 24}
	if res.State != CampaignCompleted || res.CampaignCounts != want {
		t.Errorf("result %s %+v, want completed %+v", res.State, res.CampaignCounts, want)
	}
	if got, want := strings.Join(gotLeaderboard(res.Leaderboard), " "), strings.Join(wantLeaderboard(f, nil, 10), " "); got != want {
		t.Errorf("leaderboard\n got %s\nwant %s", got, want)
	}
	for _, e := range res.Leaderboard {
		if e.State != TrialCompleted || e.Samples == 0 || len(e.Params) != 3 {
			t.Errorf("entry %+v: want completed, with samples and params", e)
		}
	}
	if res.Best == nil || res.Best.TrialID != res.Leaderboard[0].TrialID {
		t.Errorf("best %+v, want the leaderboard's first", res.Best)
	}
	if f.maxRunning != 5 {
		t.Errorf("at most %d trials ran at once, want max_concurrent 5 reached and never exceeded", f.maxRunning)
	}
	seen := map[string]bool{}
	for i, in := range f.inputs {
		if want := TrialWorkflowID(in.CampaignWorkflowID, in.Number) + " < " + in.CampaignWorkflowID; f.ids[i] != want {
			t.Errorf("trial %s runs as %q, want %q", in.TrialID, f.ids[i], want)
		}
		if in.ObjectiveMetric != "loss" ||
			in.Pool != "default" || in.MinNodes != 1 || in.MaxRestarts != 3 || in.GracePeriod != 30*time.Second {
			t.Errorf("trial input %+v: want the campaign's id and the spec's defaults", in)
		}
		if seen[in.TrialID] {
			t.Errorf("trial %s started twice", in.TrialID)
		}
		seen[in.TrialID] = true
	}

	s := queryStatus(t, env)
	if s.State != CampaignCompleted || s.Running != 0 || s.Ended() != 24 || s.Progress != 1 {
		t.Errorf("status after completion %+v", s)
	}
	v, err := env.QueryWorkflow(QueryLeaderboard)
	if err != nil {
		t.Fatal(err)
	}
	var lb []LeaderboardEntry
	if err := v.Get(&lb); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(gotLeaderboard(lb), " "), strings.Join(wantLeaderboard(f, nil, 24), " "); got != want {
		t.Errorf("leaderboard query\n got %s\nwant %s", got, want)
	}

	wantAttrs := map[string]any{
		"GleanerCampaign": "mnist", "GleanerKind": "campaign", "GleanerStatus": "completed",
		"GleanerBestScore": res.Best.Score, "GleanerTrialsDone": int64(24), "GleanerTrialsRunning": int64(0),
	}
	for k, want := range wantAttrs {
		if got := attrs.vals[k]; got != want {
			t.Errorf("search attribute %s = %v, want %v", k, got, want)
		}
	}
	// 24 trials send 24×(2..5) reports; upserts happen only on changes.
	if attrs.upserts == 0 || attrs.upserts > 2*24+2 {
		t.Errorf("%d upserts, want one per change (at most %d)", attrs.upserts, 2*24+2)
	}

	v, err = env.QueryWorkflow("__temporal_workflow_metadata")
	if err != nil {
		t.Fatal(err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatal(err)
	}
	details := md.GetCurrentDetails()
	if !strings.Contains(details, "**mnist** · completed · 24 of 24 trials ended") ||
		!strings.Contains(details, "| 1 | "+res.Best.TrialID+" |") || strings.Contains(details, "Warning") {
		t.Errorf("details:\n%s", details)
	}
	// Every trial reported the objective: nothing to warn about.
	if len(s.Warnings) != 0 || len(res.Warnings) != 0 || s.ObjectiveMissing != 0 {
		t.Errorf("warnings %q / %q, %d trials without the objective: want none", s.Warnings, res.Warnings, s.ObjectiveMissing)
	}
}

func TestCampaignCountsFailedTrials(t *testing.T) {
	failing := func(in TrialInput) bool { return in.Number%4 == 0 }
	f := newFakeTrials(func(in TrialInput) fakeRun {
		r := steadyScript(in)
		r.Fail = failing(in)
		return r
	})
	env := newEnv(f)
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: testSpec(20, 4)})
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := CampaignCounts{Created: 20, Completed: 15, Failed: 5}
	if res.State != CampaignCompleted || res.CampaignCounts != want {
		t.Errorf("result %s %+v, want completed %+v", res.State, res.CampaignCounts, want)
	}
	// Failed trials reported losses while running, but leave the board.
	if got, want := strings.Join(gotLeaderboard(res.Leaderboard), " "), strings.Join(wantLeaderboard(f, failing, 10), " "); got != want {
		t.Errorf("leaderboard\n got %s\nwant %s", got, want)
	}
}

func TestCampaignMaxFailuresEndsIt(t *testing.T) {
	f := newFakeTrials(func(in TrialInput) fakeRun {
		r := steadyScript(in)
		r.Fail = in.Number%3 == 0
		return r
	})
	env := newEnv(f)
	spec := testSpec(30, 4)
	spec.Budget.MaxFailures = 2
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})

	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeMaxFailures || !appErr.NonRetryable() {
		t.Fatalf("error %v, want a non-retryable %s", err, ErrTypeMaxFailures)
	}
	var res CampaignResult
	if err := appErr.Details(&res); err != nil {
		t.Fatal(err)
	}
	if res.State != CampaignFailed || res.Failed < 2 || res.Created >= 30 || res.Ended() != res.Created ||
		!strings.Contains(res.Reason, "budget.max_failures") {
		t.Errorf("result %+v: want failed after 2 failures, every trial ended, budget unspent", res)
	}
	if f.running != 0 {
		t.Errorf("%d fake trials still running", f.running)
	}
	if s := queryStatus(t, env); s.State != CampaignFailed {
		t.Errorf("status %s, want failed", s.State)
	}
}
