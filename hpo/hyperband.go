package hpo

import (
	"fmt"
	"math"
)

// AlgorithmHyperband names Hyperband over ASHA brackets.
const AlgorithmHyperband = "hyperband"

// HyperbandSettings configure search.hyperband.
type HyperbandSettings struct {
	// Sampler chooses the trials: random (default), quasirandom, grid,
	// tpe, evolution or local, with its own section's settings.
	Sampler string `json:"sampler,omitempty"`
	// MinBudget is r, the smallest first rung, in the budget unit (search.budget_unit)
	// (required).
	MinBudget float64 `json:"min_budget"`
	// MaxBudget is R, a trial's full budget in the budget unit (search.budget_unit)
	// (required): the brackets' first rungs are R/η^s for s = 0..S with
	// R/η^S ≥ r.
	MaxBudget float64 `json:"max_budget"`
	// ReductionFactor is η (default 3).
	ReductionFactor float64 `json:"reduction_factor,omitempty"`
	// Variant is promotion or stopping, as ASHA's (ASHASettings.Variant):
	// each bracket is promotion ASHA or stopping ASHA. Default stopping,
	// so that a spec written before variants existed keeps its meaning.
	Variant string `json:"variant,omitempty"`
}

// Validate checks the settings; errors name the field.
func (s *HyperbandSettings) Validate() error {
	switch {
	case !(s.MinBudget > 0) || math.IsInf(s.MinBudget, 0):
		return fmt.Errorf("min_budget: %v must be > 0 (the smallest first rung, in the budget unit (search.budget_unit))", s.MinBudget)
	case !(s.MaxBudget >= s.MinBudget) || math.IsInf(s.MaxBudget, 0):
		return fmt.Errorf("max_budget: %v must be ≥ min_budget %v (a trial's full budget in the budget unit (search.budget_unit))", s.MaxBudget, s.MinBudget)
	case s.ReductionFactor != 0 && !(s.ReductionFactor >= 2 && s.ReductionFactor <= 100):
		return fmt.Errorf("reduction_factor: %v must be in [2, 100]", s.ReductionFactor)
	}
	return validateVariant(s.Variant)
}

func init() {
	register(algorithm{
		name:    AlgorithmHyperband,
		summary: "Hyperband: ASHA brackets from aggressive (first rung r) to none (first rung R), trials spread over them as Hyperband's budgets; variant stopping (default) or promotion (paused trials continued)",
		section: func(s Settings) (validator, bool) { return s.Hyperband, s.Hyperband != nil },
		sampler: func(s Settings) string {
			if s.Hyperband == nil {
				return ""
			}
			return s.Hyperband.Sampler
		},
		new: func(cfg Config) (Searcher, error) {
			set := cfg.Settings.Hyperband
			if set == nil {
				return nil, fmt.Errorf("search.hyperband.min_budget: missing (the smallest first rung, in the budget unit (search.budget_unit))")
			}
			if set.Variant == VariantPromotion {
				return newHyperbandPromoter(cfg, set)
			}
			return newStopper(cfg, AlgorithmHyperband, set.Sampler, newHyperbandRule(set))
		},
	})
}

// hyperbandRule is Hyperband (Li, Jamieson, DeSalvo, Rostamizadeh,
// Talwalkar, JMLR 2018) run as asynchronous brackets, as the ASHA paper
// and Optuna's HyperbandPruner do: bracket s is ASHA with first rung
// R/η^s, for s = 0 (no early stopping) .. S; trial k joins a bracket in
// proportion to Hyperband's trial counts n_s = ⌈(S+1)/(s+1)·η^s⌉, by
// smooth weighted round robin, so assignment is deterministic.
type hyperbandRule struct {
	Brackets []*ashaRule `json:"brackets"`
	Weights  []float64   `json:"weights"`
	// Credit is each bracket's round-robin credit.
	Credit []float64 `json:"credit"`
	// Of is the bracket of each outstanding trial.
	Of map[string]int `json:"of,omitempty"`
}

