// Package searchbench measures Gleaner's searchers (package hpo) on
// benchmark objectives with simulated asynchronous workers: N trials in
// parallel, each taking a time drawn from a cost model, each finishing
// with the objective's value at its parameters. The workers carry out
// the whole Searcher contract: budgets (a trial pauses at its budget),
// Continue (it resumes where it paused) and Create.From (a new trial
// starts from another's training state, on a stateful objective). It is
// pure (no Temporal, no I/O): `gleaner bench search` prints and plots what
// it returns, and the same runs back the searchers' quality tests.
package searchbench

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Objective is a function to minimise over a search space, with its known
// global minimum. It is one of three kinds: a test function (F), a
// learning-curve table (Curve) or a stateful trainer (Trainer).
type Objective struct {
	Name string
	// Doc says what it is and where it comes from.
	Doc     string
	Space   hpo.Space
	Optimum float64
	// F is a test function: a trial's result, at once.
	F func(hpo.Params) float64
	// Curve, for a learning-curve objective instead of F, is a trial's
	// reports: its metric after each number of training samples, up to
	// FullBudget samples.
	Curve func(hpo.Params) []Point
	// Trainer, for a stateful objective instead of F or Curve, trains a
	// state per trial, reporting every Trainer.Every budget units up to
	// FullBudget.
	Trainer    *Trainer
	FullBudget float64
}

// Point is one report of a learning curve.
type Point struct {
	Samples float64
	Value   float64
}

// Points are what a trial at p reports when it trains its full budget
// from the start: its curve, its trainer's reports, or F's value as one
// report at the end of a budget of 1.
func (o Objective) Points(p hpo.Params) []Point {
	var pts []Point
	for _, r := range o.segment(p, 0, o.initial(), 0) {
		pts = append(pts, r.Point)
	}
	return pts
}

// Budget is a trial's full budget: FullBudget (samples, or steps), or 1.
func (o Objective) Budget() float64 {
	if o.Curve != nil || o.Trainer != nil {
		return o.FullBudget
	}
	return 1
}

// Stateful says whether a trial of o carries a training state that a
// trial created from its checkpoint (hpo.Create.From) can start from.
func (o Objective) Stateful() bool { return o.Trainer != nil }

// initial is a new trial's state (nil unless o is stateful).
func (o Objective) initial() State {
	if o.Trainer == nil {
		return nil
	}
	return o.Trainer.Init()
}

// budgetSlack is the relative rounding allowed when progress is compared
// with a budget, as hpo's rungs allow: a budget written R/η^k may land an
// ulp above the whole number a trainer reports at.
const budgetSlack = 1e-9

// report is one report of a trial's segment, with the trial's state there.
type report struct {
	Point
	state State
}

// segment is what a trial at p trains through from progress from (in
// state st) until its progress reaches budget (0: until it ends by
// itself): its reports, in order. Progress moves from report to report,
// so the segment ends at the first report at or past budget (a trainer
// checkpoints at the first report that crosses its budget).
func (o Objective) segment(p hpo.Params, from float64, st State, budget float64) []report {
	reached := func(x float64) bool { return budget > 0 && x >= budget*(1-budgetSlack) }
	if reached(from) {
		return nil
	}
	var out []report
	if t := o.Trainer; t != nil {
		for x := from; x < o.FullBudget*(1-budgetSlack); {
			next := min(x+t.Every, o.FullBudget)
			var v float64
			st, v = t.Train(st, p, next-x)
			out = append(out, report{Point{Samples: next, Value: v}, st})
			if reached(next) {
				break
			}
			x = next
		}
		return out
	}
	pts := []Point{{Samples: 1}}
	if o.Curve != nil {
		pts = o.Curve(p)
	} else if from < 1 {
		pts[0].Value = o.F(p)
	}
	for _, pt := range pts {
		if pt.Samples <= from {
			continue
		}
		out = append(out, report{Point: pt})
		if reached(pt.Samples) {
			break
		}
	}
	return out
}

// Objectives are the standard test functions, three black-box functions
// of issue 30 (blackbox.go) and its conditional space (conditional.go),
// the learning-curve tables, the stateful problems (PBT's toy problem,
// the noisy quadratic model) and the tabular NAS benchmark, in a fixed
// order. The NAS benchmark is left out of a build without its table
// (LookupObjectives says why).
func Objectives() []Objective {
	objs := []Objective{branin(), hartmann6(), rosenbrock(10), mixed(), rotQuad6(), styblinski5(), logMixed(), conditional(), goMLP(), crossing(), crossingLate(), pbtToy(), nqm()}
	if o, err := nasCell(); err == nil {
		objs = append(objs, o)
	}
	return objs
}

// ObjectiveNames lists Objectives' names.
func ObjectiveNames() []string {
	var names []string
	for _, o := range Objectives() {
		names = append(names, o.Name)
	}
	return names
}

