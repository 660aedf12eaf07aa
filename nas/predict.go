package nas

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// A throughput model predicts how fast an architecture trains before it
// has run: a prior for the JPA (docs/jpa.md), which then corrects it with
// measurements. DeletePop's idea (He et al., ICA3PP 2023): a training
// step is computation, memory access and communication, each the sum over
// the network's operators of a cost proportional to what the operator
// does. Here, for one step of a global batch B on n data-parallel nodes
// (the batch split evenly, b = ⌈B/n⌉ samples on the busiest):
//
//	t(n) = c₀ + c_k·kernels + c_t·tensors + c_p·params             per step
//	     + b·(c_mac·MAC FLOPs + c_flop·other FLOPs + c_byte·bytes)  per sample
//	     + m·2(n−1)·α + 2(n−1)/n·4·params·β                         all-reduce
//
// (Work says what each count is), and the throughput is B/t(n) samples/s.
// The coefficients c are fitted to measured single-node runs; the
// all-reduce is Patarasuk and Yuan's ring (J. Parallel Distrib. Comput.
// 69(2), 2009): n−1 steps of reduce-scatter and n−1 of all-gather, each
// paying a latency α, and 2(n−1)/n of the gradients' bytes through each
// node at β seconds a byte, for m all-reduces a step.

// Throughput model features, in the order of ThroughputModel.Coef: what
// one step costs per unit of each, in seconds.
const (
	FeatureStep         = "step"          // 1 per step: the loop, the loss, the optimiser's fixed cost
	FeatureKernels      = "kernels"       // Work.Kernels
	FeatureParamTensors = "param_tensors" // Work.ParamTensors
	FeatureParams       = "params"        // Work.Params (the optimiser's update)
	FeatureMACFLOPs     = "mac_flops"     // b·Work.MACFLOPs
	FeatureOtherFLOPs   = "other_flops"   // b·Work.OtherFLOPs
	FeatureBytes        = "bytes"         // b·Work.Bytes
)

var throughputFeatures = []string{
	FeatureStep, FeatureKernels, FeatureParamTensors, FeatureParams,
	FeatureMACFLOPs, FeatureOtherFLOPs, FeatureBytes,
}

// ThroughputFeatures lists the model's features, in the order of its
// coefficients.
func ThroughputFeatures() []string { return slices.Clone(throughputFeatures) }

// features returns w's feature vector for a step of batch samples.
func (w Work) features(batch int) []float64 {
	b := float64(batch)
	return []float64{
		1, float64(w.Kernels), float64(w.ParamTensors), w.Params,
		b * w.MACFLOPs, b * w.OtherFLOPs, b * w.Bytes,
	}
}

// Digits is the example trainer's input (examples/pytorch-nas:
// scikit-learn's 8×8 grey digits, 10 classes), a ThroughputSample's
// default.
var Digits = Shape{Channels: 1, Height: 8, Width: 8}

// DigitsClasses is the digits' number of classes.
const DigitsClasses = 10

// ThroughputSample is one measured single-node run.
type ThroughputSample struct {
	// Arch is the architecture's JSON (a cell; any isomorphic form).
	Arch string
	// Input and Classes are the data's; zero: Digits and DigitsClasses.
	Input   Shape
	Classes int
	// Batch is the (global) batch of a step, ≥ 1.
	Batch int
	// SamplesPerSecond is the steady training throughput measured.
	SamplesPerSecond float64
}

// AllReduce is the cost of the data-parallel gradient all-reduce, a ring
// over n nodes (Patarasuk and Yuan 2009):
//
//	T(n) = m·2(n−1)·α + 2(n−1)/n·bytes·β,   T(1) = 0
//
// with bytes = 4·params (float32 gradients). The zero value costs
// nothing; DefaultAllReduce is gloo's on one host, measured.
type AllReduce struct {
	// Alpha is the latency of one step of the ring, in seconds.
	Alpha float64 `json:"alpha"`
	// Beta is the time per byte through a node, in seconds.
	Beta float64 `json:"beta"`
	// PerStep is how many all-reduces a step runs (m): the gradients'
	// (DDP: one per 25 MiB bucket) and the trainer's own (train.py
	// all-reduces its loss and stop flag every step); 0 means 1.
	PerStep int `json:"per_step"`
}

