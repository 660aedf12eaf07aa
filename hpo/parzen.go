package hpo

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// The Parzen estimators of TPE (Bergstra et al., "Algorithms for
// Hyper-Parameter Optimization", NeurIPS 2011, §4), in the form Optuna
// 3.1's TPESampler gives them (optuna/samplers/_tpe/parzen_estimator.py).
// An estimator is a weighted mixture of kernels, one per observation, plus
// a prior kernel of weight prior_weight:
//
//	numeric:  N(μ, σ²) truncated to the parameter's range; the prior N(mid, range²)
//	discrete: the same kernel's mass on the cell [x−½, x+½] of an integer x
//	choice:   (pw/(n+1) on every value + 1 on the observed one), normalised;
//	          the prior uniform
//
// Every numeric parameter is modelled on the unit interval [0, 1] of its
// (log) range: Optuna works on the range itself, but the affine map
// changes neither z = (x−μ)/σ nor a kernel's mass, so l/g is unchanged and
// no range overflows.
//
// How a float is scored. Optuna 3.1 (to 3.4) evaluates a float's kernel
// as φ(z)/Z, without the 1/σ of the normal density (optuna issue #5109,
// fixed in 3.5): the l and g whose ratio it maximises are mixtures in which
// a kernel counts by its height, w·σ·N(x; μ, σ²)/Z, not by its mass w.
// Independent TPE scores floats, and ints on a log scale (floats to
// Optuna), the same way (formHeight): on the four functions of
// scripts/search_vs_optuna.py it finds better points than it does with the
// true densities, with which the narrowest kernels (where trials crowd)
// dominate l/g. Candidates are still drawn from l by the weights w, and a
// discrete int is still scored by its kernels' masses, as in Optuna.

const (
	// sigmaFloor is Optuna's EPS, the least σ without the magic clip.
	sigmaFloor = 1e-12
	sqrt2Pi    = 2.5066282746310002 // √(2π)
	invSqrt2   = 1 / math.Sqrt2
	// flatWeights is how many of the newest observations keep weight 1
	// in Optuna's default_weights.
	flatWeights = 25
)

// dimModel is how TPE models a parameter.
type dimModel uint8

const (
	// dimContinuous: a float; an int on a log scale or of more than
	// maxCells values, modelled as a real and rounded (Optuna's rule for
	// log ints).
	dimContinuous dimModel = iota
	// dimDiscrete: an int on a linear scale, of at most maxCells values.
	dimDiscrete
	dimChoice
	// dimConst: a float with min = max, or an architecture (tpe does
	// not model them): nothing to model.
	dimConst
)

// maxCells bounds the ints modelled as discrete (Optuna models every
// linear int so); beyond it a kernel's mass on a cell is within a fraction
// of a percent of its density times the cell, and a real costs less.
const maxCells = 1024

// dim is one parameter as TPE models it: a numeric one on the unit
// interval of its (log) range, a choice by its index.
type dim struct {
	Param
	kind  dimModel
	cells int // dimDiscrete: how many integers
	// lo, hi: numeric, the interval mapped onto [0, 1]: [min, max], or
	// ±½ around an int's integers; their logs on a log scale.
	lo, hi float64
}

func newDim(p Param) dim {
	d := dim{Param: p}
	switch {
	case p.Type == ParamChoice:
		d.kind = dimChoice
		return d
	case p.Type == ParamArch:
		d.kind = dimConst
		return d
	case p.Type == ParamInt:
		d.lo, d.hi = math.Ceil(p.Min)-0.5, math.Floor(p.Max)+0.5
		if n := d.hi - d.lo; !p.Log && n <= maxCells {
			d.kind, d.cells = dimDiscrete, int(n)
		}
	case p.Min == p.Max:
		d.kind = dimConst
		return d
	default:
		d.lo, d.hi = p.Min, p.Max
	}
	if p.Log {
		d.lo, d.hi = math.Log(d.lo), math.Log(d.hi)
	}
	return d
}

// single says whether d has one value only (Optuna's single()): a
// constant, a choice of one, an int of one cell.
func (d dim) single() bool {
	return d.kind == dimConst || d.kind == dimChoice && len(d.Choices) == 1 || d.kind == dimDiscrete && d.cells == 1
}

// toUnit maps a row value to the model's coordinate.
func (d dim) toUnit(x float64) float64 {
	switch d.kind {
	case dimChoice:
		return x
	case dimConst:
		return 0
	}
	if d.Log {
		x = math.Log(x)
	}
	// Halves, so that no range overflows.
	return clamp((x/2-d.lo/2)/(d.hi/2-d.lo/2), 0, 1)
}

