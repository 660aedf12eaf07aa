package nas

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// Work counted by hand, operator by operator, from the trainer's network
// (Work's comment); its FLOPs and parameters are Cost's (TestCost).
func TestWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		c       Cell
		in      Shape
		classes int
		want    Work
	}{
		{
			// stem conv 1→2 on 4×4 (288 MACs; reads 16, writes 32
			// elements), BN (32 FLOPs; 32 in, 32 out); the edge: ReLU
			// (32, 32), conv (576; 32, 32), BN (32; 32, 32); head BN
			// (32; 32, 32), ReLU (32, 32), pooling (32; 32, 2), dense
			// 2→3 (6 MACs + 3 biases; 2, 3). Kernels: 2 + 3 + 4;
			// tensors: 3 + 3 + 4.
			"one conv edge", Cell{Nodes: 2, Edges: [][]string{{c3}}, Stacks: 1, Cells: 1, Channels: 2}, Shape{1, 4, 4}, 3,
			Work{
				MACFLOPs: 288 + 576 + 6, OtherFLOPs: 32 + 32 + 32 + 32 + 3,
				Bytes:   4 * (48 + 64 + 64 + 64 + 64 + 64 + 64 + 34 + 5),
				Kernels: 9, ParamTensors: 10, Params: 18 + 4 + 36 + 4 + 4 + 9,
			},
		},
		{
			// stem (36 MACs; 4, 4), BN (4; 4, 4); avg pool on 0→1 (36;
			// 4, 4); node 2: skip (nothing), max pool (36; 4, 4), a sum
			// (4; 8, 4); head BN (4; 4, 4), ReLU (4, 4), pooling (4; 4,
			// 1), dense 1→1 (1 + 1; 1, 1).
			"pools and sums", Cell{Nodes: 3, Edges: [][]string{{avg}, {skip, mx}}, Stacks: 1, Cells: 1, Channels: 1}, Shape{1, 2, 2}, 1,
			Work{
				MACFLOPs: 36 + 1, OtherFLOPs: 4 + 36 + 36 + 4 + 4 + 4 + 1,
				Bytes:   4 * (8 + 8 + 8 + 8 + 12 + 8 + 8 + 5 + 2),
				Kernels: 9, ParamTensors: 7, Params: 9 + 2 + 2 + 2,
			},
		},
		{
			// the output unreachable: the cell is one kernel, x·0 (4, 4).
			"disconnected", Cell{Nodes: 2, Edges: [][]string{{no}}, Stacks: 1, Cells: 1, Channels: 1}, Shape{1, 2, 2}, 1,
			Work{
				MACFLOPs: 36 + 1, OtherFLOPs: 4 + 4 + 4 + 1,
				Bytes:   4 * (8 + 8 + 8 + 8 + 8 + 5 + 2),
				Kernels: 7, ParamTensors: 7, Params: 9 + 2 + 2 + 2,
			},
		},
	} {
		if got := tc.c.Work(tc.in, tc.classes); got != tc.want {
			t.Errorf("%s: Work\n got %+v,\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// Work's FLOPs and parameters are Cost's, for cells of every shape.
func TestWorkAgreesWithCost(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	for _, def := range []hpo.CellSpace{
		{}, {Nodes: 2}, {Nodes: 5, Stacks: 3, Cells: 2, Channels: 5}, {Nodes: 7, Ops: CellOps(), Stacks: 4, Channels: 3},
	} {
		s := mustCellSpace(t, def)
		for range 50 {
			c := cellOf(t, s.Sample(rng))
			for _, in := range []Shape{Digits, {3, 32, 32}, {2, 7, 5}} {
				w := c.Work(in, 10)
				flops, params := c.Cost(in, 10)
				if math.Abs(w.MACFLOPs+w.OtherFLOPs-flops) > 1e-9*flops || w.Params != params {
					t.Fatalf("%s on %+v: Work %+v; Cost %g FLOPs, %g params", c, in, w, flops, params)
				}
			}
		}
	}
}

// nnls agrees with brute force: the NNLS optimum is the unconstrained
// least squares on its support, so the best of the non-negative
// least-squares solutions over every subset of columns is it.
func TestNNLSBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for trial := range 300 {
		k := 1 + rng.IntN(5)
		m := k + rng.IntN(8)
		a := make([][]float64, m)
		b := make([]float64, m)
		for i := range a {
			a[i] = make([]float64, k)
			for j := range a[i] {
				a[i][j] = rng.NormFloat64()
			}
			b[i] = rng.NormFloat64()
		}
		if trial%3 == 0 && k > 1 { // a repeated column
			for i := range a {
				a[i][k-1] = a[i][0]
			}
		}
		got := nnls(a, b)
		best := math.Inf(1)
		for set := 0; set < 1<<k; set++ {
			use := make([]bool, k)
			for j := range k {
				use[j] = set&(1<<j) != 0
			}
			x := lstsq(a, b, use)
			if slicesMin(x) < -1e-12 {
				continue
			}
			best = math.Min(best, residual(a, b, x))
		}
		if slicesMin(got) < 0 {
			t.Fatalf("trial %d: nnls returned %v, a negative entry", trial, got)
		}
		if r := residual(a, b, got); r > best+1e-9*(1+best) {
			t.Fatalf("trial %d (%d×%d): nnls residual %.12g, brute force %.12g", trial, m, k, r, best)
		}
	}
}

func residual(a [][]float64, b, x []float64) float64 {
	s := 0.0
	for i, row := range a {
		r := dot(row, x) - b[i]
		s += r * r
	}
	return s
}

func slicesMin(x []float64) float64 {
	m := math.Inf(1)
	for _, v := range x {
		m = math.Min(m, v)
	}
	return m
}

// synthCoef are plausible costs of a CPU step: 2 ms of loop, 30 µs a
// kernel, 5 µs a tensor, 1 ns a parameter, 1 GFLOP/s of MACs, 4 of the
// rest, 8 GB/s.
var synthCoef = []float64{2e-3, 30e-6, 5e-6, 1e-9, 1e-9, 0.25e-9, 0.125e-9}

// synthSamples times architectures of several spaces and batches with
// coef, each throughput multiplied by exp(noise·N(0, 1)).
func synthSamples(t testing.TB, rng *rand.Rand, coef []float64, n int, noise float64) []ThroughputSample {
	t.Helper()
	var spaces []*CellSpace
	for _, def := range []hpo.CellSpace{
		{}, {Channels: 16}, {Stacks: 3, Channels: 4}, {Nodes: 5, Cells: 2, Channels: 32},
	} {
		spaces = append(spaces, mustCellSpace(t, def))
	}
	batches := []int{16, 64, 256}
	out := make([]ThroughputSample, n)
	for i := range out {
		arch := spaces[i%len(spaces)].Sample(rng)
		batch := batches[rng.IntN(len(batches))]
		w := cellOf(t, arch).Work(Digits, DigitsClasses)
		sps := float64(batch) / dot(coef, w.features(batch)) * math.Exp(noise*rng.NormFloat64())
		out[i] = ThroughputSample{Arch: arch, Batch: batch, SamplesPerSecond: sps}
	}
	return out
}

// On noise-free synthetic timings of varied networks and batches the fit
// recovers the coefficients, a zero one included (NNLS keeps it at 0
// rather than trading it against the others).
func TestFitThroughputRecovers(t *testing.T) {
	for _, coef := range [][]float64{
		synthCoef,
		{2e-3, 30e-6, 0, 1e-9, 1e-9, 0, 0.125e-9},
	} {
		samples := synthSamples(t, rand.New(rand.NewPCG(1, 1)), coef, 400, 0)
		m, err := FitThroughput(samples)
		if err != nil {
			t.Fatal(err)
		}
		for j, want := range coef {
			if got := m.Coef[j]; math.Abs(got-want) > 1e-6*want+1e-18 {
				t.Errorf("coef %s = %g, want %g", m.Features[j], got, want)
			}
		}
		if m.Fit.MedianAPE > 1e-9 || m.Fit.P90APE > 1e-9 {
			t.Errorf("in-sample error %+v, want 0", m.Fit)
		}
	}
}

// With 5 % multiplicative noise, the fitted model predicts held-out
// architectures to within the noise.
func TestFitThroughputNoisy(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 7))
	m, err := FitThroughput(synthSamples(t, rng, synthCoef, 400, 0.05))
	if err != nil {
		t.Fatal(err)
	}
	var ape []float64
	for _, s := range synthSamples(t, rng, synthCoef, 200, 0) {
		got, err := m.StepSeconds(s.Arch, s.Batch, 1)
		if err != nil {
			t.Fatal(err)
		}
		ape = append(ape, math.Abs(float64(s.Batch)/got/s.SamplesPerSecond-1))
	}
	if med := stats.Quantile(ape, 0.5); med > 0.02 {
		t.Errorf("median error %.3f on noise-free held-out timings, want ≤ 0.02 (fit: %+v)", med, m.Fit)
	}
}

