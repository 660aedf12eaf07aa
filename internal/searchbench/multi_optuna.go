package searchbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// ForeignRuns are another implementation's runs on the multi bench's
// problems under the same protocol, as scripts/multi_vs_optuna.py writes
// them: every ended trial's result, in the order it ended, so that their
// hypervolumes come from the same code as Gleaner's.
type ForeignRuns struct {
	Trials  int          `json:"trials"`
	Workers int          `json:"workers"`
	Seed    uint64       `json:"seed"`
	Seeds   int          `json:"seeds"`
	Sigma   float64      `json:"sigma"`
	Runs    []ForeignRun `json:"runs"`
}

// ForeignRun is one method's run on a problem for a seed.
type ForeignRun struct {
	Problem string       `json:"problem"`
	Method  string       `json:"method"`
	Seed    uint64       `json:"seed"`
	Results []hpo.Result `json:"results"`
}

// ReadForeignRuns decodes multi_vs_optuna.py's JSON.
func ReadForeignRuns(r io.Reader) (ForeignRuns, error) {
	var f ForeignRuns
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return f, err
	}
	return f, nil
}

// Protocol says why f's runs are not comparable with runs of trials
// trials on workers workers, cost σ sigma, seeds seed0… (nil: they are).
func (f ForeignRuns) Protocol(trials, workers int, sigma float64, seed0 uint64, seeds int) error {
	switch {
	case f.Trials != trials:
		return fmt.Errorf("%d trials a run, these runs %d", f.Trials, trials)
	case f.Workers != workers:
		return fmt.Errorf("%d workers, these runs %d", f.Workers, workers)
	case f.Sigma != sigma:
		return fmt.Errorf("cost σ %v, these runs %v", f.Sigma, sigma)
	case f.Seed != seed0 || f.Seeds != seeds:
		return fmt.Errorf("seeds %d to %d, these runs %d to %d", f.Seed, f.Seed+uint64(f.Seeds)-1, seed0, seed0+uint64(seeds)-1)
	}
	return nil
}

// Curves returns a curve per method on p, in the order the runs name
// them, each over f's seeds; errors name a run whose results do not fit p
// or a seed a method lacks.
func (f ForeignRuns) Curves(p Problem) ([]HVCurve, error) {
	var methods []string
	bySeed := map[string]map[uint64][]float64{}
	for _, r := range f.Runs {
		if r.Problem != p.Name {
			continue
		}
		for i, x := range r.Results {
			if len(x.Values) != len(p.Objectives) || len(x.Constraints) != len(p.Constraints) {
				return nil, fmt.Errorf("%s on %s, seed %d, trial %d: %d values and %d constraints, want %d and %d",
					r.Method, p.Name, r.Seed, i+1, len(x.Values), len(x.Constraints), len(p.Objectives), len(p.Constraints))
			}
		}
		if bySeed[r.Method] == nil {
			methods = append(methods, r.Method)
			bySeed[r.Method] = map[uint64][]float64{}
		}
		bySeed[r.Method][r.Seed] = p.Hypervolumes(r.Results)
	}
	var out []HVCurve
	for _, m := range methods {
		var runs [][]float64
		for s := f.Seed; s < f.Seed+uint64(f.Seeds); s++ {
			hv, ok := bySeed[m][s]
			if !ok {
				return nil, fmt.Errorf("%s on %s: no run for seed %d", m, p.Name, s)
			}
			runs = append(runs, hv)
		}
		out = append(out, NewHVCurve(m, p.Name, f.Workers, f.Trials, runs))
	}
	return out, nil
}

// Best returns the curve with the highest median hypervolume after n
// trials (the first of equals), and false when there is none.
func Best(curves []HVCurve, n int) (HVCurve, bool) {
	best, found := HVCurve{}, false
	for _, c := range curves {
		if m := c.At(n).Median; !found || m > best.At(n).Median || math.IsNaN(best.At(n).Median) {
			best, found = c, true
		}
	}
	return best, found
}
