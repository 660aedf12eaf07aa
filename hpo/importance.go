package hpo

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Parameter importance by PED-ANOVA (Watanabe, Bansal, Hutter, "PED-ANOVA:
// Efficiently Quantifying Hyperparameter Importance in Arbitrary
// Subspaces", IJCAI 2023), the method of Optuna's
// PedAnovaImportanceEvaluator. The trials whose metric is in the best γ′
// of all (the top set) have, along each parameter x, a density p′; all
// trials (γ = 1, the space as searched) have p. A parameter matters as
// much as reaching the top set moves its distribution away from p, which
// the paper measures by the Pearson divergence
//
//	D(x) = ∫ (p′(x)/p(x) − 1)² p(x) dx = ∫ (p′(x) − p(x))² / p(x) dx,
//
// which, times (γ′/γ)², the paper shows to be x's local HPI: the part of
// the variance of the top set's indicator that x explains. Here D is a sum
// over a grid of cells, p and p′ being each one's mass per cell:
//
//	float, int:  ≤ 50 equal cells over [min, max], or [ln min, ln max] on a
//	             log scale (an int of fewer integers: one cell each); every
//	             trial a Gaussian kernel, with Scott's bandwidth
//	             (4/3)^(1/5)·σ̂·n^(−1/5) but at least bandwidthFloor cells,
//	             its mass per cell truncated to the grid
//	choice:      one cell per choice, the trials' counts
//
// and for both a prior of importancePrior pseudo-trial spread evenly over
// the cells, so that p > 0 everywhere and D stays finite.

// ErrTooFewTrials: the top set holds fewer than two trials, which cannot
// show a density.
var ErrTooFewTrials = errors.New("too few trials")

// ParamImportance is one parameter's PED-ANOVA importance.
type ParamImportance struct {
	Name string `json:"name"`
	// Importance is the Pearson divergence ∫ (p′(x)/p(x) − 1)² p(x) dx
	// between the parameter's density p′ among the top set and p among
	// all trials: 0 when reaching the top set does not depend on it;
	// 1/γ′ − 1 (9 at γ′ = 0.1) when the top set is a γ′ of its range that
	// all trials sample uniformly, less what the estimator's grid and
	// kernels blur (8.2 to 9.3 at γ′ = 0.1 with 4,000 trials).
	Importance float64 `json:"importance"`
	// Share is Importance over the sum of all parameters' importances,
	// in [0, 1]; 0 for all when every importance is 0.
	Share float64 `json:"share"`
}

const (
	// defaultImportanceQuantile is γ′ when Importance is given none.
	defaultImportanceQuantile = 0.1
	// importanceCells is the most cells a numeric parameter's grid has
	// (Optuna's n_steps).
	importanceCells = 50
	// minTopTrials is the least top set PED-ANOVA compares (Optuna's
	// min_n_top_trials).
	minTopTrials = 2
	// bandwidthFloor is the least bandwidth, in cells: 1.64σ = ½, so that
	// a kernel keeps 90% of its mass on its own cell and a set of one
	// value (σ̂ = 0) still has a density (Optuna's sigma_min).
	bandwidthFloor = 0.5 / 1.64
	// scottFactor is (4/3)^(1/5), Scott's normal reference rule (Scott,
	// "Multivariate Density Estimation", 1992).
	scottFactor = 1.0592238410488122
	// importancePrior is the prior's weight, in trials (Optuna's
	// prior_weight).
	importancePrior = 1.0
)

// Importance ranks the parameters of space by PED-ANOVA: how much
// reaching the best quantile of trials (γ′; 0.1 when quantile ≤ 0) moves
// each parameter's distribution away from that of all trials, measured by
// a Pearson divergence (ParamImportance.Importance).
//
// minimize says the metric's direction. A trial whose metric is NaN or
// infinite is left out; a stopped one (its metric an intermediate one)
// ranks after every completed one, as TPE ranks them. The top set is the
// best ⌈γ′·n⌉ of the n trials left, with every trial tied with the last
// of them; fewer than two is ErrTooFewTrials.
//
// A parameter is evaluated on the trials that have a value for it inside
// the space (a conditional parameter on those where it is active; values
// outside the space or of the wrong type count as absent), against the
// top set's trials among them; fewer than two of those, or a parameter of
// a single value, gives importance 0. Architecture parameters are not
// ranked (an architecture space has no order to put a density on, and
// almost every sampled architecture is new): they are absent from the
// result.
//
// The result is sorted by importance, highest first, ties by name. The
// space must be valid (architecture parameters aside); quantile must not
// be above 1.
func Importance(space Space, trials []Observation, minimize bool, quantile float64) ([]ParamImportance, error) {
	switch {
	case math.IsNaN(quantile) || quantile > 1:
		return nil, fmt.Errorf("importance: quantile %v is not in (0, 1] (0 or less takes %v)", quantile, defaultImportanceQuantile)
	case quantile <= 0:
		quantile = defaultImportanceQuantile
	}
	ranked := slices.DeleteFunc(slices.Clone(space), func(p Param) bool { return p.Type == ParamArch })
	if err := ranked.Validate(); err != nil {
		return nil, fmt.Errorf("importance: %w", err)
	}
	obs, top, err := topSet(trials, minimize, quantile)
	if err != nil {
		return nil, err
	}
	out := make([]ParamImportance, len(ranked))
	var sum float64
	for i, p := range ranked {
		out[i] = ParamImportance{Name: p.Name, Importance: pedDivergence(newPEDGrid(p), obs, top)}
		sum += out[i].Importance
	}
	for i := range out {
		if sum > 0 {
			out[i].Share = out[i].Importance / sum
		}
	}
	slices.SortFunc(out, func(a, b ParamImportance) int {
		if c := cmp.Compare(b.Importance, a.Importance); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out, nil
}

// topSet returns the trials of finite metric and which of them are in
// the top set: the best ⌈γ′·n⌉ (completed before stopped), with ties.
func topSet(trials []Observation, minimize bool, quantile float64) ([]Observation, []bool, error) {
	obs := make([]Observation, 0, len(trials))
	for _, o := range trials {
		if !math.IsNaN(o.Metric) && !math.IsInf(o.Metric, 0) {
			obs = append(obs, o)
		}
	}
	// A hair below, so that 0.1·400 (40.000000000000004 in binary) is 40.
	k := int(math.Ceil(quantile*float64(len(obs)) - 1e-9))
	if k < minTopTrials {
		return nil, nil, fmt.Errorf("importance: %w: the best %v of %d trials of finite metric (%d given) is %d; PED-ANOVA compares a top set of at least %d",
			ErrTooFewTrials, quantile, len(obs), len(trials), max(k, 0), minTopTrials)
	}
	// worse orders by rank: completed before stopped, then better metric.
	worse := func(a, b Observation) int {
		if a.Stopped != b.Stopped {
			if a.Stopped {
				return 1
			}
			return -1
		}
		if minimize {
			return cmp.Compare(a.Metric, b.Metric)
		}
		return cmp.Compare(b.Metric, a.Metric)
	}
	sorted := slices.SortedFunc(slices.Values(obs), worse)
	cutoff := sorted[k-1]
	top := make([]bool, len(obs))
	for i, o := range obs {
		top[i] = worse(o, cutoff) <= 0
	}
	return obs, top, nil
}

// pedGrid is a parameter's grid of cells. A numeric one's cells are
// centred on cells equally spaced points of [lo, hi] (its range, in log
// on a log scale), cell j on j in grid coordinates; a choice has a cell
// per choice.
type pedGrid struct {
	Param
	cells  int
	lo, hi float64
}

func newPEDGrid(p Param) pedGrid {
	g := pedGrid{Param: p, lo: p.Min, hi: p.Max}
	switch {
	case p.single():
		g.cells = 1
		return g
	case p.Type == ParamChoice:
		g.cells = len(p.Choices)
		return g
	case p.Type == ParamInt:
		g.lo, g.hi = math.Ceil(p.Min), math.Floor(p.Max)
		g.cells = int(min(importanceCells, g.hi-g.lo+1))
	default:
		g.cells = importanceCells
	}
	if p.Log {
		g.lo, g.hi = math.Log(g.lo), math.Log(g.hi)
	}
	return g
}

// coord is v's place on the grid: a choice's index, a number's grid
// coordinate in [0, cells−1]; ok is false for a value not in the space.
func (g pedGrid) coord(v Value) (x float64, ok bool) {
	if g.Type == ParamChoice {
		i := slices.Index(g.Choices, v.Str)
		return float64(i), v.IsStr && i >= 0
	}
	lo, hi := g.Min, g.Max
	if g.Type == ParamInt {
		lo, hi = math.Ceil(lo), math.Floor(hi)
	}
	if v.IsStr || !(v.Num >= lo && v.Num <= hi) { // also NaN
		return 0, false
	}
	t := v.Num
	if g.Log {
		t = math.Log(t)
	}
	// Halves, so that no range overflows.
	u := clamp((t/2-g.lo/2)/(g.hi/2-g.lo/2), 0, 1)
	return u * float64(g.cells-1), true
}

// pedDivergence is D for grid g's parameter: the trials of obs that have
// it against those of them that top marks.
func pedDivergence(g pedGrid, obs []Observation, top []bool) float64 {
	if g.cells < 2 {
		return 0
	}
	var all, best []float64
	for i, o := range obs {
		v, present := o.Params[g.Name]
		if !present {
			continue
		}
		if x, ok := g.coord(v); ok {
			all = append(all, x)
			if top[i] {
				best = append(best, x)
			}
		}
	}
	if len(best) < minTopTrials {
		return 0
	}
	p, q := g.density(all), g.density(best)
	var d float64
	for j := range p {
		d += (q[j] - p[j]) * (q[j] - p[j]) / p[j]
	}
	return d
}

// density is the mass per cell of the estimator of the coordinates xs,
// the prior included: it sums to 1 and no cell is below
// importancePrior/((len(xs)+importancePrior)·cells).
func (g pedGrid) density(xs []float64) []float64 {
	m := make([]float64, g.cells)
	if g.Type == ParamChoice {
		for _, x := range xs {
			m[int(x)]++
		}
	} else {
		h := max(scottFactor*sampleSD(xs)*math.Pow(float64(len(xs)), -0.2), bandwidthFloor)
		kernel := make([]float64, g.cells)
		for _, x := range xs {
			var z float64
			for j := range kernel {
				kernel[j] = gaussMass((float64(j)-0.5-x)/h, (float64(j)+0.5-x)/h)
				z += kernel[j]
			}
			if z == 0 { // cannot happen: x lies on the grid, h is finite
				continue
			}
			for j := range m {
				m[j] += kernel[j] / z
			}
		}
	}
	total := float64(len(xs)) + importancePrior
	for j := range m {
		m[j] = (m[j] + importancePrior/float64(g.cells)) / total
	}
	return m
}

// sampleSD is the sample standard deviation of xs (0 for fewer than two).
func sampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}
