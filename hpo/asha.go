package hpo

import (
	"fmt"
	"math"
	"slices"
)

// AlgorithmASHA names asynchronous successive halving, stopping variant.
const AlgorithmASHA = "asha"

// ASHASettings configure search.asha.
type ASHASettings struct {
	// Sampler chooses the trials: random (default), quasirandom, grid or
	// tpe, with its own section's settings.
	Sampler string `json:"sampler,omitempty"`
	// MinBudget is the first rung's budget r, in the budget unit (search.budget_unit)
	// (required): a trial is first judged once it has trained this many.
	MinBudget float64 `json:"min_budget"`
	// ReductionFactor is η (default 3): rung k is at budget r·η^k, and a
	// trial goes on past a rung only if it is in the top 1/η of the
	// trials that reached it.
	ReductionFactor float64 `json:"reduction_factor,omitempty"`
	// MaxBudget caps the rungs (default: none): past it nothing is
	// stopped.
	MaxBudget float64 `json:"max_budget,omitempty"`
}

// Validate checks the settings; errors name the field.
func (s *ASHASettings) Validate() error {
	switch {
	case !(s.MinBudget > 0) || math.IsInf(s.MinBudget, 0):
		return fmt.Errorf("min_budget: %v must be > 0 (the first rung's budget in the budget unit (search.budget_unit))", s.MinBudget)
	case s.ReductionFactor != 0 && !(s.ReductionFactor >= 2 && s.ReductionFactor <= 100):
		return fmt.Errorf("reduction_factor: %v must be in [2, 100]", s.ReductionFactor)
	case s.MaxBudget != 0 && !(s.MaxBudget >= s.MinBudget) || math.IsInf(s.MaxBudget, 0):
		return fmt.Errorf("max_budget: %v must be ≥ min_budget %v", s.MaxBudget, s.MinBudget)
	}
	return nil
}

func init() {
	register(algorithm{
		name:    AlgorithmASHA,
		summary: "asynchronous successive halving, stopping variant: a trial past rung r·η^k goes on only if in the top 1/η there",
		section: func(s Settings) (validator, bool) { return s.ASHA, s.ASHA != nil },
		sampler: func(s Settings) string {
			if s.ASHA == nil {
				return ""
			}
			return s.ASHA.Sampler
		},
		new: func(cfg Config) (Searcher, error) {
			set := cfg.Settings.ASHA
			if set == nil {
				return nil, fmt.Errorf("search.asha.min_budget: missing (the first rung's budget in the budget unit (search.budget_unit))")
			}
			r := &ashaRule{MinBudget: set.MinBudget, Eta: set.ReductionFactor, MaxBudget: set.MaxBudget, Passed: map[string]int{}}
			if r.Eta == 0 {
				r.Eta = 3
			}
			return newStopper(cfg, AlgorithmASHA, set.Sampler, r)
		},
	})
}

// ashaKeep bounds the values a rung keeps: the best ashaKeep of them.
// The decision is exact while a rung's top 1/η fits (up to ashaKeep·η
// trials per rung); beyond, it compares with the ashaKeep-th best, which
// lets more trials on, never fewer.
const ashaKeep = 1024

// ashaRule is the stopping variant of ASHA (Li et al., "A System for
// Massively Parallel Hyperparameter Tuning", MLSys 2020), as Optuna's
// SuccessiveHalvingPruner: when a trial's report first reaches rung k's
// budget r·η^k, its metric is recorded at that rung and the trial goes on
// only if it ranks within the top ⌊n/η⌋ of the n trials recorded there
// (the best one when n < η).
type ashaRule struct {
	MinBudget float64 `json:"min_budget"`
	Eta        float64 `json:"eta"`
	MaxBudget float64 `json:"max_budget,omitempty"`
	// Rungs hold, per rung, how many trials reached it and the best
	// values recorded there, sorted.
	Rungs []ashaRung `json:"rungs,omitempty"`
	// Passed is the highest rung each outstanding trial has reached.
	Passed map[string]int `json:"passed,omitempty"`
}

type ashaRung struct {
	N    int       `json:"n"`
	Best []float64 `json:"best"`
}

// budget is rung k's budget.
func (r *ashaRule) budget(k int) float64 { return r.MinBudget * math.Pow(r.Eta, float64(k)) }

// rungSlack is the relative rounding allowed on a rung's budget r·η^k: with
// r written as R/η^S, the product can land an ulp above the whole number
// R/η^(S−k) a trainer reports at, and that report must still reach it.
const rungSlack = 1e-9

func (r *ashaRule) observe(id string, samples, loss float64) bool {
	next := 0
	if k, ok := r.Passed[id]; ok {
		next = k + 1
	}
	for ; samples >= r.budget(next)*(1-rungSlack) && (r.MaxBudget == 0 || r.budget(next) <= r.MaxBudget*(1+rungSlack)); next++ {
		r.Passed[id] = next
		for len(r.Rungs) <= next {
			r.Rungs = append(r.Rungs, ashaRung{})
		}
		g := &r.Rungs[next]
		g.N++
		i, _ := slices.BinarySearch(g.Best, loss)
		g.Best = slices.Insert(g.Best, i, loss)
		if len(g.Best) > ashaKeep {
			g.Best = g.Best[:ashaKeep]
		}
		top := max(int(float64(g.N)/r.Eta), 1)
		if loss > g.Best[min(top, len(g.Best))-1] {
			return true
		}
	}
	return false
}

func (r *ashaRule) forget(id string) { delete(r.Passed, id) }

func (r *ashaRule) check() error {
	for k, g := range r.Rungs {
		if len(g.Best) > g.N || len(g.Best) > ashaKeep || !slices.IsSorted(g.Best) {
			return fmt.Errorf("rung %d: %d values kept of %d, sorted %v", k, len(g.Best), g.N, slices.IsSorted(g.Best))
		}
	}
	if r.Passed == nil {
		r.Passed = map[string]int{}
	}
	return nil
}
