package curve

import "testing"

func TestAt(t *testing.T) {
	c := Curve{{Nodes: 2, Throughput: 100}, {Nodes: 4, Throughput: 160}}
	for _, tc := range []struct {
		k    int
		want float64
	}{
		{0, 0}, {-1, 0}, // no nodes, no throughput
		{1, 50},  // through (0, 0)
		{2, 100}, // on a point
		{3, 130}, // between points
		{4, 160},
		{9, 160}, // flat beyond the last point
	} {
		if got := c.At(tc.k); got != tc.want {
			t.Errorf("At(%d) = %v, want %v", tc.k, got, tc.want)
		}
	}
	if got := Curve(nil).At(3); got != 0 {
		t.Errorf("empty curve: At(3) = %v, want 0", got)
	}
}