// DefaultAllReduce is gloo over loopback TCP between the processes of one
// host, fitted (FitAllReduce) to examples/pytorch-nas on 1 and 2 nodes of
// a shared 2-core VM, one thread a rank (docs/nas.md, "Throughput from
// the architecture"): 2 all-reduces a step (the gradients' one bucket and
// train.py's loss and stop flag). Its α, 0.8 ms a ring step, is mostly
// the two ranks waiting for each other to be scheduled on a host whose
// every core they occupy; β is barely determined (the gradients there
// are 16 to 86 kB). Refit it for another host.
var DefaultAllReduce = AllReduce{Alpha: 8e-4, Beta: 2.4e-9, PerStep: 2}

// Seconds returns the all-reduce time of one step on n nodes for params
// float32 parameters.
func (a AllReduce) Seconds(n int, params float64) float64 {
	if n <= 1 {
		return 0
	}
	m := float64(max(a.PerStep, 1))
	f := float64(n - 1)
	return m*2*f*a.Alpha + 2*f/float64(n)*4*params*a.Beta
}

// ThroughputModel predicts training throughput from an architecture. It
// is JSON as it stands, so a worker can load one FitThroughput wrote
// (ParseThroughputModel checks it).
type ThroughputModel struct {
	// Input and Classes are the data the model was fitted on.
	Input   Shape `json:"input"`
	Classes int   `json:"classes"`
	// Batch is the global batch predictions are for (the fit's most
	// common).
	Batch int `json:"batch"`
	// Features name Coef's entries (ThroughputFeatures).
	Features []string `json:"features"`
	// Coef are the seconds a step costs per unit of each feature, ≥ 0.
	Coef []float64 `json:"coef"`
	// AllReduce is the communication model of Curve.
	AllReduce AllReduce `json:"allreduce"`
	// Fit describes the fit, in sample.
	Fit FitSummary `json:"fit"`
}

// FitSummary is a fit's error on its own samples: the absolute
// percentage error of the predicted throughput, as a fraction.
type FitSummary struct {
	Samples   int     `json:"samples"`
	MedianAPE float64 `json:"median_ape"`
	P90APE    float64 `json:"p90_ape"`
}

// Errors of the throughput model.
var (
	// ErrNoSamples: FitThroughput was given nothing to fit.
	ErrNoSamples = errors.New("no throughput samples")
	// ErrNotModelled: the architecture is not a cell (layer
	// architectures have no Work yet).
	ErrNotModelled = errors.New("only cell architectures are modelled")
)

