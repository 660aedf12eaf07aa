package workflows

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// paretoAlgorithm is an algorithm that takes several objectives
// (random once its registry entry says so), or "" when this build has
// none.
func paretoAlgorithm() string {
	v := hpo.VectorAlgorithms()
	if slices.Contains(v, hpo.AlgorithmRandom) {
		return hpo.AlgorithmRandom
	}
	if len(v) > 0 {
		return v[0]
	}
	return ""
}

// paretoMetrics is what a trial with params p reports: loss and cost to
// minimise against each other, and mem, constrained to at most 3.5
// (layers 4 breaks it). A trial numbered with missing reports no cost.
func paretoMetrics(p hpo.Params, missing bool) map[string]float64 {
	m := map[string]float64{
		"loss": scoreOf(p),
		"cost": 5 - p["x"].Num + p["layers"].Num/4,
		"mem":  p["layers"].Num,
	}
	if missing {
		delete(m, "cost")
	}
	return m
}

func paretoSpec(alg string, trials, concurrent int) gleaner.CampaignSpec {
	spec := testSpec(trials, concurrent)
	spec.Objective = gleaner.ObjectiveSpec{}
	spec.Objectives = []gleaner.ObjectiveSpec{{Metric: "loss", Mode: "min"}, {Metric: "cost", Mode: "min"}}
	max := 3.5
	spec.Constraints = []hpo.Constraint{{Metric: "mem", Max: &max}}
	spec.Search.Algorithm = alg
	return spec
}

// paretoTrial reports its metrics twice, 10 s apart, then ends.
func paretoTrial(ctx workflow.Context, in TrialInput) error {
	metrics := paretoMetrics(in.Params, in.Number%7 == 0)
	report := func(r TrialReport) error {
		r.TrialID, r.WorkflowID, r.Number, r.Params = in.TrialID, workflow.GetInfo(ctx).WorkflowExecution.ID, in.Number, in.Params
		r.Metrics = metrics
		return workflow.SignalExternalWorkflow(ctx, in.CampaignWorkflowID, "", SignalTrialReport, r).Get(ctx, nil)
	}
	for step := 1; step <= 2; step++ {
		if err := workflow.Sleep(ctx, 10*time.Second); err != nil {
			return err
		}
		if err := report(TrialReport{State: TrialRunning, Samples: float64(100 * step)}); err != nil {
			return err
		}
	}
	return report(TrialReport{Final: true, State: TrialCompleted, Samples: 200})
}

// wantFront is the oracle: the trials no other dominates, by hpo's
// constrained domination over what each reported, and their
// hypervolume against ref.
func wantFront(spec gleaner.CampaignSpec, params map[string]hpo.Params, ref []float64) ([]string, float64) {
	g := gleaner.Goals(spec.ObjectiveList(), spec.Constraints)
	var ids []string
	var rs []hpo.Result
	for id, p := range params {
		m := paretoMetrics(p, false)
		if _, ok := m["cost"]; !ok {
			continue
		}
		ids = append(ids, id)
		rs = append(rs, hpo.Result{Values: []float64{m["loss"], m["cost"]}, Constraints: []float64{m["mem"]}})
	}
	var front []string
	var frs []hpo.Result
	for _, i := range g.Front(rs) {
		front = append(front, ids[i])
		frs = append(frs, rs[i])
	}
	slices.Sort(front)
	if ref == nil {
		ref = g.ReferencePoint(frs)
	}
	return front, g.Hypervolume(frs, ref)
}

func frontIDs(f *gleaner.ParetoFront) []string {
	var ids []string
	for _, e := range f.Trials {
		ids = append(ids, e.TrialID)
	}
	slices.Sort(ids)
	return ids
}