func TestFitThroughputErrors(t *testing.T) {
	good := `{"cell":{"nodes":2,"edges":[["conv_3x3"]],"stacks":1,"cells":1,"channels":4}}`
	for _, tc := range []struct {
		name    string
		samples []ThroughputSample
		want    string
	}{
		{"none", nil, "no throughput samples"},
		{"batch", []ThroughputSample{{Arch: good, SamplesPerSecond: 10}}, "throughput sample 0: batch 0, 10 samples/s: want a batch ≥ 1 and a positive, finite throughput"},
		{"rate", []ThroughputSample{{Arch: good, Batch: 8, SamplesPerSecond: math.Inf(1)}}, "throughput sample 0: batch 8, +Inf samples/s: want a batch ≥ 1 and a positive, finite throughput"},
		{"layers", []ThroughputSample{{Arch: `{"layers":{"kind":"mlp","layers":[{"width":8,"activation":"relu","skip":false}]}}`, Batch: 8, SamplesPerSecond: 1}},
			"throughput sample 0: only cell architectures are modelled: mlp[8 relu]"},
		{"invalid", []ThroughputSample{{Arch: `{"cell":{"nodes":2,"edges":[["conv_9x9"]],"stacks":1,"cells":1,"channels":4}}`, Batch: 8, SamplesPerSecond: 1}},
			`throughput sample 0: cell.edges[0][0]: "conv_9x9" (edge 0→1) is not one of none, skip_connect, conv_1x1, conv_3x3, avg_pool_3x3, max_pool_3x3`},
		{"two data sets", []ThroughputSample{{Arch: good, Batch: 8, SamplesPerSecond: 1}, {Arch: good, Input: Shape{3, 32, 32}, Batch: 8, SamplesPerSecond: 1}},
			"throughput sample 1: input {Channels:3 Height:32 Width:32}, 10 classes; sample 0: {Channels:1 Height:8 Width:8}, 10: fit one data set at a time"},
	} {
		_, err := FitThroughput(tc.samples)
		wantErr(t, err, tc.want)
	}
	_, err := FitThroughput([]ThroughputSample{{Arch: `{"layers":{"kind":"cnn","layers":[{"width":8,"activation":"relu","skip":false}]}}`, Batch: 8, SamplesPerSecond: 1}})
	if !errors.Is(err, ErrNotModelled) {
		t.Errorf("error %v, want ErrNotModelled", err)
	}
}

