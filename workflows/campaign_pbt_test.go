package workflows

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// pbtTrials is a trial workflow stand-in for PBT campaigns that keeps
// what the workers keep on disk: each trial's checkpoint at each of its
// budget ends (activities' seals). A trial trains 100 samples per 10 s
// from where it starts (its Continue's resume point, or the seal its From
// names) to its budget, then pauses there, completed, with a resume
// point. One created From another first waits for nodes (a minute), while
// its source may train on.
type pbtTrials struct {
	mu     sync.Mutex
	seals  map[string]map[float64]bool // trial → budget ends reached
	inputs []TrialInput
	// first is each trial's first reported progress and start where it
	// started, by trial id, for its first segment.
	first, start map[string]float64
	// ahead counts exploits whose source had trained past FromProgress
	// when they copied it.
	ahead int
}

func (f *pbtTrials) trial(ctx workflow.Context, in TrialInput) error {
	f.mu.Lock()
	f.inputs = append(f.inputs, in)
	f.mu.Unlock()
	report := func(r TrialReport) error {
		r.TrialID, r.WorkflowID, r.Number, r.Params = in.TrialID, workflow.GetInfo(ctx).WorkflowExecution.ID, in.Number, in.Params
		return workflow.SignalExternalWorkflow(ctx, in.CampaignWorkflowID, "", SignalTrialReport, r).Get(ctx, nil)
	}
	progress := 0.0
	if in.State != nil {
		progress = in.State.Samples
	}
	if in.From != "" {
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return err
		}
		f.mu.Lock()
		sealed, latest := f.seals[in.From][in.FromProgress], 0.0
		for p := range f.seals[in.From] {
			latest = max(latest, p)
		}
		if latest > in.FromProgress {
			f.ahead++
		}
		f.mu.Unlock()
		if !sealed {
			return report(TrialReport{Final: true, State: TrialFailed,
				Error: fmt.Sprintf("trial %s starts from trial %s at %g samples: no checkpoint sealed at a budget end", in.TrialID, in.From, in.FromProgress)})
		}
		progress = in.FromProgress
	}
	f.mu.Lock()
	if _, ok := f.first[in.TrialID]; !ok && in.Segment <= 1 {
		f.start[in.TrialID], f.first[in.TrialID] = progress, progress+100
	}
	f.mu.Unlock()
	loss := func() float64 { return pbtLoss(in.Params) + 1000/progress }
	for progress < in.Budget {
		if err := workflow.Sleep(ctx, 10*time.Second); err != nil {
			return err
		}
		progress += 100
		if progress < in.Budget {
			_ = report(TrialReport{State: TrialRunning, Samples: progress, Metrics: map[string]float64{"loss": loss()}})
		}
	}
	f.mu.Lock()
	if f.seals[in.TrialID] == nil {
		f.seals[in.TrialID] = map[float64]bool{}
	}
	f.seals[in.TrialID][progress] = true
	f.mu.Unlock()
	return report(TrialReport{Final: true, State: TrialCompleted, Samples: progress, Metrics: map[string]float64{"loss": loss()},
		Resume: &TrialResume{Owner: in.TrialID, Samples: progress, Checkpoint: fmt.Sprintf("ck-%g", progress), Runs: 1}})
}

// pbtLoss: small x trains best.
func pbtLoss(p hpo.Params) float64 { return math.Abs(p["x"].Num) }

// A PBT campaign: every exploited trial starts from the checkpoint its
// source had at the budget end it was ranked at (TrialInput.FromProgress),
// though it waited a minute for nodes while the source trained on, and
// trains one full interval with its own parameters from there: its first
// report is past its start and not past its budget. The campaign ends
// when every member has trained max_budget and says so.
func TestPBTCampaignExploitsStartWhereTheirBudgetStarts(t *testing.T) {
	const interval, maxBudget = 300.0, 1500.0
	f := &pbtTrials{seals: map[string]map[float64]bool{}, first: map[string]float64{}, start: map[string]float64{}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(CampaignWorkflow, workflow.RegisterOptions{Name: CampaignWorkflowName})
	env.RegisterWorkflowWithOptions(f.trial, workflow.RegisterOptions{Name: TrialWorkflowName})
	spec := gleaner.CampaignSpec{
		Name: "pbt", Command: []string{"train"},
		Space:     hpo.Space{{Name: "x", Type: hpo.ParamFloat, Min: -5, Max: 5}},
		Objective: gleaner.ObjectiveSpec{Metric: "loss"},
		Budget:    gleaner.Budget{MaxTrials: 40, MaxConcurrent: 4},
		Search: gleaner.SearchSpec{Algorithm: hpo.AlgorithmPBT, Seed: 3, BudgetUnit: gleaner.BudgetSamples,
			Settings: hpo.Settings{PBT: &hpo.PBTSettings{Population: 4, Interval: interval, MaxBudget: maxBudget, Quantile: 0.5}}},
	}
	env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.State != CampaignCompleted || res.Failed != 0 {
		t.Fatalf("result %s %+v (%s), want completed without failures", res.State, res.CampaignCounts, res.Reason)
	}
	exploits := 0
	for _, in := range f.inputs {
		if in.From == "" {
			continue
		}
		exploits++
		if want := min(in.FromProgress+interval, maxBudget); in.FromProgress <= 0 || in.Budget != want {
			t.Errorf("%s from %s at %v with budget %v: want a budget end and budget %v", in.TrialID, in.From, in.FromProgress, in.Budget, want)
		}
		if first := f.first[in.TrialID]; !(first > f.start[in.TrialID] && first <= in.Budget) {
			t.Errorf("%s started at %v, first report at %v, budget %v: it must train its own parameters up to its budget",
				in.TrialID, f.start[in.TrialID], first, in.Budget)
		}
	}
	if exploits == 0 || f.ahead == 0 {
		t.Errorf("%d exploits, %d copied from a source that had trained on: nothing checked", exploits, f.ahead)
	}
	if want := "the searcher is done: all 4 members of the population trained max_budget 1500; "; !strings.HasPrefix(res.Reason, want) {
		t.Errorf("reason %q, want it to start %q", res.Reason, want)
	}
	t.Logf("%d trials, %d exploits (%d from a source that trained on), %s", res.Created, exploits, f.ahead, res.Reason)
}