// fromUnit maps a coordinate to a row value inside the space: a real,
// or the integer whose cell it falls in.
func (d dim) fromUnit(u float64) float64 {
	switch d.kind {
	case dimChoice:
		return u
	case dimConst:
		return d.Min
	}
	x := 2 * (d.lo/2 + u*(d.hi/2-d.lo/2))
	if d.Log {
		x = math.Exp(x)
	}
	if d.Type == ParamInt {
		return clamp(math.Round(x), math.Ceil(d.Min), math.Floor(d.Max))
	}
	return clamp(x, d.Min, d.Max)
}

// gaussMass is Φ(b) − Φ(a) for a ≤ b, the standard normal's mass on
// [a, b], computed from the nearer tail so that it keeps its relative
// precision far from 0.
func gaussMass(a, b float64) float64 {
	switch {
	case a >= 0:
		return max(0, 0.5*(math.Erfc(a*invSqrt2)-math.Erfc(b*invSqrt2)))
	case b <= 0:
		return max(0, 0.5*(math.Erfc(-b*invSqrt2)-math.Erfc(-a*invSqrt2)))
	default:
		return 1 - upperTail(-a) - upperTail(b)
	}
}

// upperTail is 1 − Φ(t) for t ≥ 0, taken as 0 beyond 8.5 where it is
// below 1e-17, which 1 − tail − tail (at least 0.34 here) cannot show.
func upperTail(t float64) float64 {
	if t > 8.5 {
		return 0
	}
	return 0.5 * math.Erfc(t*invSqrt2)
}

// negligible is how far below the largest term (in log) a term of a sum
// of positive terms may be skipped: e^−60 ≈ 1e−26, so that fewer than
// 10^10 such terms cannot move the sum by an ulp.
const negligible = 60

// truncNormal draws from N(mu, sigma²) truncated to [0, 1], by rejection.
// Every kernel here has mu in [0, 1] and sigma ≤ 1, so [0, 1] holds at
// least Φ(1) − Φ(0) ≈ 0.34 of its mass: three tries on average. The bound
// on tries only guards against a broken invariant.
func truncNormal(rng *rand.Rand, mu, sigma float64) float64 {
	for range 1000 {
		if x := mu + sigma*rng.NormFloat64(); x >= 0 && x <= 1 {
			return x
		}
	}
	return clamp(mu, 0, 1)
}

// defaultWeight is the weight of the pos-th oldest (from 0) of n
// observations, Optuna's default_weights (after Bergstra et al. 2013):
// 1 for the newest 25, and for the older ones a ramp rising from 1/n at
// the oldest, so that a long search slowly forgets its beginning.
func defaultWeight(pos, n int) float64 {
	ramp := n - flatWeights
	switch {
	case pos >= ramp:
		return 1
	case ramp == 1:
		return 1 / float64(n)
	}
	lo := 1 / float64(n)
	return lo + float64(pos)*(1-lo)/float64(ramp-1)
}

// minSigma is the least σ of the kernels of n observations: with the magic
// clip range/min(100, n+2) (n kernels and the prior), which keeps a
// kernel from collapsing onto its point; without, Optuna's EPS.
func minSigma(n int, magicClip bool) float64 {
	if !magicClip {
		return sigmaFloor
	}
	return 1 / min(100, float64(n+2))
}

// pick returns the index of the kernel that u ∈ [0, 1) falls on, given
// the kernels' cumulative weights.
func pick(cum []float64, u float64) int {
	t := u * cum[len(cum)-1]
	return min(sort.Search(len(cum), func(i int) bool { return cum[i] > t }), len(cum)-1)
}

// kernel is one observation's kernel of a univariate estimator: its centre
// on [0, 1] and its (unnormalised) weight.
type kernel struct{ mu, w float64 }

// kernelForm is what a univariate estimator's kernel adds to its value at
// x, for a kernel of weight w (normalised), centre μ, width σ and mass Z
// on [0, 1].
type kernelForm uint8

const (
	// formDensity: w·N(x; μ, σ²)/Z, so that the estimator is a density.
	formDensity kernelForm = iota
	// formHeight: w·σ·N(x; μ, σ²)/Z = w·φ(z)/Z, Optuna 3.1's value of a
	// float's kernel (see above).
	formHeight
	// formMass: w/Z times the kernel's mass on x's cell, so that the
	// estimator is a discrete parameter's probabilities.
	formMass
)

