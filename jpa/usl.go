package jpa

import (
	"math"
	"sort"
)

// USL is the Universal Scalability Law (Gunther, "Guerrilla Capacity
// Planning", Springer 2007, ch. 4):
//
//	X(n) = X1·n / (1 + α(n−1) + β·n(n−1))
//
// X1 is the single-node throughput, α the contention (serial fraction)
// and β the coherency (crosstalk) coefficient. Data-parallel training is
// sometimes superlinear (larger aggregate caches, fewer steps per epoch of
// the input pipeline), so α may be negative; the denominator must stay
// positive over the counts the model is used on.
type USL struct {
	X1    float64
	Alpha float64
	Beta  float64
}

// At returns X(n); 0 for n ≤ 0 or where the denominator is not positive.
func (u USL) At(n float64) float64 {
	if n <= 0 {
		return 0
	}
	d := 1 + u.Alpha*(n-1) + u.Beta*n*(n-1)
	if !(d > 0) {
		return 0
	}
	return u.X1 * n / d
}

// uslPrior is a Gaussian prior on (α, β), a regulariser that makes a fit
// from two or three points well posed (maximum a posteriori instead of
// maximum likelihood).
type uslPrior struct {
	Alpha, Beta           float64 // prior means
	SigmaAlpha, SigmaBeta float64 // prior standard deviations; 0 = flat
}

// defaultUSLPrior is weakly informative: near-linear scaling, α within
// about ±0.3 and β within about ±0.02 at one standard deviation.
var defaultUSLPrior = uslPrior{SigmaAlpha: 0.3, SigmaBeta: 0.02}

// fitUSL fits a USL to points (n_i, x_i) in log space, minimising
//
//	Σ_i (log x_i − log X(n_i))² / s² + (α−μα)²/σα² + (β−μβ)²/σβ²
//
// with s = 0.1 (a 10 % log-noise scale that weighs the data against the
// prior). Fitting in log space makes errors relative, so a curve spanning
// two orders of magnitude is fitted evenly. maxN bounds the counts on which
// the denominator must stay positive. It returns the fit and its residual
// root mean square (in log units); ok is false if there is no positive
// point to fit.
func fitUSL(ns []int, xs []float64, maxN int, prior uslPrior) (u USL, rms float64, ok bool) {
	var ln, lx []float64
	for i, n := range ns {
		if n > 0 && xs[i] > 0 && !math.IsInf(xs[i], 0) {
			ln = append(ln, float64(n))
			lx = append(lx, math.Log(xs[i]))
			if n > maxN {
				maxN = n
			}
		}
	}
	if len(ln) == 0 {
		return USL{}, 0, false
	}
	// Start from the linear law through the geometric mean of x_i/n_i.
	var start float64
	for i := range ln {
		start += lx[i] - math.Log(ln[i])
	}
	start /= float64(len(ln))
	const s2 = 0.1 * 0.1
	mN := float64(maxN)
	obj := func(p []float64) float64 {
		u := USL{X1: math.Exp(p[0]), Alpha: p[1], Beta: p[2]}
		// The denominator is quadratic in n; check both ends and its
		// vertex, the only places where it can reach its minimum.
		for _, n := range []float64{1, mN, 0.5 - u.Alpha/(2*u.Beta)} {
			if n >= 1 && n <= mN && !(1+u.Alpha*(n-1)+u.Beta*n*(n-1) > 0.01) {
				return 1e9
			}
		}
		var f float64
		for i := range ln {
			r := lx[i] - math.Log(u.At(ln[i]))
			f += r * r / s2
		}
		if prior.SigmaAlpha > 0 {
			d := (u.Alpha - prior.Alpha) / prior.SigmaAlpha
			f += d * d
		}
		if prior.SigmaBeta > 0 {
			d := (u.Beta - prior.Beta) / prior.SigmaBeta
			f += d * d
		}
		return f
	}
	p := nelderMead(obj, []float64{start, prior.Alpha, prior.Beta}, []float64{0.5, 0.2, 0.01}, 600)
	u = USL{X1: math.Exp(p[0]), Alpha: p[1], Beta: p[2]}
	for i := range ln {
		r := lx[i] - math.Log(math.Max(u.At(ln[i]), 1e-300))
		rms += r * r
	}
	return u, math.Sqrt(rms / float64(len(ln))), true
}

// nelderMead minimises f from x0 with the downhill simplex method (Nelder
// and Mead, Computer Journal 7(4), 1965; the standard coefficients
// reflection 1, expansion 2, contraction ½, shrink ½), starting from the
// simplex x0 + step_i·e_i, for at most iters iterations. gonum/optimize has
// the same method, but it pulls in dependencies this module does not carry;
// three parameters need nothing more than this.
func nelderMead(f func([]float64) float64, x0, step []float64, iters int) []float64 {
	d := len(x0)
	type vertex struct {
		x []float64
		f float64
	}
	simplex := make([]vertex, d+1)
	for i := range simplex {
		x := append([]float64(nil), x0...)
		if i > 0 {
			x[i-1] += step[i-1]
		}
		simplex[i] = vertex{x, f(x)}
	}
	at := func(c []float64, t float64, w []float64) []float64 {
		x := make([]float64, d)
		for k := range x {
			x[k] = c[k] + t*(w[k]-c[k])
		}
		return x
	}
	for it := 0; it < iters; it++ {
		sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].f < simplex[j].f })
		best, worst := simplex[0], simplex[d]
		if math.Abs(worst.f-best.f) <= 1e-12*(1+math.Abs(best.f)) {
			break
		}
		c := make([]float64, d)
		for _, v := range simplex[:d] {
			for k := range c {
				c[k] += v.x[k] / float64(d)
			}
		}
		r := at(c, -1, worst.x)
		fr := f(r)
		switch {
		case fr < best.f:
			if e := at(c, -2, worst.x); f(e) < fr {
				simplex[d] = vertex{e, f(e)}
			} else {
				simplex[d] = vertex{r, fr}
			}
		case fr < simplex[d-1].f:
			simplex[d] = vertex{r, fr}
		default:
			ct := at(c, 0.5, worst.x)
			if fc := f(ct); fc < worst.f {
				simplex[d] = vertex{ct, fc}
				continue
			}
			for i := 1; i <= d; i++ {
				x := at(best.x, 0.5, simplex[i].x)
				simplex[i] = vertex{x, f(x)}
			}
		}
	}
	sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].f < simplex[j].f })
	return simplex[0].x
}
