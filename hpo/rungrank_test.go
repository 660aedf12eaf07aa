package hpo

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ranking is a TPE sampler's order of its observations, best first, each
// written as the observation's index (the order trials ended first in)
// and "s" for one ranked as stopped.
func ranking(t *testing.T, s Searcher) []string {
	t.Helper()
	var inner Searcher
	switch s := s.(type) {
	case *promoter:
		inner = s.sampler
	case *stopper:
		inner = s.sampler
	}
	tp, ok := inner.(*tpe)
	if !ok {
		t.Fatalf("sampler %T, want tpe", inner)
	}
	var out []string
	for _, i := range tp.byMetric {
		o := fmt.Sprint(i)
		if tp.stopped[i] {
			o += "s"
		}
		out = append(out, o)
	}
	return out
}

// Promotion ASHA with TPE on curves that cross: t4 starts fastest (1 at
// rung 0) but t2, promoted first, is ranked where it was judged last. From
// revisionRungRank the sampler ranks a trial at the highest rung it
// reached, then by its metric there, and a trial at the top rung as
// complete; before, every trial by its first-rung metric, stopped.
func TestPromotionTellsTPETheRungReached(t *testing.T) {
	for _, tc := range []struct {
		rev  int
		want [][]string
	}{
		{revisionRungRank - 1, [][]string{
			{"1s", "2s", "0s"},       // t2 3, t3 4, t1 5, at rung 0
			{"1s", "2s", "0s"},       // t2 at rung 1: unheard of
			{"3s", "1s", "2s", "0s"}, // t4 1 at rung 0 first
			{"3s", "1s", "2s", "0s"}, // t4 at rung 1, t2 at the top: unheard of
		}},
		{revisionRungRank, [][]string{
			{"1s", "2s", "0s"},
			{"1s", "2s", "0s"},       // t2 4.5 at rung 1 (still first)
			{"1s", "3s", "2s", "0s"}, // t4 1 at rung 0, below t2 at rung 1
			{"1", "3s", "2s", "0s"},  // t2 complete (9) above all; t4 6 at rung 1
		}},
	} {
		t.Run(fmt.Sprintf("revision=%d", tc.rev), func(t *testing.T) {
			cfg := promotionConfig(4, 1, ASHASettings{MinBudget: 1, ReductionFactor: 3, MaxBudget: 9, Sampler: AlgorithmTPE})
			cfg.Revision = tc.rev
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			step := func(k int, acts []Action, want string) {
				t.Helper()
				if got := jobs(acts); got != want {
					t.Fatalf("step %d: %s, want %s", k, got, want)
				}
				if got := ranking(t, s); !slices.Equal(got, tc.want[k]) {
					t.Errorf("step %d: sampler ranks %v, want %v", k, got, tc.want[k])
				}
			}
			s.Initial()
			s.TrialFinished("t00001", 5, OutcomeCompleted)
			s.TrialFinished("t00002", 3, OutcomeCompleted)
			step(0, s.TrialFinished("t00003", 4, OutcomeCompleted), `continue t00002 3 "rung 1"`)
			step(1, s.TrialFinished("t00002", 4.5, OutcomeCompleted), `create t00004 1 "rung 0"`)
			// n0 = 4: t4 (1) is the top 1 not promoted; n1 = 1: none there.
			step(2, s.TrialFinished("t00004", 1, OutcomeCompleted), `continue t00004 3 "rung 1"`)
			// As if a third trial had reached rung 1 (so that n1 = 3 once t4
			// pauses there, and its top 1, t2, goes to the top rung).
			s.(*promoter).st.Rungs[0][1].N++
			if acts := s.TrialFinished("t00004", 6, OutcomeCompleted); jobs(acts) != `continue t00002 9 "rung 2"` {
				t.Fatalf("t4 at rung 1: %s, want t2 continued to the top", jobs(acts))
			}
			step(3, s.TrialFinished("t00002", 9, OutcomeCompleted), "shutdown")
		})
	}
}

