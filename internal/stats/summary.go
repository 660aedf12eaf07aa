package stats

// Summary describes a sample for a report: its size, mean, nearest-rank
// median and 95th percentile (NearestRank), least and greatest value. Its
// JSON keys are a stable contract of the reports that embed it.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Summarize summarises xs; the zero Summary for no values.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := sorted(xs)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Summary{
		N:    len(s),
		Mean: sum / float64(len(s)),
		P50:  NearestRank(s, 0.5),
		P95:  NearestRank(s, 0.95),
		Min:  s[0],
		Max:  s[len(s)-1],
	}
}