// A fitted model survives JSON; ParseThroughputModel refuses one of other
// features or with a negative cost.
func TestThroughputModelJSON(t *testing.T) {
	m, err := FitThroughput(synthSamples(t, rand.New(rand.NewPCG(4, 4)), synthCoef, 50, 0.02))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseThroughputModel(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(b) {
		t.Errorf("round trip:\n%s\n%s", b, again)
	}
	arch := mustCellSpace(t, hpo.CellSpace{}).Sample(rand.New(rand.NewPCG(0, 1)))
	x, _ := m.Predict(arch)
	y, _ := back.Predict(arch)
	if x != y || !(x > 0) {
		t.Errorf("Predict: %g before, %g after a round trip", x, y)
	}
	for _, tc := range []struct {
		edit func(*ThroughputModel)
		want string
	}{
		{func(m *ThroughputModel) { m.Coef[0] = -1 }, "throughput model: coef[0] (step) = -1, want finite and ≥ 0"},
		{func(m *ThroughputModel) { m.Coef = m.Coef[1:] }, "throughput model: 6 coefficients for 7 features"},
		{func(m *ThroughputModel) { m.Features = m.Features[1:] }, "throughput model: features [kernels param_tensors params mac_flops other_flops bytes], " +
			"this version's are [step kernels param_tensors params mac_flops other_flops bytes]: refit it"},
		{func(m *ThroughputModel) { m.Batch = 0 }, "throughput model: batch 0, input {Channels:1 Height:8 Width:8}, 10 classes: want every size ≥ 1"},
	} {
		bad := *back
		bad.Coef, bad.Features = slices.Clone(back.Coef), slices.Clone(back.Features)
		tc.edit(&bad)
		raw, _ := json.Marshal(bad)
		_, err := ParseThroughputModel(raw)
		wantErr(t, err, tc.want)
	}
}

// The all-reduce costs nothing on one node and Patarasuk and Yuan's
// 2(n−1)·α + 2(n−1)/n·bytes·β per all-reduce beyond.
func TestAllReduceSeconds(t *testing.T) {
	a := AllReduce{Alpha: 1e-4, Beta: 1e-9, PerStep: 2}
	for _, tc := range []struct {
		n      int
		params float64
		want   float64
	}{
		{1, 1e6, 0},
		{2, 1e6, 2*2*1e-4 + 1*4e6*1e-9},
		{4, 1e6, 2*6*1e-4 + 1.5*4e6*1e-9},
	} {
		if got := a.Seconds(tc.n, tc.params); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("Seconds(%d, %g) = %g, want %g", tc.n, tc.params, got, tc.want)
		}
	}
	if got := (AllReduce{Alpha: 1}).Seconds(3, 0); got != 4 {
		t.Errorf("PerStep 0 is one all-reduce: got %g, want 4", got)
	}
}