// form is how independent TPE scores numeric dim d: a discrete int by its
// kernels' masses, a float or an int on a log scale as Optuna 3.1 scores
// floats, and an int too wide to be discrete by its density, which is
// within a fraction of a percent of the mass per cell Optuna gives it.
func (d dim) form() kernelForm {
	switch {
	case d.kind == dimDiscrete:
		return formMass
	case d.Type == ParamInt && !d.Log:
		return formDensity
	}
	return formHeight
}

// mixture1 is a univariate Parzen estimator of one numeric parameter on
// [0, 1]; its last kernel is the prior, and form says what each kernel
// adds to its value (with formMass, the parameter's values are the
// centres of cells of width step).
type mixture1 struct {
	form                        kernelForm
	step                        float64
	mu, sigma, inv, coef, cumul []float64 // per kernel: coef = w/(σ√2π·Z), w/(√2π·Z) by height, w/Z by mass
	// cut: a kernel not by mass at z² beyond it adds less than
	// e^−negligible of the prior's term to the value, whatever x is.
	cut float64
}

// fit sets m to the estimator of the observations obs, sorted by mu, with
// kernels of form form (step: formMass's cell width).
//
// σ is Optuna 3.x's univariate rule: in the sorted centres, with the
// prior's ½ among them and the range's ends 0 and 1 around them, a
// kernel's σ is the larger gap to its two neighbours; without
// considerEndpoints the first and the last centre take the gap on their
// inner side only. σ is then clipped to [minSigma, 1] (the range). Kernels
// with the same centre and σ (repeated integers) are merged, which changes
// nothing but the cost.
func (m *mixture1) fit(obs []kernel, form kernelForm, step float64, set tpeParams) {
	m.form, m.step = form, step
	m.mu, m.sigma, m.cumul = m.mu[:0], m.sigma[:0], m.cumul[:0]
	n := len(obs)
	p := sort.Search(n, func(i int) bool { return obs[i].mu >= 0.5 }) // the prior's place
	at := func(i int) float64 {
		switch {
		case i < 0:
			return 0
		case i > n:
			return 1
		case i < p:
			return obs[i].mu
		case i == p:
			return 0.5
		default:
			return obs[i-1].mu
		}
	}
	lo := minSigma(n, set.magicClip)
	var total float64
	for j, o := range obs {
		i := j
		if j >= p {
			i++
		}
		var s float64
		switch {
		case !set.endpoints && i == 0:
			s = at(1) - at(0)
		case !set.endpoints && i == n:
			s = at(n) - at(n-1)
		default:
			s = max(at(i)-at(i-1), at(i+1)-at(i))
		}
		s = clamp(s, lo, 1)
		total += o.w
		if k := len(m.mu) - 1; k >= 0 && m.mu[k] == o.mu && m.sigma[k] == s {
			m.cumul[k] += o.w // cumul holds the weights until normalised below
			continue
		}
		m.mu, m.sigma, m.cumul = append(m.mu, o.mu), append(m.sigma, s), append(m.cumul, o.w)
	}
	m.mu, m.sigma, m.cumul = append(m.mu, 0.5), append(m.sigma, 1), append(m.cumul, set.priorWeight)
	total += set.priorWeight

	m.inv, m.coef = m.inv[:0], m.coef[:0]
	var c, hi float64
	for k, mu := range m.mu {
		s, w := m.sigma[k], m.cumul[k]/total
		coef := w / gaussMass(-mu/s, (1-mu)/s)
		switch form {
		case formDensity:
			coef /= s * sqrt2Pi
		case formHeight:
			coef /= sqrt2Pi
		}
		m.inv, m.coef = append(m.inv, 1/s), append(m.coef, coef)
		hi = max(hi, coef)
		c += w
		m.cumul[k] = c
	}
	// The prior's term is at least coef·e^−⅛ anywhere on [0, 1].
	prior := m.coef[len(m.coef)-1] * math.Exp(-0.125)
	m.cut = 2 * (math.Log(hi/prior) + negligible)
}

// value is the estimator's value at x, the sum of its kernels' terms
// (kernelForm): its density, Optuna 3.1's value of a float, or its
// probability of x, a cell's centre. Every term is positive and the
// prior's is at least 0.24·prior_weight/(total weight), so the plain sum
// loses nothing.
func (m *mixture1) value(x float64) float64 {
	var sum float64
	if m.form != formMass {
		for k, mu := range m.mu {
			if z := (x - mu) * m.inv[k]; z*z < m.cut {
				sum += m.coef[k] * math.Exp(-0.5*z*z)
			}
		}
		return sum
	}
	a, b := max(x-m.step/2, 0), min(x+m.step/2, 1)
	for k, mu := range m.mu {
		sum += m.coef[k] * gaussMass((a-mu)*m.inv[k], (b-mu)*m.inv[k])
	}
	return sum
}