func newHyperbandRule(set *HyperbandSettings) *hyperbandRule {
	eta := set.ReductionFactor
	if eta == 0 {
		eta = 3
	}
	top := int(math.Floor(math.Log(set.MaxBudget/set.MinBudget)/math.Log(eta) + 1e-9))
	r := &hyperbandRule{Of: map[string]int{}}
	for s := 0; s <= top; s++ {
		first := set.MaxBudget / math.Pow(eta, float64(s))
		r.Brackets = append(r.Brackets, &ashaRule{MinBudget: first, Eta: eta, MaxBudget: set.MaxBudget, Passed: map[string]int{}})
		r.Weights = append(r.Weights, math.Ceil(float64(top+1)/float64(s+1)*math.Pow(eta, float64(s))))
		r.Credit = append(r.Credit, 0)
	}
	return r
}

// bracket returns id's bracket, assigning one on its first report.
func (r *hyperbandRule) bracket(id string) int {
	if b, ok := r.Of[id]; ok {
		return b
	}
	b := nextBracket(r.Weights, r.Credit)
	r.Of[id] = b
	return b
}

// nextBracket is smooth weighted round robin: every bracket gains its
// weight in credit, the one with the most (the first among equals) is
// chosen and pays the total back.
func nextBracket(weights, credit []float64) int {
	total, best := 0.0, 0
	for i, w := range weights {
		credit[i] += w
		total += w
		if credit[i] > credit[best] {
			best = i
		}
	}
	credit[best] -= total
	return best
}

// newHyperbandPromoter is Hyperband's promotion variant: the brackets and
// weights of newHyperbandRule, bracket s a promotion ASHA whose rungs are
// at R/η^(s−k) for k = 0..s (bracket 0 one rung, R: no promotions), so
// every bracket's rungs lie at the same budgets R/η^j.
func newHyperbandPromoter(cfg Config, set *HyperbandSettings) (Searcher, error) {
	r := newHyperbandRule(set)
	eta := r.Brackets[0].Eta
	ladders := make([][]float64, len(r.Brackets))
	for s := range ladders {
		for k := 0; k <= s; k++ {
			ladders[s] = append(ladders[s], set.MaxBudget/math.Pow(eta, float64(s-k)))
		}
	}
	return newPromoter(cfg, AlgorithmHyperband, set.Sampler, eta, ladders, r.Weights)
}

func (r *hyperbandRule) observe(id string, samples, loss float64) bool {
	b := r.Brackets[r.bracket(id)]
	if b.MinBudget >= b.MaxBudget {
		return false // the bracket without early stopping
	}
	return b.observe(id, samples, loss)
}

// level counts rungs at the budgets R/η^j the brackets share: bracket s's
// rung k is at R/η^(s−k), level S−s+k+1 (S the last bracket).
func (r *hyperbandRule) level(id string) int {
	b, ok := r.Of[id]
	if !ok {
		return 0
	}
	k := r.Brackets[b].level(id)
	if k == 0 {
		return 0
	}
	return len(r.Brackets) - 1 - b + k
}

func (r *hyperbandRule) forget(id string) {
	if b, ok := r.Of[id]; ok {
		r.Brackets[b].forget(id)
		delete(r.Of, id)
	}
}

func (r *hyperbandRule) check() error {
	if len(r.Brackets) == 0 || len(r.Weights) != len(r.Brackets) || len(r.Credit) != len(r.Brackets) {
		return fmt.Errorf("%d brackets, %d weights, %d credits", len(r.Brackets), len(r.Weights), len(r.Credit))
	}
	for i, b := range r.Brackets {
		if b == nil {
			return fmt.Errorf("bracket %d: missing", i)
		}
		if err := b.check(); err != nil {
			return fmt.Errorf("bracket %d: %w", i, err)
		}
	}
	if r.Of == nil {
		r.Of = map[string]int{}
	}
	for id, b := range r.Of {
		if b < 0 || b >= len(r.Brackets) {
			return fmt.Errorf("trial %s in bracket %d of %d", id, b, len(r.Brackets))
		}
	}
	return nil
}
