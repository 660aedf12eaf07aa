package mlp

import (
	"math"
	"math/rand/v2"
)

// dataset holds points row-major in xs (dim values per point) and labels.
type dataset struct {
	dim int
	xs  []float64
	y   []int
}

func (d dataset) len() int          { return len(d.y) }
func (d dataset) x(k int) []float64 { return d.xs[k*d.dim : (k+1)*d.dim] }

// spiral generates the classic interleaved spirals: classes arms of n
// points each in the plane, with Gaussian angular noise. The same seed
// gives the same points on every platform (PCG and the formula only).
func spiral(classes, n int, noise float64, seed uint64) dataset {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	d := dataset{dim: 2, xs: make([]float64, 0, 2*classes*n), y: make([]int, 0, classes*n)}
	for k := range n {
		for c := range classes { // interleaved, so any prefix is balanced
			r := float64(k+1) / float64(n)
			t := float64(c)*2*math.Pi/float64(classes) + 1.75*2*math.Pi*r/2 + rng.NormFloat64()*noise
			d.xs = append(d.xs, r*math.Sin(t), r*math.Cos(t))
			d.y = append(d.y, c)
		}
	}
	return d
}

// splitAt returns the points before and from k. Points are shuffled
// deterministically first so both parts cover every radius.
func (d dataset) splitAt(k int, seed uint64) (dataset, dataset) {
	rng := rand.New(rand.NewPCG(seed, 0x511f))
	perm := rng.Perm(d.len())
	s := dataset{dim: d.dim, xs: make([]float64, 0, len(d.xs)), y: make([]int, 0, d.len())}
	for _, p := range perm {
		s.xs = append(s.xs, d.x(p)...)
		s.y = append(s.y, d.y[p])
	}
	a := dataset{dim: d.dim, xs: s.xs[:k*d.dim], y: s.y[:k]}
	b := dataset{dim: d.dim, xs: s.xs[k*d.dim:], y: s.y[k:]}
	return a, b
}