// FitThroughput fits a ThroughputModel to single-node measurements: the
// non-negative c minimising Σ_i |t̂_i/t_i − 1|, t_i = Batch_i /
// SamplesPerSecond_i the measured seconds a step, t̂_i = c·features_i.
//
// Why this form: times of operators add up, so the model is linear in
// its costs (DeletePop), and each cost is a time, so ≥ 0 (Lawson and
// Hanson's NNLS): a fit can then never buy accuracy on the sample with a
// negative cost that makes a bigger network faster elsewhere, and a
// feature the data cannot tell apart from another drops to 0 rather
// than cancelling it. A log-linear model (ln t = Σ c·ln f) fits ratios
// too, but a product of power laws cannot be a sum of fixed and
// per-sample costs: it would not split across nodes as t(n) does.
// Relative residuals because the target is a relative error and timing
// noise is multiplicative; their absolute values (least absolute
// deviations, by reweighting: fitRelative) rather than their squares
// because that noise, on a shared machine, is one-sided and heavy-tailed
// (a run that shares its core goes twice as slow, never twice as fast),
// and squares chase it.
//
// Every sample must have the same Input and Classes (zero: the digits'),
// a positive Batch and a positive, finite throughput; Arch a cell. The
// model's AllReduce is DefaultAllReduce.
func FitThroughput(samples []ThroughputSample) (*ThroughputModel, error) {
	if len(samples) == 0 {
		return nil, ErrNoSamples
	}
	m := &ThroughputModel{Features: ThroughputFeatures(), AllReduce: DefaultAllReduce}
	rows := make([][]float64, len(samples))
	times := make([]float64, len(samples))
	batches := map[int]int{}
	for i, s := range samples {
		in, classes := s.Input, s.Classes
		if in == (Shape{}) {
			in = Digits
		}
		if classes == 0 {
			classes = DigitsClasses
		}
		if i == 0 {
			m.Input, m.Classes = in, classes
		} else if in != m.Input || classes != m.Classes {
			return nil, fmt.Errorf("throughput sample %d: input %+v, %d classes; sample 0: %+v, %d: fit one data set at a time", i, in, classes, m.Input, m.Classes)
		}
		if s.Batch < 1 || !(s.SamplesPerSecond > 0) || math.IsInf(s.SamplesPerSecond, 0) {
			return nil, fmt.Errorf("throughput sample %d: batch %d, %g samples/s: want a batch ≥ 1 and a positive, finite throughput", i, s.Batch, s.SamplesPerSecond)
		}
		w, err := workOf(s.Arch, in, classes)
		if err != nil {
			return nil, fmt.Errorf("throughput sample %d: %w", i, err)
		}
		rows[i] = w.features(s.Batch)
		times[i] = float64(s.Batch) / s.SamplesPerSecond
		batches[s.Batch]++
	}
	m.Batch = mode(batches)
	m.Coef = fitRelative(rows, times)
	ape := make([]float64, len(samples))
	for i, s := range samples {
		ape[i] = math.Abs(float64(s.Batch)/dot(m.Coef, rows[i])/s.SamplesPerSecond - 1)
	}
	m.Fit = FitSummary{Samples: len(samples), MedianAPE: stats.Quantile(ape, 0.5), P90APE: stats.Quantile(ape, 0.9)}
	return m, nil
}

// Robust fit: rounds of reweighting, and the floor on a residual's
// weight (a sample already within 0.5 % is not worth more than one
// there).
const (
	irlsRounds = 30
	irlsFloor  = 0.005
)

// fitRelative returns the c ≥ 0 minimising Σ_i |c·x_i/t_i − 1|, the sum of
// the absolute relative errors, by iteratively reweighted least squares
// (Schlossmacher, JASA 68(344), 1973): each round solves the NNLS of the
// rows divided by their target and weighted by 1/max(|r_i|, irlsFloor),
// r_i the last round's relative residuals, from plain least squares (all
// weights 1). Each column is scaled to unit norm (and the solution scaled
// back), so that the stopping tolerance means the same for seconds per
// step and per FLOP.
func fitRelative(rows [][]float64, t []float64) []float64 {
	k := len(rows[0])
	w := make([]float64, len(rows))
	for i := range w {
		w[i] = 1
	}
	var c []float64
	for range irlsRounds {
		a := make([][]float64, len(rows))
		b := make([]float64, len(rows))
		for i, r := range rows {
			sw := math.Sqrt(w[i])
			a[i] = make([]float64, k)
			for j, v := range r {
				a[i][j] = sw * v / t[i]
			}
			b[i] = sw
		}
		scale := make([]float64, k)
		for j := range k {
			for i := range a {
				scale[j] += a[i][j] * a[i][j]
			}
			scale[j] = math.Sqrt(scale[j])
			for i := range a {
				if scale[j] > 0 {
					a[i][j] /= scale[j]
				}
			}
		}
		next := nnls(a, b)
		for j := range next {
			if scale[j] > 0 {
				next[j] /= scale[j]
			} else {
				next[j] = 0 // a feature no sample has says nothing
			}
		}
		done := c != nil && closeCoef(c, next)
		c = next
		if done {
			break
		}
		for i, r := range rows {
			w[i] = 1 / math.Max(math.Abs(dot(c, r)/t[i]-1), irlsFloor)
		}
	}
	return c
}