// Curve splits a step's per-sample work over the nodes, keeps its
// per-step work on each and adds the all-reduce: with per-sample costs
// only and no communication it scales linearly; per-step costs bend it;
// a slow all-reduce makes two nodes slower than one.
func TestCurve(t *testing.T) {
	arch := `{"cell":{"nodes":4,"edges":[["conv_3x3"],["skip_connect","none"],["conv_1x1","conv_3x3","conv_3x3"]],"stacks":2,"cells":1,"channels":8}}`
	base := ThroughputModel{Input: Digits, Classes: DigitsClasses, Batch: 64, Features: ThroughputFeatures()}
	linear := base
	linear.Coef = []float64{0, 0, 0, 0, 1e-9, 0, 0}
	c, err := linear.Curve(arch, 8)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := linear.Predict(arch)
	for n, x := range c {
		if math.Abs(x-float64(n+1)*c[0]) > 1e-9*x && 64%(n+1) == 0 {
			t.Errorf("linear model: %d nodes %g samples/s, want %d × %g", n+1, x, n+1, c[0])
		}
	}
	if c[0] != one {
		t.Errorf("Curve[0] = %g, Predict %g", c[0], one)
	}
	bent := linear
	bent.Coef = []float64{1e-2, 0, 0, 0, 1e-9, 0, 0}
	c, _ = bent.Curve(arch, 4)
	w := cellOf(t, arch).Work(Digits, DigitsClasses)
	for n, x := range c {
		want := 64 / (1e-2 + float64((64+n)/(n+1))*1e-9*w.MACFLOPs)
		if math.Abs(x-want) > 1e-9*want {
			t.Errorf("fixed cost: %d nodes %g samples/s, want %g", n+1, x, want)
		}
	}
	slow := bent
	slow.AllReduce = AllReduce{Alpha: 1}
	c, _ = slow.Curve(arch, 2)
	if c[1] >= c[0] {
		t.Errorf("1 s all-reduces: %v, want 2 nodes slower than 1", c)
	}
	if _, err := base.Curve(arch, 2); err == nil || !strings.Contains(err.Error(), "its coefficients are all 0") {
		t.Errorf("a model of zeros: error %v", err)
	}
	if _, err := linear.Curve(arch, 0); err == nil {
		t.Error("Curve of 0 nodes: no error")
	}
}

