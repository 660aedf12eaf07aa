package allocator

import "sort"

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