// closeCoef reports whether two rounds' coefficients agree to 1e-9.
func closeCoef(a, b []float64) bool {
	for j := range a {
		if math.Abs(a[j]-b[j]) > 1e-9*math.Max(math.Abs(a[j]), math.Abs(b[j])) {
			return false
		}
	}
	return true
}

// ParseThroughputModel decodes a model's JSON and checks it against this
// version's features.
func ParseThroughputModel(b []byte) (*ThroughputModel, error) {
	var m ThroughputModel
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("throughput model: %w", err)
	}
	if !slices.Equal(m.Features, throughputFeatures) {
		return nil, fmt.Errorf("throughput model: features %v, this version's are %v: refit it", m.Features, throughputFeatures)
	}
	if len(m.Coef) != len(m.Features) {
		return nil, fmt.Errorf("throughput model: %d coefficients for %d features", len(m.Coef), len(m.Features))
	}
	for i, c := range m.Coef {
		if !(c >= 0) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("throughput model: coef[%d] (%s) = %g, want finite and ≥ 0", i, m.Features[i], c)
		}
	}
	if m.Batch < 1 || m.Classes < 1 || m.Input.Channels < 1 || m.Input.Height < 1 || m.Input.Width < 1 {
		return nil, fmt.Errorf("throughput model: batch %d, input %+v, %d classes: want every size ≥ 1", m.Batch, m.Input, m.Classes)
	}
	return &m, nil
}

// StepSeconds returns the predicted seconds of one training step of arch
// (a cell's JSON) on nodes data-parallel nodes at a global batch of
// batch: t(n) above.
func (m *ThroughputModel) StepSeconds(arch string, batch, nodes int) (float64, error) {
	if batch < 1 || nodes < 1 {
		return 0, fmt.Errorf("throughput of %s: batch %d on %d nodes: want both ≥ 1", arch, batch, nodes)
	}
	w, err := workOf(arch, m.Input, m.Classes)
	if err != nil {
		return 0, err
	}
	return m.stepSeconds(arch, w, batch, nodes)
}

// stepSeconds is t(n) for w, the work of arch.
func (m *ThroughputModel) stepSeconds(arch string, w Work, batch, nodes int) (float64, error) {
	perNode := (batch + nodes - 1) / nodes
	t := dot(m.Coef, w.features(perNode)) + m.AllReduce.Seconds(nodes, w.Params)
	if !(t > 0) || math.IsInf(t, 0) {
		return 0, fmt.Errorf("throughput of %s: the model predicts %g s a step: its coefficients are all 0", arch, t)
	}
	return t, nil
}

// Predict returns arch's predicted single-node training throughput at the
// model's batch, in samples per second.
func (m *ThroughputModel) Predict(arch string) (samplesPerSecond float64, err error) {
	t, err := m.StepSeconds(arch, m.Batch, 1)
	if err != nil {
		return 0, err
	}
	return float64(m.Batch) / t, nil
}

// Curve returns arch's predicted throughput (samples/s, at the model's
// global batch) on 1, 2, …, maxNodes data-parallel nodes: out[n−1] is
// n nodes'. Nodes are assumed not to slow one another but through the
// all-reduce (no shared cores or memory bandwidth).
func (m *ThroughputModel) Curve(arch string, maxNodes int) ([]float64, error) {
	if maxNodes < 1 {
		return nil, fmt.Errorf("throughput curve of %s: %d nodes, want ≥ 1", arch, maxNodes)
	}
	if m.Batch < 1 {
		return nil, fmt.Errorf("throughput curve of %s: the model's batch is %d, want ≥ 1", arch, m.Batch)
	}
	w, err := workOf(arch, m.Input, m.Classes) // once: it parses and walks the network
	if err != nil {
		return nil, err
	}
	out := make([]float64, maxNodes)
	for n := 1; n <= maxNodes; n++ {
		t, err := m.stepSeconds(arch, w, m.Batch, n)
		if err != nil {
			return nil, err
		}
		out[n-1] = float64(m.Batch) / t
	}
	return out, nil
}

// ScalingRun is a measured run of one architecture on Nodes
// data-parallel nodes.
type ScalingRun struct {
	Arch             string
	Batch            int // global batch of a step
	Nodes            int
	SamplesPerSecond float64
}

