// Package curve is the throughput curve the allocator optimises over and
// the JPA predicts (Curve: samples per second at node counts), and the
// measured scaling curves the JPA learns from (Scaling). It is a pure leaf
// (standard library only, no cgo), so the JPA and the programs that read
// its predictions need not link the allocator's solver.
package curve

import "sort"

// Point is one point of a throughput curve.
type Point struct {
	Nodes      int     `json:"nodes"`
	Throughput float64 `json:"throughput"` // samples per second
}

// Curve is a throughput curve: points sorted by strictly increasing node
// count, with throughput linearly interpolated between them and through
// the implicit point (0, 0).
type Curve []Point

// At returns the throughput at k nodes: linear interpolation between the
// points and through (0, 0), flat beyond the last point.
func (c Curve) At(k int) float64 {
	if k <= 0 || len(c) == 0 {
		return 0
	}
	i := sort.Search(len(c), func(i int) bool { return c[i].Nodes >= k })
	if i == len(c) {
		return c[len(c)-1].Throughput
	}
	if c[i].Nodes == k {
		return c[i].Throughput
	}
	x0, y0 := 0, 0.0
	if i > 0 {
		x0, y0 = c[i-1].Nodes, c[i-1].Throughput
	}
	x1, y1 := c[i].Nodes, c[i].Throughput
	return y0 + (y1-y0)*float64(k-x0)/float64(x1-x0)
}