// FitAllReduce recovers α and β from runs on 1, 2 and 4 nodes, whatever
// per-step overhead the trainer adds to every run and however far the
// model's single-node level is off (both cancel against the 1-node run).
func TestFitAllReduce(t *testing.T) {
	truth := AllReduce{Alpha: 1e-3, Beta: 5e-9, PerStep: 2}
	m := &ThroughputModel{Input: Digits, Classes: DigitsClasses, Batch: 64, Features: ThroughputFeatures(), Coef: synthCoef, AllReduce: AllReduce{PerStep: 2}}
	rng := rand.New(rand.NewPCG(9, 9))
	var runs []ScalingRun
	for _, def := range []hpo.CellSpace{{}, {Channels: 32}, {Stacks: 3, Channels: 16}} {
		s := mustCellSpace(t, def)
		for range 4 {
			arch := s.Sample(rng)
			overhead := 7e-4 * (1 + rng.Float64()) // the trainer's, per step
			for _, n := range []int{1, 2, 4} {
				comp, err := m.StepSeconds(arch, 64, n) // no all-reduce in m
				if err != nil {
					t.Fatal(err)
				}
				w := cellOf(t, arch).Work(Digits, DigitsClasses)
				step := comp + overhead + truth.Seconds(n, w.Params)
				runs = append(runs, ScalingRun{Arch: arch, Batch: 64, Nodes: n, SamplesPerSecond: 64 / step})
			}
		}
	}
	got, err := m.FitAllReduce(runs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Alpha-truth.Alpha) > 1e-9 || math.Abs(got.Beta-truth.Beta) > 1e-12 || got.PerStep != 2 {
		t.Errorf("FitAllReduce = %+v, want %+v", got, truth)
	}
	if _, err := m.FitAllReduce(runs[1:2]); !errors.Is(err, ErrNoSamples) {
		t.Errorf("a 2-node run alone: error %v, want ErrNoSamples", err)
	}
	if _, err := m.FitAllReduce([]ScalingRun{{Arch: runs[0].Arch, Batch: 64, Nodes: 0, SamplesPerSecond: 1}}); err == nil {
		t.Error("0 nodes: no error")
	}
}

// BenchmarkThroughputCurve is the cost of one NAS trial's prior in an
// allocation (activities.Allocate calls Curve once per registered NAS
// trial): the shipped model, a 4-node cell, 16 nodes.
func BenchmarkThroughputCurve(b *testing.B) {
	raw, err := os.ReadFile("../examples/pytorch-nas/throughput-model.json")
	if err != nil {
		b.Fatal(err)
	}
	m, err := ParseThroughputModel(raw)
	if err != nil {
		b.Fatal(err)
	}
	arch := `{"cell":{"nodes":4,"edges":[["conv_3x3"],["skip_connect","conv_1x1"],["none","conv_3x3","skip_connect"]],"stacks":2,"cells":1,"channels":8}}`
	for i := 0; i < b.N; i++ {
		if _, err := m.Curve(arch, 16); err != nil {
			b.Fatal(err)
		}
	}
}