// sample draws a point of [0, 1] from the estimator (the caller snaps a
// discrete one to its cell).
func (m *mixture1) sample(rng *rand.Rand) float64 {
	k := pick(m.cumul, rng.Float64())
	return truncNormal(rng, m.mu[k], m.sigma[k])
}

// choiceProbs is the univariate estimator of a choice among len(counts)
// values, as the probability of each value (written to out): n
// observations of total weight total, counts[v] the weight of those that
// chose v. Every observation's kernel is (a on every value + 1 on its
// own)/(C·a + 1) with a = pw/(n+1); the prior is uniform.
func choiceProbs(counts []float64, total float64, n int, pw float64, out []float64) []float64 {
	out = out[:0]
	c := float64(len(counts))
	a := pw / float64(n+1)
	for _, cnt := range counts {
		out = append(out, ((a*total+cnt)/(c*a+1)+pw/c)/(total+pw))
	}
	return out
}

// revisionJointHeight is the revision from which the joint estimator
// scores as Optuna 3.1's (jointMixture).
const revisionJointHeight = 2

// jointMixture is the multivariate Parzen estimator (Optuna's
// multivariate=True, after BOHB, Falkner et al. 2018): every observation
// is one kernel over all parameters at once, the product of its
// per-parameter kernels, so l and g see how parameters interact. Numeric
// kernels share one σ, Optuna 3.x's Scott-like bandwidth
// 0.2·n^(−1/(d+4)) of the range (d parameters), clipped like mixture1's.
// Kernel n (after the observations) is the prior, the product of the
// per-parameter priors.
//
// How it scores (revisionJointHeight). Optuna 3.1's multivariate path
// evaluates a float's kernel as its univariate path does, φ(z)/Z without
// the 1/σ (optuna issue #5109): a product kernel counts by its height in
// every float dimension and by its mass in every discrete one, the same
// form for l and g, and the logs of l and g are of those sums. The
// observations share σ < 1 and the prior has σ = 1, so against the true
// densities the prior weighs (1/σ)^f more (f floats): l/g leans on the
// prior away from the observations and on the nearest good trials close
// to them, instead of on the narrowest kernels. From revision 2 the
// joint estimator scores so (dim.form's height for floats and log ints;
// a wide linear int keeps its density, a cell's mass up to a constant),
// and Scott's d counts the parameters Optuna models: not a constant
// (min = max, an architecture) nor a choice of one value or an int of one
// cell (Optuna's single() distributions). Before revision 2 its kernels
// were true densities and d counted every parameter: on three of the four
// functions of scripts/search_vs_optuna.py it ended 49–135% worse than
// Optuna's TPE.
type jointMixture struct {
	dims  []dim
	n     int
	sigma float64
	a     float64     // a choice kernel's weight on every value, before normalising: pw/(n+1)
	cols  [][]float64 // per dim, per observation: centre on [0, 1], or a choice's index
	base  []float64   // per kernel: log w − log Π Z (truncation) − Σ log σ√2π (continuous dims)
	cumul []float64
	hit   []float64   // per choice dim: log probability of the kernel's own value
	miss  []float64   // and of any other
	mass  [][]float64 // per discrete dim: log mass of an offset of Δ cells at index Δ+K−1 (NaN: not yet computed)
	acc   []float64
}

// fit sets m to the estimator of the observations whose coordinates are
// cols[d][i] and weights w[i]; set.jointHeight chooses how it scores
// (above).
func (m *jointMixture) fit(dims []dim, cols [][]float64, w []float64, set tpeParams) {
	n := len(w)
	m.dims, m.n, m.cols = dims, n, cols
	nd := len(dims)
	if set.jointHeight {
		nd = 0
		for _, dm := range dims {
			if !dm.single() {
				nd++
			}
		}
	}
	m.sigma = clamp(0.2*math.Pow(float64(max(n, 1)), -1/float64(nd+4)), minSigma(n, set.magicClip), 1)
	m.a = set.priorWeight / float64(n+1)
	total := set.priorWeight
	for _, v := range w {
		total += v
	}
	m.base, m.cumul = m.base[:0], m.cumul[:0]
	var c float64
	for k := range n + 1 {
		v := set.priorWeight
		if k < n {
			v = w[k]
		}
		m.base = append(m.base, math.Log(v/total))
		c += v / total
		m.cumul = append(m.cumul, c)
	}
	// Π Z over the dims, then one log per kernel: each Z ≥ 0.34.
	z := resize(m.acc, n+1)
	for k := range z {
		z[k] = 1
	}
	m.hit, m.miss, m.mass = resize(m.hit, len(dims)), resize(m.miss, len(dims)), resizeRows(m.mass, len(dims))
	for d, dm := range dims {
		switch dm.kind {
		case dimChoice:
			c := float64(len(dm.Choices))
			m.hit[d] = math.Log((m.a + 1) / (c*m.a + 1))
			m.miss[d] = math.Log(m.a / (c*m.a + 1))
			m.base[n] -= math.Log(c)
			continue
		case dimConst:
			continue
		case dimContinuous:
			for k := range m.base {
				m.base[k] -= math.Log(sqrt2Pi)
			}
			if !set.jointHeight || dm.form() != formHeight { // a height has no 1/σ
				for k := range n {
					m.base[k] -= math.Log(m.sigma)
				}
			}
		case dimDiscrete:
			m.mass[d] = resize(m.mass[d], 2*dm.cells-1)
			for i := range m.mass[d] {
				m.mass[d][i] = math.NaN()
			}
		}
		for k, mu := range cols[d] {
			z[k] *= gaussMass(-mu/m.sigma, (1-mu)/m.sigma)
		}
		z[n] *= gaussMass(-0.5, 0.5)
	}
	for k, v := range z {
		m.base[k] -= math.Log(v)
	}
	m.acc = z
}

