package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The expected values are worked by hand from the two definitions, which
// are NumPy's np.quantile methods "linear" (its default) and
// "inverted_cdf".
func TestQuantileAndNearestRankByHand(t *testing.T) {
	xs := []float64{7, 1, 3, 10, 4} // sorted: 1 3 4 7 10
	for _, c := range []struct {
		q                 float64
		linear, invertedC float64
	}{
		{0, 1, 1},
		{0.1, 1.8, 1},
		{0.25, 3, 3},
		{0.5, 4, 4},
		{0.6, 5.2, 4},
		{0.9, 8.8, 10},
		{0.95, 9.4, 10},
		{1, 10, 10},
	} {
		if got := Quantile(xs, c.q); math.Abs(got-c.linear) > 1e-12 {
			t.Errorf("Quantile(%v, %g) = %g, want %g", xs, c.q, got, c.linear)
		}
		if c.q == 0 {
			continue // the nearest rank is defined for q > 0
		}
		if got := NearestRank(xs, c.q); got != c.invertedC {
			t.Errorf("NearestRank(%v, %g) = %g, want %g", xs, c.q, got, c.invertedC)
		}
	}
	if !slices.Equal(xs, []float64{7, 1, 3, 10, 4}) {
		t.Errorf("input modified: %v", xs)
	}
}

// The nearest rank of p% of n values is rank ⌈p·n/100⌉, computed in
// integers here: the float product must not round across an integer.
func TestNearestRankIsTheExactRank(t *testing.T) {
	for n := 1; n <= 400; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[n-1-i] = float64(i + 1) // n … 1: ranks are the values
		}
		for _, p := range []int{1, 5, 10, 25, 50, 75, 90, 95, 99, 100} {
			want := float64((p*n + 99) / 100)
			if got := NearestRank(xs, float64(p)/100); got != want {
				t.Fatalf("NearestRank of 1…%d at %d%% = %g, want rank %g", n, p, got, want)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, 1}, 0},
	} {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %g, want %g", c.xs, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		xs := make([]float64, 1+r.IntN(30))
		for i := range xs {
			xs[i] = r.NormFloat64() * 100
		}
		if m, q := Median(xs), Quantile(xs, 0.5); math.Abs(m-q) > 1e-12*max(1, math.Abs(m)) {
			t.Fatalf("Median(%v) = %g, Quantile(0.5) = %g", xs, m, q)
		}
	}
}

func TestNoValues(t *testing.T) {
	if !math.IsNaN(Quantile(nil, 0.5)) || !math.IsNaN(Median(nil)) || !math.IsNaN(NearestRank(nil, 0.5)) {
		t.Error("want NaN for no values")
	}
	if s := Summarize(nil); s != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v, want the zero Summary", s)
	}
}

func TestSummarize(t *testing.T) {
	xs := make([]float64, 20)
	for i := range xs {
		xs[i] = float64(20 - i) // 20 … 1
	}
	want := Summary{N: 20, Mean: 10.5, P50: 10, P95: 19, Min: 1, Max: 20}
	if got := Summarize(xs); got != want {
		t.Errorf("Summarize(20…1) = %+v, want %+v", got, want)
	}
	if xs[0] != 20 {
		t.Error("input modified")
	}
}
