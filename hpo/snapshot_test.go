package hpo

import (
	"math/rand/v2"
	"testing"
)

// Every searcher's snapshot — the campaign's continue-as-new payload —
// stays under 512 KB after 100,000 finished trials, each reporting at 10
// points on its way to a budget of 2,700 samples. (TPE: its own test,
// TestTPESnapshotBoundedAt100k, as proposing 100,000 trials takes
// minutes.)
func TestSnapshotsBoundedAt100kTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 trials per searcher")
	}
	for _, tc := range []struct {
		alg string
		set Settings
	}{
		{AlgorithmRandom, Settings{}},
		{AlgorithmQuasiRandom, Settings{}},
		{AlgorithmGrid, Settings{Grid: &GridSettings{Resolution: 20}}},
		{AlgorithmASHA, Settings{ASHA: &ASHASettings{MinBudget: 100}}},
		{AlgorithmHyperband, Settings{Hyperband: &HyperbandSettings{MinBudget: 100, MaxBudget: 2700}}},
		{AlgorithmMedian, Settings{Median: &MedianSettings{Interval: 27}}},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			cfg := Config{Algorithm: tc.alg, Space: testSpace(), Seed: 1, MaxTrials: 100_000, MaxConcurrent: 8, Mode: "min", Settings: tc.set}
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			var queue []string
			take := func(acts []Action) {
				for _, a := range acts {
					if c, ok := a.(Create); ok {
						queue = append(queue, c.ID)
					}
				}
			}
			take(s.Initial())
			ended := 0
			for len(queue) > 0 {
				id := queue[0]
				queue = queue[1:]
				take(s.TrialCreated(id))
				quality := rng.Float64()
				metric, stopped := 0.0, false
				for k := 1; k <= 10 && !stopped; k++ {
					metric = quality + 1/float64(k)
					for _, a := range s.TrialReported(id, float64(270*k), metric) {
						if stop, ok := a.(Stop); ok && stop.TrialID == id {
							stopped = true
						}
						if c, ok := a.(Create); ok {
							queue = append(queue, c.ID)
						}
					}
				}
				outcome := OutcomeCompleted
				if stopped {
					outcome = OutcomeStopped
				}
				take(s.TrialFinished(id, metric, outcome))
				ended++
			}
			snap, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d trials ended, snapshot %d bytes", tc.alg, ended, len(snap))
			if ended != 100_000 || len(snap) > 512<<10 {
				t.Errorf("%s: %d trials ended, snapshot %d bytes; want 100,000 and at most 512 KB", tc.alg, ended, len(snap))
			}
		})
	}
}
