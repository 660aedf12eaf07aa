package searchbench

import (
	"math"
	"slices"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// State is a stateful objective's training state: what a trial's
// checkpoint holds (weights, counters).
type State []float64

// Trainer makes an objective stateful: a trial trains a state of its own,
// so a trial created from another's checkpoint (hpo.Create.From) goes on
// from that state with its own parameters, as population based training
// needs. A learning-curve table cannot do that: its curves are per
// parameter setting.
type Trainer struct {
	// Init is a new trial's state.
	Init func() State
	// Train trains s for units budget units with parameters p and returns
	// the new state and the objective's value there. It must not modify s.
	Train func(s State, p hpo.Params, units float64) (State, float64)
	// Every is the budget units between two reports of a trial.
	Every float64
}

// PBT toy problem constants (Jaderberg et al. 2017, section 4.1).
const (
	toySteps = 40   // a trial's full budget: gradient steps
	toyRate  = 0.01 // gradient ascent step size
	toyStart = 0.9  // θ0 = θ1 at the start
)

// pbtToy is the toy problem of M. Jaderberg et al., "Population Based
// Training of Neural Networks", arXiv:1711.09846, section 4.1 and figure
// 2. The state is θ ∈ R², starting at (0.9, 0.9); the hyperparameters
// h = (h0, h1) ∈ [0, 1]². Each budget unit is one gradient ascent step
// of size 0.01 on the surrogate
//
//	Q̂(θ|h) = 1.2 − (h0·θ0² + h1·θ1²),  so  θi ← θi·(1 − 0.02·hi),
//
// while what counts is the true objective Q(θ) = 1.2 − θ0² − θ1². The
// bench minimises, so a trial reports −Q(θ) = θ0² + θ1² − 1.2 after every
// step. A trial's full budget is 40 steps; since each step shrinks θi by a
// factor of at least 0.98, no schedule of h (PBT's included) gets below
// 2·(0.9·0.98⁴⁰)² − 1.2 ≈ −0.87819 within it, which h = (1, 1) reaches:
// that is the optimum.
func pbtToy() Objective {
	theta := toyStart * math.Pow(1-2*toyRate, toySteps)
	return Objective{
		Name: "pbt-toy",
		Doc: "Jaderberg et al.'s PBT toy problem (arXiv:1711.09846, §4.1): θ from (0.9, 0.9), " +
			"40 gradient steps on 1.2 − (h0·θ0² + h1·θ1²), reports −Q(θ) = θ0² + θ1² − 1.2; stateful (Create.From)",
		Space: floats([]string{"h0", "h1"}, 0, 1),
		// The best reachable in 40 steps: h = (1, 1) throughout.
		Optimum:    2*theta*theta - 1.2,
		FullBudget: toySteps,
		Trainer: &Trainer{
			Init:  func() State { return State{toyStart, toyStart} },
			Every: 1,
			Train: func(s State, p hpo.Params, units float64) (State, float64) {
				theta, h := slices.Clone(s), [2]float64{p["h0"].Num, p["h1"].Num}
				for range int(math.Round(units)) { // units are whole steps
					for i := range theta {
						theta[i] -= toyRate * 2 * h[i] * theta[i] // ascent on Q̂: ∂Q̂/∂θi = −2·hi·θi
					}
				}
				return theta, theta[0]*theta[0] + theta[1]*theta[1] - 1.2
			},
		},
	}
}