// FitAllReduce fits the all-reduce's α and β to measured runs, keeping
// m.AllReduce's PerStep; it returns them and leaves m alone. Every run on
// n > 1 nodes of an architecture also run on 1 node (at the same batch)
// gives the all-reduce time it implies,
//
//	T_n = t_n − t_1 + t̂(B) − t̂(⌈B/n⌉)
//
// t the measured seconds a step, t̂ the model's compute for a step of that
// many samples: the model says only how much the smaller per-node batch
// saves, so its error on the architecture and the trainer's own
// per-step costs (in t_1 and t_n alike) cancel. α, β ≥ 0 minimise
// Σ (T(n) − T_n)² (NNLS). ErrNoSamples if no run pairs with a 1-node run.
func (m *ThroughputModel) FitAllReduce(runs []ScalingRun) (AllReduce, error) {
	type key struct {
		arch  string
		batch int
	}
	one := map[key][]float64{}
	for i, r := range runs {
		if r.Batch < 1 || r.Nodes < 1 || !(r.SamplesPerSecond > 0) || math.IsInf(r.SamplesPerSecond, 0) {
			return AllReduce{}, fmt.Errorf("scaling run %d: batch %d, %d nodes, %g samples/s: want batch and nodes ≥ 1 and a positive, finite throughput", i, r.Batch, r.Nodes, r.SamplesPerSecond)
		}
		if r.Nodes == 1 {
			k := key{r.Arch, r.Batch}
			one[k] = append(one[k], float64(r.Batch)/r.SamplesPerSecond)
		}
	}
	var rows [][]float64
	var implied []float64
	for i, r := range runs {
		t1, ok := one[key{r.Arch, r.Batch}]
		if r.Nodes == 1 || !ok {
			continue
		}
		w, err := workOf(r.Arch, m.Input, m.Classes)
		if err != nil {
			return AllReduce{}, fmt.Errorf("scaling run %d: %w", i, err)
		}
		perNode := (r.Batch + r.Nodes - 1) / r.Nodes
		saved := dot(m.Coef, w.features(r.Batch)) - dot(m.Coef, w.features(perNode))
		f := float64(r.Nodes - 1)
		rows = append(rows, []float64{float64(max(m.AllReduce.PerStep, 1)) * 2 * f, 2 * f / float64(r.Nodes) * 4 * w.Params})
		implied = append(implied, float64(r.Batch)/r.SamplesPerSecond-stats.Quantile(t1, 0.5)+saved)
	}
	if len(rows) == 0 {
		return AllReduce{}, fmt.Errorf("%w: no run on more than one node of an architecture also run on one", ErrNoSamples)
	}
	// Columns to unit norm, as in fitRelative.
	scale := make([]float64, 2)
	for j := range scale {
		for _, r := range rows {
			scale[j] += r[j] * r[j]
		}
		scale[j] = math.Sqrt(scale[j])
	}
	a := make([][]float64, len(rows))
	for i, r := range rows {
		a[i] = []float64{r[0] / scale[0], r[1] / scale[1]}
	}
	x := nnls(a, implied)
	out := m.AllReduce
	out.Alpha, out.Beta = x[0]/scale[0], 0
	if scale[1] > 0 {
		out.Beta = x[1] / scale[1]
	}
	return out, nil
}

// workOf parses arch, checks it is a valid cell and returns the Work of
// its canonical (pruned) form.
func workOf(arch string, in Shape, classes int) (Work, error) {
	a, err := Parse(arch)
	if err != nil {
		return Work{}, err
	}
	if a.Cell == nil {
		return Work{}, fmt.Errorf("%w: %s", ErrNotModelled, a)
	}
	if err := a.Cell.Validate(); err != nil {
		return Work{}, err
	}
	return a.Cell.Canonical().Work(in, classes), nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// mode returns the most frequent key, the smallest of a tie.
func mode(counts map[int]int) int {
	best, n := 0, -1
	for k, c := range counts {
		if c > n || (c == n && k < best) {
			best, n = k, c
		}
	}
	return best
}