// Stopping ASHA with TPE: t1 stopped at rung 1 (2.5) ranks above t2
// stopped at rung 0 (1) from revisionRungRank, below it before; the
// completed t3 ranks first either way. Mode max orients the metrics.
func TestStoppingTellsTPETheRungReached(t *testing.T) {
	for _, mode := range []string{"min", "max"} {
		sign := 1.0
		if mode == "max" {
			sign = -1
		}
		for rev, want := range map[int][]string{revisionRungRank - 1: {"2", "1s", "0s"}, revisionRungRank: {"2", "0s", "1s"}} {
			cfg := Config{Algorithm: AlgorithmASHA, Space: testSpace(), Seed: 1, MaxTrials: 6, MaxConcurrent: 3, Mode: mode, Revision: rev,
				Settings: Settings{ASHA: &ASHASettings{MinBudget: 1, ReductionFactor: 3, Sampler: AlgorithmTPE}}}
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			s.Initial()
			for _, r := range []struct {
				id      string
				samples float64
				metric  float64
			}{{"t00001", 1, 3}, {"t00001", 3, 2.5}, {"t00002", 1, 1}} {
				if acts := s.TrialReported(r.id, r.samples, sign*r.metric); len(acts) > 0 {
					t.Fatalf("%s at %g: %v, want it to go on", r.id, r.samples, acts)
				}
			}
			s.TrialFinished("t00001", sign*2.5, OutcomeStopped)
			s.TrialFinished("t00002", sign*1, OutcomeStopped)
			s.TrialFinished("t00003", sign*10, OutcomeCompleted)
			if got := ranking(t, s); !slices.Equal(got, want) {
				t.Errorf("mode %s, revision %d: sampler ranks %v, want %v", mode, rev, got, want)
			}
		}
	}
}

// Hyperband's brackets share the budgets R/η^j: a rung's level is its
// budget's, whichever bracket it is in.
func TestHyperbandLevelsAreBudgets(t *testing.T) {
	r := newHyperbandRule(&HyperbandSettings{MinBudget: 1, MaxBudget: 9, ReductionFactor: 3})
	// Bracket 2's rungs are at 1, 3, 9; bracket 1's at 3, 9.
	r.bracketOf("a", 2)
	r.bracketOf("b", 1)
	r.Brackets[2].observe("a", 3, 1) // passes rungs 0 and 1 (n = 1 each)
	r.Brackets[1].observe("b", 3, 1)
	if a, b, c := r.level("a"), r.level("b"), r.level("c"); a != 2 || b != 2 || c != 0 {
		t.Errorf("levels a (budget 3 in bracket 2) %d, b (budget 3 in bracket 1) %d, c (none) %d; want 2, 2, 0", a, b, c)
	}
}

func (r *hyperbandRule) bracketOf(id string, b int) { r.Of[id] = b }

// rungKey orders as (level descending, loss ascending), for any losses.
func TestRungKeyOrdersLevelThenLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return []float64{0, -math.MaxFloat64, math.MaxFloat64, 1e300, -1e-300}[rng.IntN(5)]
		case 1:
			return rng.NormFloat64() * 1e6
		}
		return rng.NormFloat64()
	}
	for range 100000 {
		la, lb := rng.IntN(6), rng.IntN(6)
		a, b := draw(), draw()
		ka, kb := rungKey(la, a), rungKey(lb, b)
		switch {
		case la > lb && !(ka < kb), la < lb && !(ka > kb):
			t.Fatalf("level %d loss %v → %v, level %d loss %v → %v: levels out of order", la, a, ka, lb, b, kb)
		case la == lb && a < b && ka > kb:
			t.Fatalf("level %d: loss %v → %v above %v → %v", la, a, ka, b, kb)
		}
	}
}

// Every searcher that samples with TPE under rungs runs through the
// harness at revisionRungRank and revisionOneRung: snapshots survive every event (a relearnt
// observation included) and the same seed gives the same schedule.
func TestHarnessRungRank(t *testing.T) {
	for _, js := range []string{
		`{"asha": {"min_budget": 200, "reduction_factor": 2, "sampler": "tpe"}, "tpe": {"n_startup_trials": 5}}`,
		`{"asha": {"min_budget": 200, "reduction_factor": 3, "max_budget": 1000, "variant": "promotion", "sampler": "tpe"}, "tpe": {"n_startup_trials": 5}}`,
		`{"hyperband": {"min_budget": 100, "max_budget": 900, "reduction_factor": 3, "sampler": "tpe"}, "tpe": {"n_startup_trials": 5}}`,
		`{"hyperband": {"min_budget": 100, "max_budget": 900, "reduction_factor": 3, "variant": "promotion", "sampler": "tpe"}, "tpe": {"n_startup_trials": 5}}`,
	} {
		var set Settings
		if err := json.Unmarshal([]byte(js), &set); err != nil {
			t.Fatal(err)
		}
		alg := AlgorithmASHA
		if set.Hyperband != nil {
			alg = AlgorithmHyperband
		}
		for _, rev := range []int{revisionRungRank, revisionOneRung} {
			for _, tc := range []struct{ maxTrials, maxConcurrent int }{{12, 1}, {24, 4}, {60, 8}} {
				t.Run(fmt.Sprintf("%s/revision=%d/trials=%d,concurrent=%d", js, rev, tc.maxTrials, tc.maxConcurrent), func(t *testing.T) {
					checkSchedule(t, Config{Algorithm: alg, Space: testSpace(), MaxTrials: tc.maxTrials, MaxConcurrent: tc.maxConcurrent, Mode: "min",
						Settings: set, Revision: rev})
				})
			}
		}
	}
}
