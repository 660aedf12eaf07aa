package searchbench

import (
	"math"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// crossingBudget is a crossing trial's full budget: it reports once per
// unit, so ASHA's rungs at R/27, R/9, R/3 (η = 3) fall on reports.
const crossingBudget = 81

// crossingLoss is the crossing family's curve: a trial whose learning
// rate lr is high converges fast to a high plateau, one whose lr is low
// slowly to a low one, so the curves cross. With u = (log10 lr + 4)/4 in
// [0, 1] and t the fraction of the full budget trained,
//
//	loss(t) = P + (2 − P)·exp(−t/τ),  P = 0.05 + 0.6(u − 0.15)² + Q,  τ = 0.01 + 0.1(1−u)³,
//
// Q = 0.4((q1 − 0.7)² + (q2 − 0.2)²) a shift that does not cross. At the
// first rung (t = 1/27) the best trials have u ≈ 0.7 (loss 0.33, 1.2 at
// u = 0.15); at the second (1/9) u ≈ 0.45; at the end u ≈ 0.15 (0.05,
// 0.23 at u = 0.7): a sampler that learns from the first rung proposes
// ever faster starters. scripts/search_vs_optuna.py mirrors it.
func crossingLoss(lr, q1, q2, t float64) float64 {
	u := (math.Log10(lr) + 4) / 4
	q := 0.4 * ((q1-0.7)*(q1-0.7) + (q2-0.2)*(q2-0.2))
	p := 0.05 + 0.6*(u-0.15)*(u-0.15) + q
	tau := 0.01 + 0.1*math.Pow(1-u, 3)
	return p + (2-p)*math.Exp(-t/tau)
}

// crossingOptimum is the best final loss: Q = 0, u on a grid of 10^5.
func crossingOptimum() float64 {
	best := math.Inf(1)
	for i := range 100001 {
		u := float64(i) / 100000
		best = min(best, crossingLoss(math.Pow(10, 4*u-4), 0.7, 0.2, 1))
	}
	return best
}

// crossing is the learning-curve objective whose curves cross (issue 30):
// what a rung judges early is not what wins at the end.
func crossing() Objective {
	return Objective{
		Name: "crossing", Doc: "learning curves that cross: fast starters plateau high, slow starters end lower (lr log in [1e-4, 1], q1, q2 in [0, 1]; 81 reports)",
		Space: hpo.Space{
			{Name: "lr", Type: hpo.ParamFloat, Min: 1e-4, Max: 1, Log: true},
			{Name: "q1", Type: hpo.ParamFloat, Min: 0, Max: 1},
			{Name: "q2", Type: hpo.ParamFloat, Min: 0, Max: 1},
		},
		Optimum: crossingOptimum(), FullBudget: crossingBudget,
		Curve: func(p hpo.Params) []Point {
			pts := make([]Point, crossingBudget)
			for i := range pts {
				s := float64(i + 1)
				pts[i] = Point{Samples: s, Value: crossingLoss(p["lr"].Num, p["q1"].Num, p["q2"].Num, s/crossingBudget)}
			}
			return pts
		},
	}
}

// crossingLateLoss is the second crossing family: the crossing comes late
// and where a curve ends depends on two parameters together. With
// u = (log10 lr + 4)/4 and w a width in [0, 1], a trial's slowness is
// s = (1 − u + w)/2 and
//
//	loss(t) = P + (2 − P)·exp(−t/τ),  P = 0.05 + 0.4(1 − s)² + 0.6(u + w − 1)² + Q,  τ = 0.02 + 0.3s³,
//
// Q = 0.3(q − 0.3)² a shift that does not cross. The plateau is lowest on
// the valley u + w = 1 and there the slower the lower; but a slow trial
// is still far from it at the third rung: the best trials at R/27, R/9,
// R/3 and R have s ≈ 0.16, 0.33, 0.56 and 0.82, and the third rung's best
// ends at 0.13 against the optimum's 0.07 (TestCrossingLateCrosses).
func crossingLateLoss(lr, w, q, t float64) float64 {
	u := (math.Log10(lr) + 4) / 4
	s := (1 - u + w) / 2
	p := 0.05 + 0.4*(1-s)*(1-s) + 0.6*(u+w-1)*(u+w-1) + 0.3*(q-0.3)*(q-0.3)
	tau := 0.02 + 0.3*s*s*s
	return p + (2-p)*math.Exp(-t/tau)
}

// crossingLateOptimum is the best final loss: q = 0.3, u and w on a grid
// of 1,001².
func crossingLateOptimum() float64 {
	best := math.Inf(1)
	for i := range 1001 {
		for j := range 1001 {
			best = min(best, crossingLateLoss(math.Pow(10, 4*float64(i)/1000-4), float64(j)/1000, 0.3, 1))
		}
	}
	return best
}

// crossingLate is the crossing family whose curves cross late and whose
// final order is an interaction of lr and width.
func crossingLate() Objective {
	return Objective{
		Name: "crossing-late", Doc: "learning curves that cross late, the final order an interaction of lr and width: the third rung's best ends 2× the optimum (lr log in [1e-4, 1], w, q in [0, 1]; 81 reports)",
		Space: hpo.Space{
			{Name: "lr", Type: hpo.ParamFloat, Min: 1e-4, Max: 1, Log: true},
			{Name: "w", Type: hpo.ParamFloat, Min: 0, Max: 1},
			{Name: "q", Type: hpo.ParamFloat, Min: 0, Max: 1},
		},
		Optimum: crossingLateOptimum(), FullBudget: crossingBudget,
		Curve: func(p hpo.Params) []Point {
			pts := make([]Point, crossingBudget)
			for i := range pts {
				s := float64(i + 1)
				pts[i] = Point{Samples: s, Value: crossingLateLoss(p["lr"].Num, p["w"].Num, p["q"].Num, s/crossingBudget)}
			}
			return pts
		},
	}
}
