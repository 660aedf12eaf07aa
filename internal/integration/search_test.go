package integration_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// An ASHA campaign of real trainers: the searcher stops the trials that
// fall behind at a rung, each stopped trial checkpoints and ends having
// trained less than its full budget, the others train it whole, and the
// campaign completes with every trial accounted for.
func TestASHACampaignStopsTrialsEarly(t *testing.T) {
	// A running trial tells its campaign its metrics at most every
	// 10 s (Tuning.ReportInterval), and a rung is judged at the first
	// report past it: these 10-s trials report every second, as trials of
	// hours report often enough at 10 s.
	srv := startServer(t, devserver.Options{})
	testenv.Worker(t, srv, "search-asha", nil)
	// 6,400 samples of 32 each over about 10 s; rungs at 25 and 75 steps.
	const trials, steps = 12, 200
	spec := testenv.MLPSpec(t, "asha", trials, 4, steps, 50)
	spec.Resources.MaxNodes = 1
	spec.Search.Algorithm = hpo.AlgorithmASHA
	spec.Search.ASHA = &hpo.ASHASettings{MinBudget: 800, ReductionFactor: 3} // rungs at 800 and 2,400 samples
	run := startCampaignInput(t, srv.Client(), "search-asha", workflows.CampaignInput{Spec: spec, Tuning: &workflows.Tuning{ReportInterval: time.Second}})
	res := campaignResult(t, run, 5*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed+res.Stopped != trials || res.Failed != 0 {
		t.Fatalf("result %s %+v, want %d trials completed or stopped", res.State, res.CampaignCounts, trials)
	}
	full := float64(steps * 32)
	stopped := 0
	for _, r := range trialReports(t, srv.Client(), spec.Name, trials) {
		switch r.State {
		case workflows.TrialStopped:
			stopped++
			if r.Samples >= full || r.Samples < 800 {
				t.Errorf("trial %s stopped after %v samples: want at a rung, before the full %v", r.TrialID, r.Samples, full)
			}
		case workflows.TrialCompleted:
			if r.Samples != full {
				t.Errorf("trial %s completed after %v samples, want %v", r.TrialID, r.Samples, full)
			}
		default:
			t.Errorf("trial %s: %s (%s)", r.TrialID, r.State, r.Error)
		}
	}
	if stopped == 0 || stopped == trials {
		t.Errorf("%d of %d trials stopped: ASHA stops the ones behind at a rung, not all", stopped, trials)
	}
	t.Logf("%d of %d trials stopped early by ASHA", stopped, trials)
}

// search.warm_start against a real server: campaign B reads campaign A's
// finished trials (closed workflows, from their results) before its
// first trial, and says how many it started from.
func TestWarmStartFromAnEarlierCampaign(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	testenv.Worker(t, srv, "search-warm", nil)
	a := testenv.MLPSpec(t, "warm-a", 6, 3, 40, 2)
	if res := campaignResult(t, startCampaign(t, srv.Client(), "search-warm", a), 3*time.Minute); res.Completed != 6 {
		t.Fatalf("campaign A: %+v", res.CampaignCounts)
	}
	b := testenv.MLPSpec(t, "warm-b", 4, 2, 40, 2)
	b.Pool = a.Pool
	b.Search.Algorithm = hpo.AlgorithmTPE
	b.Search.TPE = &hpo.TPESettings{NStartupTrials: 6}
	b.Search.WarmStart = []string{a.Name}
	run := startCampaign(t, srv.Client(), "search-warm", b)
	res := campaignResult(t, run, 3*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != 4 {
		t.Fatalf("campaign B: %s %+v", res.State, res.CampaignCounts)
	}
	v, err := srv.Client().QueryWorkflow(testContext(t, time.Minute), run.GetID(), "", workflows.QueryStatus)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.CampaignStatus
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	if st.WarmStarted != 6 {
		t.Errorf("campaign B started from %d trials, want campaign A's 6", st.WarmStarted)
	}

	c := testenv.MLPSpec(t, "warm-c", 2, 2, 40, 2)
	c.Search.WarmStart = []string{"no-such-campaign"}
	err = startCampaign(t, srv.Client(), "search-warm", c).Get(testContext(t, time.Minute), nil)
	if err == nil || !strings.Contains(err.Error(), `search.warm_start[0]: campaign "no-such-campaign" not found`) {
		t.Errorf("warm start from a campaign that does not exist: %v", err)
	}
}