// logDensity is the log of the estimator's value at x (coordinates per
// dim, numeric ones on [0, 1], discrete ones at a cell's centre): its
// density, or from revision 2 Optuna 3.1's value (see jointMixture).
func (m *jointMixture) logDensity(x []float64) float64 {
	acc := append(m.acc[:0], m.base...)
	n, inv := m.n, 1/m.sigma
	for d, dm := range m.dims {
		col, xd := m.cols[d], x[d]
		switch dm.kind {
		case dimContinuous:
			for k, mu := range col {
				z := (xd - mu) * inv
				acc[k] -= 0.5 * z * z
			}
			acc[n] -= 0.5 * (xd - 0.5) * (xd - 0.5)
		case dimDiscrete:
			cells := float64(dm.cells)
			for k, mu := range col {
				acc[k] += m.logMass(d, int(math.Round((xd-mu)*cells)))
			}
			h := 0.5 / cells
			acc[n] += math.Log(gaussMass(max(xd-h, 0)-0.5, min(xd+h, 1)-0.5))
		case dimChoice:
			for k, o := range col {
				if o == xd {
					acc[k] += m.hit[d]
				} else {
					acc[k] += m.miss[d]
				}
			}
		}
	}
	m.acc = acc
	return logSumExp(acc)
}

// logMass is the log mass of an observation kernel of discrete dim d on
// the cell off cells away from its centre, computed once per fit.
func (m *jointMixture) logMass(d, off int) float64 {
	cells := m.dims[d].cells
	v := &m.mass[d][off+cells-1]
	if math.IsNaN(*v) {
		s := 1 / (float64(cells) * m.sigma)
		*v = math.Log(gaussMass((float64(off)-0.5)*s, (float64(off)+0.5)*s))
	}
	return *v
}

// sample draws one point from the estimator into x (coordinates per dim:
// numeric ones on [0, 1], to be snapped by the caller; choices as index).
func (m *jointMixture) sample(rng *rand.Rand, x []float64) {
	k := pick(m.cumul, rng.Float64())
	for d, dm := range m.dims {
		switch {
		case dm.kind == dimConst:
			x[d] = 0
		case dm.kind == dimChoice && k == m.n:
			x[d] = float64(rng.IntN(len(dm.Choices)))
		case dm.kind == dimChoice:
			// The kernel is a uniform part of weight C·a/(C·a+1) and its
			// own value with 1/(C·a+1).
			c := len(dm.Choices)
			if r := rng.Float64() * (float64(c)*m.a + 1); r < 1 {
				x[d] = m.cols[d][k]
			} else {
				x[d] = float64(min(int((r-1)/m.a), c-1))
			}
		case k == m.n:
			x[d] = truncNormal(rng, 0.5, 1)
		default:
			x[d] = truncNormal(rng, m.cols[d][k], m.sigma)
		}
	}
}

// logSumExp is log Σ exp(a[i]).
func logSumExp(a []float64) float64 {
	hi := slices.Max(a)
	if math.IsInf(hi, -1) {
		return hi
	}
	var s float64
	for _, v := range a {
		if d := v - hi; d > -negligible {
			s += math.Exp(d)
		}
	}
	return hi + math.Log(s)
}

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func resizeRows(s [][]float64, n int) [][]float64 {
	if cap(s) < n {
		return make([][]float64, n)
	}
	return s[:n]
}
