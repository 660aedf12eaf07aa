package hpo

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

func (t *tpe) Snapshot() ([]byte, error) {
	b, err := t.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot tpe searcher: rng: %w", err)
	}
	st := t.st
	st.RNG = b
	return marshalSnapshot(AlgorithmTPE, st)
}

func (t *tpe) Restore(snapshot []byte) error {
	var st tpeState
	if err := unmarshalSnapshot(AlgorithmTPE, snapshot, &st); err != nil {
		return err
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore tpe searcher: rng: %w", err)
	}
	if err := t.checkState(st); err != nil {
		return fmt.Errorf("restore tpe searcher: %w", err)
	}
	st.RNG = nil
	t.pcg, t.rng, t.st = pcg, rand.New(pcg), st
	t.reindex()
	return nil
}

func (t *tpe) checkState(st tpeState) error {
	if err := st.check(t.cfg); err != nil {
		return err
	}
	switch {
	case len(st.Pending) != len(st.Outstanding):
		return fmt.Errorf("pending: %d rows for %d trials outstanding", len(st.Pending), len(st.Outstanding))
	case len(st.Metrics) != len(st.Observed):
		return fmt.Errorf("metrics: %d for %d observed rows", len(st.Metrics), len(st.Observed))
	case len(st.Seq) != 0 && len(st.Seq) != len(st.Observed):
		return fmt.Errorf("seq: %d for %d observed rows", len(st.Seq), len(st.Observed))
	case len(st.PendingSeq) != 0 && len(st.PendingSeq) != len(st.Pending):
		return fmt.Errorf("pending_seq: %d for %d pending rows", len(st.PendingSeq), len(st.Pending))
	case len(st.Metrics) > st.Ended+len(t.cfg.History):
		// Warm start: the history's results are observations too.
		return fmt.Errorf("observed: %d rows for %d trials ended and %d in history", len(st.Observed), st.Ended, len(t.cfg.History))
	}
	for k, i := range st.Stopped {
		if i < 0 || int(i) >= len(st.Metrics) || k > 0 && i <= st.Stopped[k-1] {
			return fmt.Errorf("stopped[%d]: %d is not an observation's index, in ascending order", k, i)
		}
	}
	for i, m := range st.Metrics {
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return fmt.Errorf("metrics[%d]: %v is not finite", i, m)
		}
	}
	for i, r := range st.Observed {
		if err := t.checkRow(r); err != nil {
			return fmt.Errorf("observed[%d]: %w", i, err)
		}
	}
	for i, r := range st.Pending {
		if err := t.checkRow(r); err != nil {
			return fmt.Errorf("pending[%d]: %w", i, err)
		}
	}
	return nil
}

// observe records a finished trial's row and metric; seq is its trial's
// creation number (tpe_age.go).
func (t *tpe) observe(row []float64, metric float64, stopped bool, seq int) {
	if t.set.trialOrder {
		t.st.Seq = append(t.st.Seq, seq)
	}
	t.st.Observed = append(t.st.Observed, row)
	t.st.Metrics = append(t.st.Metrics, clamp(metric, -math.MaxFloat64, math.MaxFloat64))
	i := int32(len(t.st.Metrics) - 1)
	if stopped {
		t.st.Stopped = append(t.st.Stopped, i)
	}
	t.stopped = append(t.stopped, stopped)
	for d, dm := range t.dims {
		t.unit[d] = append(t.unit[d], dm.toUnit(row[d]))
	}
	if t.cond.conditional() {
		t.observeActive(row)
	}
	// Keys are unique (the index breaks ties), so the search never finds i.
	at, _ := slices.BinarySearchFunc(t.byMetric, i, t.cmpMetric)
	t.byMetric = slices.Insert(t.byMetric, at, i)
	for d, ix := range t.byValue {
		if t.sortsByValue(d) {
			at, _ := slices.BinarySearchFunc(ix, i, t.cmpValue(d))
			t.byValue[d] = slices.Insert(ix, at, i)
		}
	}
	if keep := max(t.set.maxObs, t.set.gammaMax+1); len(t.st.Metrics) > keep+keep/10 {
		t.forgetOldest(keep)
	}
}

// forgetOldest keeps keep observations: every one of the best gammaMax
// (those l may model), then the newest; it drops the rest and reindexes.
// It runs when a tenth more than keep have gathered, so its cost is spread
// over that many observations.
func (t *tpe) forgetOldest(keep int) {
	n := len(t.st.Metrics)
	drop := make([]bool, n)
	elite := make([]bool, n)
	for _, i := range t.byMetric[:min(t.set.gammaMax, n)] {
		elite[i] = true
	}
	for i, left := 0, n-keep; i < n && left > 0; i++ {
		if !elite[i] {
			drop[i], left = true, left-1
		}
	}
	index := make([]int32, n) // old index → new
	var observed [][]float64
	var metrics []float64
	var seq []int
	for i := range n {
		index[i] = int32(len(metrics))
		if !drop[i] {
			observed, metrics = append(observed, t.st.Observed[i]), append(metrics, t.st.Metrics[i])
			if t.inTrialOrder() {
				seq = append(seq, t.st.Seq[i])
			}
		}
	}
	t.st.Seq = seq
	stopped := t.st.Stopped[:0]
	for _, i := range t.st.Stopped {
		if !drop[i] {
			stopped = append(stopped, index[i])
		}
	}
	t.st.Observed, t.st.Metrics, t.st.Stopped = observed, metrics, stopped
	t.reindex()
}

// reindex derives unit, stopped, byMetric and byValue from the
// observations, in the same orders observe keeps them.
func (t *tpe) reindex() {
	n := len(t.st.Metrics)
	t.unit = make([][]float64, len(t.dims))
	t.byValue = make([][]int32, len(t.dims))
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	t.stopped = make([]bool, n)
	for _, i := range t.st.Stopped {
		t.stopped[i] = true
	}
	for d, dm := range t.dims {
		t.unit[d] = make([]float64, n)
		for i, r := range t.st.Observed {
			t.unit[d][i] = dm.toUnit(r[d])
		}
		if t.sortsByValue(d) {
			t.byValue[d] = slices.SortedFunc(slices.Values(all), t.cmpValue(d))
		}
	}
	t.byMetric = slices.SortedFunc(slices.Values(all), t.cmpMetric)
	t.reindexActive()
}

// sortsByValue says whether byValue keeps dim d: a numeric dim proposed
// on its own (in independent mode, or conditional in multivariate mode).
func (t *tpe) sortsByValue(d int) bool {
	k := t.dims[d].kind
	return (!t.set.multivariate || t.cond.has(d)) && (k == dimContinuous || k == dimDiscrete)
}

// cmpMetric orders observations best first, completed before stopped,
// older first among equals.
func (t *tpe) cmpMetric(i, j int32) int {
	a, b := t.st.Metrics[i], t.st.Metrics[j]
	if t.cfg.Mode == "max" {
		a, b = b, a
	}
	return cmp.Or(cmpBool(t.stopped[i], t.stopped[j]), cmp.Compare(a, b), cmp.Compare(i, j))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// cmpValue orders observations by their coordinate in dim d, older first
// among equals.
func (t *tpe) cmpValue(d int) func(i, j int32) int {
	u := t.unit[d]
	return func(i, j int32) int { return cmp.Or(cmp.Compare(u[i], u[j]), cmp.Compare(i, j)) }
}