// A campaign of two objectives and a constraint: its status, result,
// details and search attributes show the Pareto front and its
// hypervolume; its leaderboard goes by rank; a trial that never reports
// every objective counts as missing them.
func TestCampaignParetoFront(t *testing.T) {
	alg := paretoAlgorithm()
	if alg == "" {
		t.Skip("no algorithm of this build takes several objectives yet")
	}
	for _, ref := range [][]float64{{40, 12}, nil} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.RegisterWorkflowWithOptions(CampaignWorkflow, workflow.RegisterOptions{Name: CampaignWorkflowName})
		env.RegisterWorkflowWithOptions(paretoTrial, workflow.RegisterOptions{Name: TrialWorkflowName})
		attrs := recordSearchAttributes(env)
		spec := paretoSpec(alg, 30, 4)
		spec.ReferencePoint = ref
		env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})
		var res CampaignResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		details, status := queryDetails(t, env), queryStatus(t, env)
		missing := 30 / 7
		if res.State != CampaignCompleted || res.Completed != 30 || res.ObjectiveMissing != missing {
			t.Fatalf("result %s %+v, want 30 completed, %d missing an objective", res.State, res.CampaignCounts, missing)
		}
		if res.Best != nil || status.Best != nil {
			t.Errorf("best %+v / %+v: a campaign of several objectives has a front, no best", res.Best, status.Best)
		}
		f := status.Pareto
		if f == nil || res.Pareto == nil {
			t.Fatalf("no Pareto front: status %v, result %v", f, res.Pareto)
		}
		if len(status.Objectives) != 2 || status.Objective != "loss" || status.Mode != "min" || len(status.Constraints) != 1 {
			t.Errorf("status objectives %v (%s %s) constraints %v", status.Objectives, status.Objective, status.Mode, status.Constraints)
		}
		// The leaderboard holds the trials with every objective: the
		// result's top 10 by rank, the status's front from all of them.
		all := queryLeaderboard(t, env)
		params := map[string]hpo.Params{}
		for _, e := range all {
			params[e.TrialID] = e.Params
		}
		if len(all) != 30-missing {
			t.Errorf("leaderboard holds %d trials, want %d", len(all), 30-missing)
		}
		front, hv := wantFront(spec, params, ref)
		if got := frontIDs(f); !slices.Equal(got, front) {
			t.Errorf("front %v, want %v", got, front)
		}
		if f.Size != len(front) || math.Abs(f.Hypervolume-hv) > 1e-9 || hv <= 0 {
			t.Errorf("front of %d, hypervolume %v; want %d, %v", f.Size, f.Hypervolume, len(front), hv)
		}
		if (ref == nil) != f.ReferenceDerived || ref != nil && !slices.Equal(f.ReferencePoint, ref) || len(f.ReferencePoint) != 2 {
			t.Errorf("reference point %v derived %v, spec's %v", f.ReferencePoint, f.ReferenceDerived, ref)
		}
		for i, e := range all {
			if i > 0 && e.Rank < all[i-1].Rank {
				t.Errorf("leaderboard[%d] rank %d after rank %d", i, e.Rank, all[i-1].Rank)
			}
			if (e.Rank == 1) != slices.Contains(front, e.TrialID) {
				t.Errorf("leaderboard %s rank %d, front %v", e.TrialID, e.Rank, front)
			}
			if e.Infeasible != (e.Constraints["mem"] > 3.5) || len(e.Values) != 2 || e.Score != e.Values[0] {
				t.Errorf("leaderboard entry %+v", e)
			}
		}
		t.Logf("front %v, %s", front, f.HypervolumeText())
		if hvAttr, ok := attrs.vals["GleanerHypervolume"]; !ok || hvAttr != f.Hypervolume {
			t.Errorf("GleanerHypervolume %v, want %v", hvAttr, f.Hypervolume)
		}
		if _, ok := attrs.vals["GleanerBestScore"]; ok {
			t.Errorf("GleanerBestScore set: %v", attrs.vals["GleanerBestScore"])
		}
		if !strings.Contains(details, "**Pareto front:** ") || !strings.Contains(details, "| # | trial | rank | loss (min) | cost (min) | feasible | state |") {
			t.Errorf("details:\n%s", details)
		}
		if len(status.Warnings) != 1 || !strings.Contains(status.Warnings[0], `never reported every objective metric ("loss", "cost") in one report (t00007, t00014`) {
			t.Errorf("warnings %q", status.Warnings)
		}
	}
}

// An inline campaign of several objectives keeps its front as a campaign
// of trial workflows does.
func TestInlineCampaignParetoFront(t *testing.T) {
	alg := paretoAlgorithm()
	if alg == "" {
		t.Skip("no algorithm of this build takes several objectives yet")
	}
	h := newInlineHarness(t, 3, 20*time.Millisecond)
	h.metrics = func(p hpo.Params) map[string]float64 { return paretoMetrics(p, false) }
	spec := paretoSpec(alg, 12, 3)
	spec.Trial.Inline = true
	spec.ReferencePoint = []float64{40, 12}
	h.env.ExecuteWorkflow(CampaignWorkflowName, CampaignInput{Spec: spec})
	var res CampaignResult
	if err := h.env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Completed != 12 || res.ObjectiveMissing != 0 {
		t.Fatalf("counts %+v", res.CampaignCounts)
	}
	status := queryStatus(t, h.env)
	params := map[string]hpo.Params{}
	for _, e := range queryLeaderboard(t, h.env) {
		params[e.TrialID] = e.Params
	}
	front, hv := wantFront(spec, params, spec.ReferencePoint)
	if status.Pareto == nil || !slices.Equal(frontIDs(status.Pareto), front) || math.Abs(status.Pareto.Hypervolume-hv) > 1e-9 {
		t.Fatalf("front %+v, want %v with hypervolume %v", status.Pareto, front, hv)
	}
	if res.Pareto == nil || res.Pareto.Size != len(front) {
		t.Errorf("result's front %+v", res.Pareto)
	}
}

func queryLeaderboard(t *testing.T, env *testsuite.TestWorkflowEnvironment) []LeaderboardEntry {
	t.Helper()
	v, err := env.QueryWorkflow(QueryLeaderboard)
	if err != nil {
		t.Fatalf("query leaderboard: %v", err)
	}
	var lb []LeaderboardEntry
	if err := v.Get(&lb); err != nil {
		t.Fatal(err)
	}
	return lb
}
