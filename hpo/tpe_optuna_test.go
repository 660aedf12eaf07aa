package hpo

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// optunaTPEFixture is hpo/testdata/optuna-mv-tpe.json, written by
// scripts/optuna_tpe_fixture.py: Optuna 3.1's multivariate TPE on a
// five-dimensional Styblinski-Tang, eight trials at a time finishing out
// of order, and at four points of it what the sampler saw and the log
// densities of its l and g at query points.
type optunaTPEFixture struct {
	Optuna string `json:"optuna"`
	Space  []struct {
		Name     string
		Min, Max float64
	} `json:"space"`
	Snapshots []struct {
		FinishOrder []int `json:"finish_order"`
		Finished    []struct {
			Number int       `json:"number"`
			Params []float64 `json:"params"`
			Value  float64   `json:"value"`
		} `json:"finished"`
		Running []struct {
			Number int       `json:"number"`
			Params []float64 `json:"params"`
		} `json:"running"`
		Points [][]float64 `json:"points"`
		LogL   []float64   `json:"log_l"`
		LogG   []float64   `json:"log_g"`
	} `json:"snapshots"`
}

func readOptunaTPEFixture(t *testing.T) optunaTPEFixture {
	t.Helper()
	b, err := os.ReadFile("testdata/optuna-mv-tpe.json")
	if err != nil {
		t.Fatal(err)
	}
	var f optunaTPEFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// Multivariate TPE's l and g are Optuna 3.1's on a long asynchronous
// search: 15, 40, 80 and 110 trials finished (so g's age weights ramp over
// up to 80 observations and l holds up to 11), seven running as liars,
// the trials fed in the order they finished. Optuna weighs by trial
// number; so does TPE from revision 5 (revisionTrialOrder), to the last
// digits. Revision 4 weighed in the order trials finished, the liars
// newest: the same until g holds 25, then off in the third decimal.
func TestTPEJointModelsAsOptuna31OnALongSearch(t *testing.T) {
	f := readOptunaTPEFixture(t)
	var space Space
	for _, p := range f.Space {
		space = append(space, Param{Name: p.Name, Type: ParamFloat, Min: p.Min, Max: p.Max})
	}
	for _, rev := range []int{revisionTrialOrder - 1, Revision} {
		for _, s := range f.Snapshots {
			tp := newTPE(Config{Algorithm: AlgorithmTPE, Space: space, Seed: 1, MaxTrials: 200, MaxConcurrent: 8, Mode: "min",
				Settings: Settings{TPE: &TPESettings{Multivariate: true}}, Revision: rev})
			byNumber := map[int]int{}
			for i, o := range s.Finished {
				byNumber[o.Number] = i
			}
			for _, n := range s.FinishOrder {
				o := s.Finished[byNumber[n]]
				tp.observe(o.Params, o.Value, false, n)
			}
			for _, r := range s.Running {
				tp.pend(r.Params)
				if tp.set.trialOrder {
					tp.st.PendingSeq[len(tp.st.PendingSeq)-1] = r.Number
				}
			}
			tp.split()
			tp.fitJoint(&tp.scr.tpeSplit, tp.joint, tp.jdims)
			u := make([]float64, len(space))
			off := 0.0
			for q, x := range s.Points {
				for d, dm := range tp.dims {
					u[d] = dm.toUnit(x[d])
				}
				l, g := tp.scr.jl.logDensity(u), tp.scr.jg.logDensity(u)
				if !near(l, s.LogL[q], 1e-9) {
					t.Errorf("revision %d, %d finished, point %d: log l %.12g, Optuna %.12g", rev, len(s.Finished), q, l, s.LogL[q])
				}
				off = max(off, math.Abs(g-s.LogG[q]))
			}
			switch {
			case rev >= revisionTrialOrder && off > 1e-9:
				t.Errorf("revision %d, %d finished: log g off Optuna's by up to %.3g", rev, len(s.Finished), off)
			case rev < revisionTrialOrder && len(s.Finished) >= 40 && off < 1e-6:
				t.Errorf("revision %d, %d finished: log g as Optuna's (off %.3g); it must keep the order trials finished in", rev, len(s.Finished), off)
			}
		}
	}
}
