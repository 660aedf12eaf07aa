package hpo

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Every searcher's snapshot — the campaign's continue-as-new payload —
// stays under 512 KB after 100,000 trials, each reporting at 10 points on
// its way to a budget of 2,700 samples, or, asked for a budget (the
// promotion variants' rungs), pausing there and going on from there when
// continued. (TPE: its own test, TestTPESnapshotBoundedAt100k, as
// proposing 100,000 trials takes minutes; PBT keeps one record per
// member, TestPBTSnapshotBounded.)
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
		{AlgorithmASHA, Settings{ASHA: &ASHASettings{MinBudget: 100, MaxBudget: 2700, Variant: VariantPromotion}}},
		{AlgorithmHyperband, Settings{Hyperband: &HyperbandSettings{MinBudget: 100, MaxBudget: 2700, Variant: VariantPromotion}}},
		{AlgorithmEvolution, Settings{}},
		{AlgorithmEvolution, Settings{Evolution: &EvolutionSettings{Population: 500}}},
		{AlgorithmLocal, Settings{}},
		{AlgorithmLocal, Settings{Local: &LocalSettings{MaxVisited: 40_000}}},
		{AlgorithmNSGA2, Settings{}},
		{AlgorithmNSGA2, Settings{NSGA2: &NSGA2Settings{PopulationSize: 500}}},
	} {
		name := tc.alg
		if tc.set.ASHA != nil && tc.set.ASHA.Variant != "" || tc.set.Hyperband != nil && tc.set.Hyperband.Variant != "" {
			name += "/promotion"
		}
		if tc.set.Evolution != nil || tc.set.Local != nil || tc.set.NSGA2 != nil {
			name += "/largest"
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{Algorithm: tc.alg, Space: testSpace(), Seed: 1, MaxTrials: 100_000, MaxConcurrent: 8, Mode: "min", Settings: tc.set}
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			// A run: a trial's first, or one continued to a new budget.
			type job struct {
				id     string
				budget float64
			}
			var (
				queue     []job
				created   int
				continues int
				shutdown  bool
				quality   = map[string]float64{}
				paused    = map[string]float64{} // progress at a trial's last budget end
			)
			take := func(acts []Action) {
				for _, a := range acts {
					switch a := a.(type) {
					case Create:
						queue = append(queue, job{a.ID, a.Budget})
						quality[a.ID] = rng.Float64()
						created++
					case Continue:
						queue = append(queue, job{a.TrialID, a.Budget})
						continues++
					case Shutdown:
						shutdown = true
					}
				}
			}
			take(s.Initial())
			for len(queue) > 0 {
				j := queue[0]
				queue = queue[1:]
				take(s.TrialCreated(j.id))
				q := quality[j.id]
				metric, stopped := 0.0, false
				for k := 1; k <= 10 && !stopped; k++ {
					at := float64(270 * k)
					if at <= paused[j.id] {
						continue // reported before it paused
					}
					if j.budget > 0 && at >= j.budget {
						break
					}
					metric = q + 1/float64(k)
					acts := s.TrialReported(j.id, at, metric)
					stopped = slices.Contains(acts, Action(Stop{TrialID: j.id}))
					take(acts)
				}
				outcome := OutcomeCompleted
				switch {
				case stopped:
					outcome = OutcomeStopped
				case j.budget > 0:
					metric = q + 270/j.budget
					paused[j.id] = j.budget
				}
				if outcome != OutcomeCompleted || j.budget == 0 {
					delete(quality, j.id)
				}
				take(s.TrialFinished(j.id, metric, outcome))
			}
			snap, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d trials, %d continued, snapshot %d bytes", name, created, continues, len(snap))
			if created != 100_000 || !shutdown || len(snap) > 512<<10 {
				t.Errorf("%s: %d trials created, shutdown %v, snapshot %d bytes; want 100,000, true and at most 512 KB", name, created, shutdown, len(snap))
			}
		})
	}
}
