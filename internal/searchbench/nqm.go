package searchbench

import (
	"math"
	"slices"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Noisy quadratic model constants: five directions with curvatures
// log-spaced from 1 down to 0.1, gradient noise scale 0.01, 500 SGD steps
// per trial, a report every 5.
const (
	nqmDims     = 5
	nqmMinCurv  = 0.1  // hᵢ = nqmMinCurv^(i/(nqmDims−1)), i = 0…4
	nqmNoise    = 0.01 // c
	nqmStart    = 1.0  // mᵢ at step 0
	nqmSteps    = 500  // a trial's full budget
	nqmEvery    = 5    // steps between two reports
	nqmMinRate  = 1e-4 // the learning rate's range, log scale
	nqmMaxRate  = 1.0
	nqmDivergeM = 1e6 // mᵢ's cap (see nqmModel.step)
)

// nqm is the noisy quadratic model of SGD (Schaul, Zhang & LeCun, "No
// more pesky learning rates", ICML 2013; G. Zhang et al., "Which
// algorithmic choices matter at which batch sizes? Insights from a noisy
// quadratic model", NeurIPS 2019), a problem whose best learning rate
// falls as training goes on. A large rate makes fast early progress but
// leaves a high noise floor (about lr·hᵢ·c/4 in direction i); a small one
// has a low floor but is slow on the flat directions. The best constant
// rate over 500 steps (≈ 0.068) ends near 4.3·10⁻⁴; a geometric decay
// from 0.5 to 0.003 ends near 8.3·10⁻⁵, five times lower
// (TestNQMScheduleBeatsConstant). A trial's state is m, so PBT's exploit
// copies it, and PBT can learn a decay that no single rate, and so no
// searcher of constant parameters, finds.
//
// The spectrum spans one decade on purpose. PBT ranks members by their
// loss now, so it follows the rate that is best over the next interval;
// over a wide spectrum (curvatures down to 10⁻³) that rate is too small
// for the flat directions (the short-horizon bias of Wu et al.,
// "Understanding short-horizon bias in stochastic meta-optimization",
// ICLR 2018), and following it greedily ends no lower than the best
// constant rate, although a decay would end many times lower.
func nqm() Objective {
	return nqmBench().objective("nqm",
		"noisy quadratic model of SGD (Zhang et al. 2019): the best learning rate falls as training goes on; "+
			"5 curvatures from 1 to 0.1, 500 steps, lr in [1e-4, 1] (log); stateful (Create.From); optimum: a lower bound",
		nqmMinRate, nqmMaxRate)
}

// nqmBench is the model behind nqm, with the constants above.
func nqmBench() nqmModel {
	curv := make([]float64, nqmDims)
	for i := range curv {
		curv[i] = math.Pow(nqmMinCurv, float64(i)/(nqmDims-1))
	}
	return nqmModel{curv: curv, noise: nqmNoise, start: nqmStart, steps: nqmSteps, every: nqmEvery}
}

// nqmModel is a noisy quadratic model of SGD: the loss ½·Σ hᵢ·θᵢ² in the
// eigenbasis of its Hessian, minimised by SGD whose gradient noise has
// covariance proportional to the Hessian, variance hᵢ·c in direction i
// (Zhang et al.'s C = H/B). It follows mᵢ = E[θᵢ²], the expected squared
// distance from the optimum along direction i, rather than a sampled θ,
// so it is deterministic.
type nqmModel struct {
	curv  []float64 // hᵢ, the Hessian's eigenvalues
	noise float64   // c
	start float64   // mᵢ at step 0, every i
	steps float64   // a trial's full budget, in SGD steps
	every float64   // steps between two reports
}

// step is one SGD step with learning rate lr, on m in place:
//
//	θᵢ ← θᵢ − lr·(hᵢ·θᵢ + εᵢ),  E[εᵢ] = 0, E[εᵢ²] = hᵢ·c,
//	mᵢ ← (1 − lr·hᵢ)²·mᵢ + lr²·hᵢ·c.
//
// A rate past 2/hᵢ makes direction i diverge; mᵢ is capped at
// nqmDivergeM so that the loss stays a large finite value, not +Inf.
func (q nqmModel) step(m []float64, lr float64) {
	for i, h := range q.curv {
		m[i] = min((1-lr*h)*(1-lr*h)*m[i]+lr*lr*h*q.noise, nqmDivergeM)
	}
}

// loss is the expected loss E[½·Σ hᵢ·θᵢ²] = ½·Σ hᵢ·mᵢ.
func (q nqmModel) loss(m []float64) float64 {
	var l float64
	for i, h := range q.curv {
		l += h * m[i] / 2
	}
	return l
}

// bound is a lower bound on the loss after the full budget T, whatever
// the schedule. Direction i alone is best served by the greedy rate
// lr = mᵢ/(hᵢ·mᵢ + c), which gives 1/mᵢ ← 1/mᵢ + hᵢ/c; greedy is optimal
// for one direction, since the next mᵢ grows with the last at any rate.
// So after T steps mᵢ ≥ m₀·c/(c + T·hᵢ·m₀). One rate shared by directions
// of different curvatures cannot serve each its best, so the bound is
// reached only in one dimension.
func (q nqmModel) bound() float64 {
	var l float64
	for _, h := range q.curv {
		l += h * q.start * q.noise / (q.noise + q.steps*h*q.start) / 2
	}
	return l
}

// objective is q as a stateful objective over lr ∈ [lo, hi] (log scale):
// a trial's state is m, and it reports the loss every q.every steps.
func (q nqmModel) objective(name, doc string, lo, hi float64) Objective {
	return Objective{
		Name:       name,
		Doc:        doc,
		Space:      hpo.Space{{Name: "lr", Type: hpo.ParamFloat, Min: lo, Max: hi, Log: true}},
		Optimum:    q.bound(),
		FullBudget: q.steps,
		Trainer: &Trainer{
			Init: func() State {
				m := make(State, len(q.curv))
				for i := range m {
					m[i] = q.start
				}
				return m
			},
			Every: q.every,
			Train: func(s State, p hpo.Params, units float64) (State, float64) {
				m, lr := slices.Clone(s), p["lr"].Num
				for range int(math.Round(units)) { // units are whole steps
					q.step(m, lr)
				}
				return m, q.loss(m)
			},
		},
	}
}
