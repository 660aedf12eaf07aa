package stats

import (
	"math"
	"slices"
)

// Quantile is the q-quantile of xs (0 ≤ q ≤ 1), linearly interpolated
// between order statistics: with the values sorted, s[h] at position
// h = q·(n−1), between s[⌊h⌋] and s[⌊h⌋+1] (Hyndman and Fan, "Sample
// quantiles in statistical packages", 1996, definition 7; the default of
// R and NumPy). NaN for no values.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// Median is the middle value of xs, or the mean of the two middle ones:
// Quantile(xs, 0.5) up to rounding. NaN for no values.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// NearestRank is the nearest-rank q-quantile of xs (0 < q ≤ 1): the
// smallest value with at least a share q of the values at or below it,
// the value of rank ⌈q·n⌉ (Hyndman and Fan's definition 1, the inverse
// of the empirical distribution function). Unlike Quantile it is always
// one of the values: a latency report's p95 is a latency that happened.
// NaN for no values.
func NearestRank(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	rank := int(math.Ceil(q * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func sorted(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}
