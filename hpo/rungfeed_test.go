package hpo

import (
	"fmt"
	"slices"
	"testing"
)

// observations are a TPE sampler's observed metrics, in the order it
// holds them (none when it is not a TPE under a stopper or promoter).
func observations(s Searcher) []float64 {
	var inner Searcher
	switch s := s.(type) {
	case *promoter:
		inner = s.sampler
	case *stopper:
		inner = s.sampler
	}
	if f, ok := inner.(*rungFeed); ok {
		inner = f.t
	}
	if t, ok := inner.(*tpe); ok {
		return slices.Clone(t.st.Metrics)
	}
	return nil
}

// Stopping ASHA with TPE on curves that cross: t1…t7 pass rung 0 in the
// order 7…1 and rung 1 in the order 0.1…0.7. From revisionOneRung the
// sampler is fitted on one rung's results only, the highest with nMin
// (7 here: d+2) of them: rung 0's until rung 1 has seven, then rung 1's,
// whether or not their trials have ended. Before, it held only the
// trials ended (t12, then t11, stopped before rung 0). Mode max orients
// the metrics.
func TestStoppingFitsTPEOnOneRung(t *testing.T) {
	for _, mode := range []string{"min", "max"} {
		sign := 1.0
		if mode == "max" {
			sign = -1
		}
		for _, rev := range []int{revisionOneRung - 1, revisionOneRung} {
			t.Run(fmt.Sprintf("%s/revision=%d", mode, rev), func(t *testing.T) {
				cfg := Config{Algorithm: AlgorithmASHA, Space: testSpace(), Seed: 1, MaxTrials: 30, MaxConcurrent: 12, Mode: mode, Revision: rev,
					Settings: Settings{ASHA: &ASHASettings{MinBudget: 1, ReductionFactor: 3, MaxBudget: 9, Sampler: AlgorithmTPE},
						TPE: &TPESettings{NStartupTrials: 2}}}
				s, err := NewSearcher(cfg)
				if err != nil {
					t.Fatal(err)
				}
				s.Initial()
				report := func(i int, samples, metric float64) { s.TrialReported(trialID(i), samples, sign*metric) }
				for i := 1; i <= 7; i++ {
					report(i, 1, float64(8-i)) // all go on: each the best so far
				}
				for i := 1; i <= 6; i++ {
					report(i, 3, float64(i)/10) // t2… stopped at rung 1
				}
				// The fit comes before a proposal: t12's end asks for one.
				s.TrialFinished(trialID(12), 0, OutcomeStopped)
				rung0 := []float64{7, 6, 5, 4, 3, 2, 1}
				ended := 1
				check := func(want []float64) {
					t.Helper()
					got := observations(s)
					if rev < revisionOneRung {
						if len(got) != ended {
							t.Errorf("sampler observes %v, want the %d trials ended", got, ended)
						}
						return
					}
					var w []float64
					for _, v := range want {
						w = append(w, sign*v)
					}
					if !slices.Equal(got, w) {
						t.Errorf("sampler observes %v, want %v", got, w)
					}
				}
				check(rung0) // six at rung 1: rung 0 it is
				report(7, 3, 0.7)
				s.TrialFinished(trialID(11), 0, OutcomeStopped)
				ended++
				check([]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7})
			})
		}
	}
}

// Promotion: a trial's result at each rung it pauses at is kept, and
// one at the top rung is complete too.
func TestPromotionFeedsEachRung(t *testing.T) {
	cfg := promotionConfig(4, 1, ASHASettings{MinBudget: 1, ReductionFactor: 3, MaxBudget: 9, Sampler: AlgorithmTPE})
	cfg.Revision = revisionOneRung
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Initial()
	s.TrialFinished("t00001", 5, OutcomeCompleted)
	s.TrialFinished("t00002", 3, OutcomeCompleted)
	s.TrialFinished("t00003", 4, OutcomeCompleted) // t2 continued to rung 1
	s.TrialFinished("t00002", 4.5, OutcomeCompleted)
	s.TrialFinished("t00004", 1, OutcomeCompleted) // t4 continued to rung 1
	s.(*promoter).st.Rungs[0][1].N++
	s.TrialFinished("t00004", 6, OutcomeCompleted) // t2 continued to the top
	s.TrialFinished("t00002", 9, OutcomeCompleted)
	var got []string
	for _, r := range s.(*promoter).feed.st.Trials {
		got = append(got, fmt.Sprintf("%s %d %v %v %v", r.ID, r.First, r.Loss, r.Final, r.Complete))
	}
	want := []string{"t00001 1 [5] 0 false", "t00002 1 [3 4.5 9] 9 true", "t00003 1 [4] 0 false", "t00004 1 [1 6] 0 false"}
	if !slices.Equal(got, want) {
		t.Errorf("results\n%q, want\n%q", got, want)
	}
}

// The rung fitted on is the highest with nMin results, complete results
// above every rung; none before one has nMin.
func TestRungFeedLevel(t *testing.T) {
	f := &rungFeed{nMin: 2}
	row := []float64{0}
	for _, tc := range []struct {
		add  rungTrial
		want int
	}{
		{rungTrial{Row: row, First: 1, Loss: []float64{1, 2, 3}}, 0},
		{rungTrial{Row: row, First: 2, Loss: []float64{1}}, 2},
		{rungTrial{Row: row, Final: 1, Complete: true}, 2},
		{rungTrial{Row: row, First: 3, Loss: []float64{1}, Final: 1, Complete: true}, levelComplete},
	} {
		f.st.Trials = append(f.st.Trials, tc.add)
		if got := f.level(); got != tc.want {
			t.Errorf("after %+v: level %d, want %d", tc.add, got, tc.want)
		}
	}
}
