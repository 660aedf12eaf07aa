package searchbench

import (
	"math"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A conditional space (issue 30): a training job's choice of optimiser
// and each optimiser's own parameters, with a weight decay and a batch
// size that every optimiser shares. The "validation loss" is a
// noise-free surface written for this benchmark, not fitted to any
// training run: each optimiser has its own optimum, its own best weight
// decay and batch size, and its learning rate interacts with the batch
// size (and with momentum or β₁). SGD has the lowest minimum (0.04) in
// the narrowest basin; Adam a broad one (0.06); RMSprop in between
// (0.08). scripts/conditional_vs_optuna.py computes it the same way
// (TestConditionalValues pins values both give) and searches it with
// Optuna's define-by-run TPE.

// ConditionalName is the conditional benchmark's name.
const ConditionalName = "conditional"

// conditionalOptimum is its minimum: SGD with momentum 0.9, batch 256,
// weight decay 10^−3.5 and an effective step lr/(1 − momentum) of
// 10^−0.35.
const conditionalOptimum = 0.04

func conditionalSpace() hpo.Space {
	when := func(opt string) *hpo.Condition { return &hpo.Condition{Param: "optimizer", Values: []string{opt}} }
	return hpo.Space{
		{Name: "optimizer", Type: hpo.ParamChoice, Choices: []string{"sgd", "adam", "rmsprop"}},
		{Name: "sgd_lr", Type: hpo.ParamFloat, Min: 1e-4, Max: 1, Log: true, When: when("sgd")},
		{Name: "momentum", Type: hpo.ParamFloat, Min: 0, Max: 0.99, When: when("sgd")},
		{Name: "adam_lr", Type: hpo.ParamFloat, Min: 1e-5, Max: 0.1, Log: true, When: when("adam")},
		{Name: "beta1", Type: hpo.ParamFloat, Min: 0.5, Max: 0.99, When: when("adam")},
		{Name: "eps", Type: hpo.ParamFloat, Min: 1e-10, Max: 1e-3, Log: true, When: when("adam")},
		{Name: "rmsprop_lr", Type: hpo.ParamFloat, Min: 1e-5, Max: 0.1, Log: true, When: when("rmsprop")},
		{Name: "alpha", Type: hpo.ParamFloat, Min: 0.8, Max: 0.999, When: when("rmsprop")},
		{Name: "weight_decay", Type: hpo.ParamFloat, Min: 1e-6, Max: 0.1, Log: true},
		{Name: "batch_size", Type: hpo.ParamInt, Min: 16, Max: 1024, Log: true},
	}
}

// conditionalLoss is the surface, with b = log₂(batch/128) and
// w = log₁₀(weight decay):
//
//	sgd:     0.04 + 0.5(e − (−0.5 + 0.15b))² + 2(m − 0.9)² + 0.08(w + 3.5)² + 0.03(b − 1)²,
//	         e = log₁₀ lr − log₁₀(1 − m)
//	adam:    0.06 + 0.3a² + 0.8(β₁ − 0.9)² + 0.01(log₁₀ ε + 8)² + 0.05(w + 5)² + 0.03(b + 1)²,
//	         a = log₁₀ lr − (−3 + 0.15b) − 0.5(β₁ − 0.9)
//	rmsprop: 0.08 + 0.4r² + 10(α − 0.95)² + 0.06(w + 4.5)² + 0.03b²,
//	         r = log₁₀ lr − (−3.5 + 0.1b)
func conditionalLoss(p hpo.Params) float64 {
	b := math.Log2(p["batch_size"].Num / 128)
	w := math.Log10(p["weight_decay"].Num)
	sq := func(x float64) float64 { return x * x }
	switch p["optimizer"].Str {
	case "sgd":
		m := p["momentum"].Num
		e := math.Log10(p["sgd_lr"].Num) - math.Log10(1-m)
		return 0.04 + 0.5*sq(e-(-0.5+0.15*b)) + 2*sq(m-0.9) + 0.08*sq(w+3.5) + 0.03*sq(b-1)
	case "adam":
		b1 := p["beta1"].Num
		a := math.Log10(p["adam_lr"].Num) - (-3 + 0.15*b) - 0.5*(b1-0.9)
		return 0.06 + 0.3*sq(a) + 0.8*sq(b1-0.9) + 0.01*sq(math.Log10(p["eps"].Num)+8) + 0.05*sq(w+5) + 0.03*sq(b+1)
	default: // rmsprop
		r := math.Log10(p["rmsprop_lr"].Num) - (-3.5 + 0.1*b)
		return 0.08 + 0.4*sq(r) + 10*sq(p["alpha"].Num-0.95) + 0.06*sq(w+4.5) + 0.03*sq(b)
	}
}

// conditional is the benchmark as an Objective: only searchers that
// search conditional spaces run on it (hpo.Config.Validate refuses the
// others, naming the algorithm).
func conditional() Objective {
	return Objective{
		Name: ConditionalName, Doc: "a conditional space: optimizer (sgd, adam, rmsprop) and each one's parameters, a shared weight decay and batch size; minimum 0.04",
		Space: conditionalSpace(), Optimum: conditionalOptimum, F: conditionalLoss,
	}
}
