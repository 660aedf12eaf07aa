package hpo

import (
	"fmt"
	"math"
	"slices"
)

// AlgorithmASHA names asynchronous successive halving.
const AlgorithmASHA = "asha"

// The variants of ASHA and Hyperband (ASHASettings.Variant,
// HyperbandSettings.Variant).
const (
	// VariantPromotion: a trial runs to its rung's budget and pauses there,
	// holding no nodes; the best 1/η of a rung are continued to the next
	// (Li et al. 2020, Algorithm 2; promotion.go).
	VariantPromotion = "promotion"
	// VariantStopping: a trial runs to its end unless it falls behind at
	// a rung, where it is stopped (Optuna's SuccessiveHalvingPruner).
	VariantStopping = "stopping"
)

// validateVariant checks a variant setting; "" is the default.
func validateVariant(v string) error {
	if v != "" && v != VariantPromotion && v != VariantStopping {
		return fmt.Errorf("variant: %q is not one of %s, %s", v, VariantPromotion, VariantStopping)
	}
	return nil
}

// ASHASettings configure search.asha.
type ASHASettings struct {
	// Sampler chooses the trials: random (default), quasirandom, grid,
	// tpe, evolution or local, with its own section's settings.
	Sampler string `json:"sampler,omitempty"`
	// MinBudget is the first rung's budget r, in the budget unit (search.budget_unit)
	// (required): a trial is first judged once it has trained this many.
	MinBudget float64 `json:"min_budget"`
	// ReductionFactor is η (default 3): rung k is at budget r·η^k, and a
	// trial goes on past a rung only if it is in the top 1/η of the
	// trials that reached it.
	ReductionFactor float64 `json:"reduction_factor,omitempty"`
	// MaxBudget is R. Stopping: it caps the rungs (default: none), past
	// it nothing is stopped. Promotion (required): the top rung's budget,
	// a promoted trial's full training; rungs below it are r·η^k < R.
	MaxBudget float64 `json:"max_budget,omitempty"`
	// Variant is promotion or stopping (VariantPromotion, VariantStopping).
	// Default stopping, with or without max_budget: a spec written before
	// variants existed keeps its meaning (and stays comparable with
	// Optuna's SuccessiveHalvingPruner, which the benchmarks run), and
	// promotion, which needs max_budget, is asked for by name.
	Variant string `json:"variant,omitempty"`
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
	case s.Variant == VariantPromotion && s.MaxBudget == 0:
		return fmt.Errorf("max_budget: required by variant %s (R, the top rung's budget in the budget unit (search.budget_unit))", VariantPromotion)
	}
	return validateVariant(s.Variant)
}

func init() {
	register(algorithm{
		name:    AlgorithmASHA,
		vector:  true, // with several objectives or constraints, MO-ASHA (moasha.go)
		summary: "asynchronous successive halving at rungs r·η^k: variant stopping (default; a trial past a rung goes on only if in the top 1/η there) or promotion (a trial pauses at each rung; the top 1/η are continued to the next)",
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
			if cfg.MultiObjective() {
				return newMOASHA(cfg, set, r)
			}
			if set.Variant == VariantPromotion {
				return newPromoter(cfg, AlgorithmASHA, set.Sampler, r.Eta, [][]float64{ashaLadder(r)}, nil)
			}
			return newStopper(cfg, AlgorithmASHA, set.Sampler, r)
		},
	})
}

// ashaKeep bounds the values a rung keeps: the best ashaKeep of them, so
// that the snapshot stays small at any campaign size. Either variant is
// exact while a rung's top ⌊n/η⌋ fits (up to ashaKeep·η trials recorded
// at a rung: 3,072 with η = 3). Beyond, stopping compares with the
// ashaKeep-th best, which lets more trials on, never fewer. Promotion
// can only promote a trial among the kept best: once those are all
// promoted, the rung promotes again only when a newcomer ranks among
// them, so it promotes fewer than ⌊n/η⌋, never more — with metrics in
// random order about ashaKeep·(1 + ln(n/ashaKeep)) of n trials (5,700 of
// 100,000, where ASHA promotes 33,333 at η = 3), the rest of max_trials
// going to new trials instead.
const ashaKeep = 1024

// ashaLadder is promotion ASHA's rung budgets: r·η^k while below R, then R.
func ashaLadder(r *ashaRule) []float64 {
	var ladder []float64
	for k := 0; r.budget(k) < r.MaxBudget*(1-rungSlack); k++ {
		ladder = append(ladder, r.budget(k))
	}
	return append(ladder, r.MaxBudget)
}

// ashaRule is the stopping variant of ASHA (Li et al., "A System for
// Massively Parallel Hyperparameter Tuning", MLSys 2020), as Optuna's
// SuccessiveHalvingPruner: when a trial's report first reaches rung k's
// budget r·η^k, its metric is recorded at that rung and the trial goes on
// only if it ranks within the top ⌊n/η⌋ of the n trials recorded there
// (the best one when n < η).
type ashaRule struct {
	MinBudget float64 `json:"min_budget"`
	Eta       float64 `json:"eta"`
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
	return r.climb(id, samples, func(k int) bool {
		for len(r.Rungs) <= k {
			r.Rungs = append(r.Rungs, ashaRung{})
		}
		g := &r.Rungs[k]
		g.N++
		i, _ := slices.BinarySearch(g.Best, loss)
		g.Best = slices.Insert(g.Best, i, loss)
		if len(g.Best) > ashaKeep {
			g.Best = g.Best[:ashaKeep]
		}
		return loss > g.Best[min(top(g.N, r.Eta), len(g.Best))-1]
	})
}

// climb walks the rungs that trial id's report at samples newly reaches
// (rung k at budget r·η^k, none past MaxBudget when it is set), judging
// the trial at each: true as soon as behind(k) says it fell behind at
// rung k. The judging is one objective's (observe) or several's
// (moRule.observeResult).
func (r *ashaRule) climb(id string, samples float64, behind func(k int) bool) bool {
	next := 0
	if k, ok := r.Passed[id]; ok {
		next = k + 1
	}
	for ; samples >= r.budget(next)*(1-rungSlack) && (r.MaxBudget == 0 || r.budget(next) <= r.MaxBudget*(1+rungSlack)); next++ {
		r.Passed[id] = next
		if behind(next) {
			return true
		}
	}
	return false
}

// top is how many of n results recorded at a rung go on: max(⌊n/η⌋, 1).
func top(n int, eta float64) int { return max(int(float64(n)/eta), 1) }

func (r *ashaRule) forget(id string) { delete(r.Passed, id) }

func (r *ashaRule) level(id string) int {
	if k, ok := r.Passed[id]; ok {
		return k + 1
	}
	return 0
}

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
