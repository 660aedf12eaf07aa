package jpa

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// TypeSpeeds holds single-node (or single-GPU) throughputs per model and
// node type, the data behind heterogeneity-aware scheduling (Gavel,
// Narayanan et al., OSDI'20; model similarity, Thanapol et al., ACIIDS'23):
// a trial measured on one node type is predicted on another by the ratio
// of single-node throughputs, of the same model where known, else the
// median ratio over the models measured on both types.
type TypeSpeeds struct {
	x map[string]map[string]float64 // model → node type → throughput
}

// NewTypeSpeeds returns an empty table.
func NewTypeSpeeds() *TypeSpeeds {
	return &TypeSpeeds{x: map[string]map[string]float64{}}
}

// speedKey names a model at a batch size: the batch size changes the
// per-node throughput, so ratios are kept per (model, batch).
func speedKey(model string, batch int) string {
	if batch <= 0 {
		return model
	}
	return fmt.Sprintf("%s@bsz=%d", model, batch)
}

// Set records the throughput of model on nodeType; non-positive or
// non-finite values are ignored.
func (t *TypeSpeeds) Set(model, nodeType string, throughput float64) {
	if !(throughput > 0) || math.IsInf(throughput, 0) {
		return
	}
	m, ok := t.x[model]
	if !ok {
		m = map[string]float64{}
		t.x[model] = m
	}
	m[nodeType] = throughput
}

// Merge copies every entry of o into t, o winning on conflicts.
func (t *TypeSpeeds) Merge(o *TypeSpeeds) {
	if o == nil {
		return
	}
	for model, m := range o.x {
		for typ, v := range m {
			t.Set(model, typ, v)
		}
	}
}

// Ratio returns throughput(to)/throughput(from) for model and the
// uncertainty of its logarithm. With both types measured for the model the
// ratio is exact (sigma 0.05, run-to-run noise). Otherwise it is the median
// over the models measured on both types, and sigma the scaled median
// absolute deviation of their log ratios (at least 0.1): models differ in
// how much a faster GPU helps them (Gavel's Recommendation job is slower on
// V100 than P100). ok is false if no model was measured on both types.
func (t *TypeSpeeds) Ratio(model, from, to string) (ratio, sigmaLog float64, ok bool) {
	if from == to {
		return 1, 0, true
	}
	if t == nil {
		return 0, 0, false
	}
	if m, found := t.x[model]; found {
		a, okA := m[from]
		b, okB := m[to]
		if okA && okB {
			return b / a, 0.05, true
		}
	}
	models := make([]string, 0, len(t.x))
	for k := range t.x {
		models = append(models, k)
	}
	sort.Strings(models)
	var logs []float64
	for _, k := range models {
		a, okA := t.x[k][from]
		b, okB := t.x[k][to]
		if okA && okB {
			logs = append(logs, math.Log(b/a))
		}
	}
	if len(logs) == 0 {
		return 0, 0, false
	}
	return math.Exp(median(logs)), math.Max(1.4826*mad(logs), 0.1), true
}

// ErrBadSpeeds: a throughput table could not be parsed.
var ErrBadSpeeds = errors.New("bad throughput table")

// ParseGavel reads Gavel's isolated-throughput table (columns job_type,
// scale_factor, then one column per GPU type, in steps/s), keeping the
// scale-factor-1 rows: models are job types, node types the GPU columns.
// Steps/s and samples/s differ by the batch size, which cancels in ratios.
func ParseGavel(r io.Reader) (*TypeSpeeds, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: reading header: %v", ErrBadSpeeds, err)
	}
	if len(header) < 3 || strings.TrimSpace(header[0]) != "job_type" || strings.TrimSpace(header[1]) != "scale_factor" {
		return nil, fmt.Errorf("%w: header %q, want job_type,scale_factor,<gpu types>", ErrBadSpeeds, header)
	}
	t := NewTypeSpeeds()
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadSpeeds, line, err)
		}
		if strings.TrimSpace(rec[1]) != "1" {
			continue
		}
		for i := 2; i < len(rec); i++ {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d, column %s: %q is not a number", ErrBadSpeeds, line, header[i], rec[i])
			}
			t.Set(strings.TrimSpace(rec[0]), strings.TrimSpace(header[i]), v)
		}
	}
}