// LookupObjectives returns the named objectives, in the order given.
func LookupObjectives(names []string) ([]Objective, error) {
	all := Objectives()
	var out []Objective
	for _, n := range names {
		i := slices.IndexFunc(all, func(o Objective) bool { return o.Name == n })
		if i < 0 && n == NASCell {
			if _, err := nasCell(); err != nil {
				return nil, err
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("objective %q is not one of %s", n, strings.Join(ObjectiveNames(), ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func floats(names []string, lo, hi float64) hpo.Space {
	s := make(hpo.Space, len(names))
	for i, n := range names {
		s[i] = hpo.Param{Name: n, Type: hpo.ParamFloat, Min: lo, Max: hi}
	}
	return s
}

func xs(p hpo.Params, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = p[fmt.Sprintf("x%d", i+1)].Num
	}
	return v
}

func xnames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("x%d", i+1)
	}
	return names
}

// branin is the Branin–Hoo function on x1 ∈ [−5, 10], x2 ∈ [0, 15]:
// three global minima of 0.397887 (Dixon & Szegö 1978; Surjanovic &
// Bingham's Virtual Library of Simulation Experiments).
func branin() Objective {
	s := hpo.Space{
		{Name: "x1", Type: hpo.ParamFloat, Min: -5, Max: 10},
		{Name: "x2", Type: hpo.ParamFloat, Min: 0, Max: 15},
	}
	return Objective{
		Name: "branin", Doc: "Branin–Hoo, 2 floats, three global minima 0.397887", Space: s, Optimum: 0.397887,
		F: func(p hpo.Params) float64 {
			x1, x2 := p["x1"].Num, p["x2"].Num
			b, c, r, t := 5.1/(4*math.Pi*math.Pi), 5/math.Pi, 6.0, 1/(8*math.Pi)
			return math.Pow(x2-b*x1*x1+c*x1-r, 2) + 10*(1-t)*math.Cos(x1) + 10
		},
	}
}

// hartmann6 is the 6-dimensional Hartmann function on [0, 1]^6, global
// minimum −3.32237 (Dixon & Szegö 1978).
func hartmann6() Objective {
	alpha := [4]float64{1.0, 1.2, 3.0, 3.2}
	a := [4][6]float64{
		{10, 3, 17, 3.5, 1.7, 8},
		{0.05, 10, 17, 0.1, 8, 14},
		{3, 3.5, 1.7, 10, 17, 8},
		{17, 8, 0.05, 10, 0.1, 14},
	}
	pm := [4][6]float64{
		{1312, 1696, 5569, 124, 8283, 5886},
		{2329, 4135, 8307, 3736, 1004, 9991},
		{2348, 1451, 3522, 2883, 3047, 6650},
		{4047, 8828, 8732, 5743, 1091, 381},
	}
	return Objective{
		Name: "hartmann6", Doc: "Hartmann, 6 floats in [0, 1], global minimum −3.32237", Space: floats(xnames(6), 0, 1), Optimum: -3.32237,
		F: func(p hpo.Params) float64 {
			x := xs(p, 6)
			var sum float64
			for i := range 4 {
				var inner float64
				for j := range 6 {
					d := x[j] - pm[i][j]*1e-4
					inner += a[i][j] * d * d
				}
				sum += alpha[i] * math.Exp(-inner)
			}
			return -sum
		},
	}
}

// rosenbrock is the n-dimensional Rosenbrock function on [−5, 10]^n,
// global minimum 0 at (1, …, 1) (Rosenbrock 1960).
func rosenbrock(n int) Objective {
	return Objective{
		Name: fmt.Sprintf("rosenbrock%d", n), Doc: fmt.Sprintf("Rosenbrock, %d floats in [−5, 10], global minimum 0 at (1, …, 1)", n),
		Space: floats(xnames(n), -5, 10), Optimum: 0,
		F: func(p hpo.Params) float64 {
			x := xs(p, n)
			var sum float64
			for i := 0; i+1 < n; i++ {
				sum += 100*math.Pow(x[i+1]-x[i]*x[i], 2) + math.Pow(1-x[i], 2)
			}
			return sum
		},
	}
}

// mixed has the parameter types of a real training job: a float, a
// log-scaled learning rate, an integer and a choice; minimum 0 at x = 1,
// lr = 10^−2.5, layers = 7, opt = adam.
func mixed() Objective {
	s := hpo.Space{
		{Name: "x", Type: hpo.ParamFloat, Min: -5, Max: 5},
		{Name: "lr", Type: hpo.ParamFloat, Min: 1e-5, Max: 1, Log: true},
		{Name: "layers", Type: hpo.ParamInt, Min: 1, Max: 20},
		{Name: "opt", Type: hpo.ParamChoice, Choices: []string{"sgd", "adam", "rmsprop", "adagrad"}},
	}
	penalty := map[string]float64{"adam": 0, "rmsprop": 0.5, "sgd": 1, "adagrad": 2}
	return Objective{
		Name: "mixed", Doc: "a float, a log-scaled float, an integer in 1..20 and a choice of 4; minimum 0", Space: s, Optimum: 0,
		F: func(p hpo.Params) float64 {
			x, lr, layers := p["x"].Num, p["lr"].Num, p["layers"].Num
			return (x-1)*(x-1)/4 + math.Pow(math.Log10(lr)+2.5, 2) + math.Pow(layers-7, 2)/10 + penalty[p["opt"].Str]
		},
	}
}
