package searchbench

import (
	"math"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Three black-box functions that no searcher here was tuned on, written
// for issue 30 to check multivariate TPE away from the four standard ones:
// a rotated, ill-conditioned quadratic (its parameters interact), a
// shifted Styblinski–Tang (many local minima, separable) and a log-scaled
// mixed space whose best learning rate moves with the batch size, as a
// training job's does. scripts/search_vs_optuna.py computes each the same
// way (TestBlackBoxValues pins values both give).

// rotQuadShift is rotquad6's minimiser.
var rotQuadShift = [6]float64{1.5, -2, 0.5, 3, -1, 2.5}

// householder applies I − 2vvᵀ/(vᵀv) to x.
func householder(v, x []float64) {
	var vv, vx float64
	for i := range v {
		vv += v[i] * v[i]
		vx += v[i] * x[i]
	}
	for i := range x {
		x[i] -= 2 * vx / vv * v[i]
	}
}

// rotQuad6 is Σ λ_i y_i² with y = H₂H₁(x − s), two Householder
// reflections (v₁ = (1, 2, 3, 4, 5, 6), v₂ = (1, −1, 2, −2, 3, −3)) and
// λ_i = 10^(3i/5), i = 0..5: an ellipsoid of condition 1,000 whose axes
// lie along no parameter, on [−5, 5]^6; minimum 0 at s.
func rotQuad6() Objective {
	v1 := []float64{1, 2, 3, 4, 5, 6}
	v2 := []float64{1, -1, 2, -2, 3, -3}
	return Objective{
		Name: "rotquad6", Doc: "a rotated quadratic of condition 1,000, 6 floats in [−5, 5], minimum 0", Space: floats(xnames(6), -5, 5),
		F: func(p hpo.Params) float64 {
			y := xs(p, 6)
			for i := range y {
				y[i] -= rotQuadShift[i]
			}
			householder(v1, y)
			householder(v2, y)
			var sum float64
			for i, v := range y {
				sum += math.Pow(10, 3*float64(i)/5) * v * v
			}
			return sum
		},
	}
}

// styblinskiShift moves styblinski5's minimum off the diagonal.
var styblinskiShift = [5]float64{0.3, -0.7, 1.1, -0.2, 0.6}

// styblinskiMin is ½(y⁴ − 16y² + 5y) at its minimiser y* = −2.903534.
const styblinskiMin = -39.16616570377142

// styblinski5 is the Styblinski–Tang function of y = x − s on [−5, 5]^5,
// ½ Σ (y_i⁴ − 16y_i² + 5y_i) − 5·(−39.16617): 2⁵ local minima, the
// global one 0 at x_i = s_i − 2.903534 (Styblinski & Tang 1990, shifted).
func styblinski5() Objective {
	return Objective{
		Name: "styblinski5", Doc: "Styblinski–Tang, shifted, 5 floats in [−5, 5], 32 local minima, global minimum 0", Space: floats(xnames(5), -5, 5),
		F: func(p hpo.Params) float64 {
			var sum float64
			for i, x := range xs(p, 5) {
				y := x - styblinskiShift[i]
				sum += 0.5*(y*y*y*y-16*y*y+5*y) - styblinskiMin
			}
			return sum
		},
	}
}

// logMixed is a training job's space on log scales: a learning rate whose
// best value grows as √batch (log10 lr* = −3 + ½·log10(batch/128)), a
// weight decay whose best value grows with dropout (log10 wd* = −4 +
// 2·dropout), the batch size (an int on a log scale, best at 128 by a
// small margin), dropout, depth and an activation. Minimum 0 at lr =
// 1e−3, batch = 128, wd = 10^−3.4, dropout = 0.3, layers = 4, gelu.
func logMixed() Objective {
	s := hpo.Space{
		{Name: "lr", Type: hpo.ParamFloat, Min: 1e-5, Max: 1, Log: true},
		{Name: "batch", Type: hpo.ParamInt, Min: 16, Max: 1024, Log: true},
		{Name: "wd", Type: hpo.ParamFloat, Min: 1e-6, Max: 0.1, Log: true},
		{Name: "dropout", Type: hpo.ParamFloat, Min: 0, Max: 0.8},
		{Name: "layers", Type: hpo.ParamInt, Min: 1, Max: 8},
		{Name: "act", Type: hpo.ParamChoice, Choices: []string{"relu", "gelu", "tanh"}},
	}
	penalty := map[string]float64{"relu": 0.1, "gelu": 0, "tanh": 0.4}
	return Objective{
		Name: "logmixed", Doc: "lr, batch and weight decay on log scales with interactions, dropout, depth and an activation; minimum 0", Space: s,
		F: func(p hpo.Params) float64 {
			lr, batch, wd := math.Log10(p["lr"].Num), math.Log10(p["batch"].Num/128), math.Log10(p["wd"].Num)
			drop, layers := p["dropout"].Num, p["layers"].Num
			a := lr - (-3 + 0.5*batch)
			b := wd - (-4 + 2*drop)
			return a*a + 0.5*b*b + 2*(drop-0.3)*(drop-0.3) + 0.05*(layers-4)*(layers-4) + 0.3*batch*batch + penalty[p["act"].Str]
		},
	}
}
