package integration_test

import (
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
	srv := startServer(t, devserver.Options{})
	testenv.Worker(t, srv, "search-asha", nil)
	const trials, steps = 12, 200 // 6,400 samples of 32 each; a report every 5 steps
	spec := testenv.MLPSpec(t, "asha", trials, 4, steps, 5)
	spec.Resources.MaxNodes = 1
	spec.Search.Algorithm = hpo.AlgorithmASHA
	spec.Search.ASHA = &hpo.ASHASettings{MinSamples: 800, ReductionFactor: 3} // rungs at 800 and 2,400 samples
	res := campaignResult(t, startCampaign(t, srv.Client(), "search-asha", spec), 5*time.Minute)
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
