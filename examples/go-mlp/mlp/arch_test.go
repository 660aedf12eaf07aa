package mlp

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/nas"
	"github.com/gleaner-hpc/gleaner/trial"
)

// archJSON writes an mlp architecture as the params file carries it:
// "64 relu", "64 gelu skip", … one per hidden layer.
func archJSON(t *testing.T, layers ...string) string {
	t.Helper()
	l := nas.Layers{Kind: "mlp"}
	for _, s := range layers {
		var y nas.Layer
		var skip string
		if n, _ := fmt.Sscanf(s, "%d %s %s", &y.Width, &y.Activation, &skip); n < 2 {
			t.Fatalf("layer %q", s)
		}
		y.Skip = skip == "skip"
		l.Layers = append(l.Layers, y)
	}
	return nas.Architecture{Layers: &l}.JSON()
}

func archNetwork(t *testing.T, layers ...string) mlp {
	t.Helper()
	m, err := hyper{Arch: archJSON(t, layers...)}.network(dataDim, classes)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkGradient compares the hand-written backward pass with central
// differences at a few points.
func checkGradient(t *testing.T, m mlp, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 4))
	w := m.init(rng)
	for i := range w {
		w[i] += 0.1 * rng.NormFloat64() // non-zero biases too
	}
	s := m.scratch()
	for _, pt := range []struct {
		x []float64
		y int
	}{{[]float64{0.3, -0.7}, 2}, {[]float64{-0.9, 0.4}, 0}, {[]float64{0.05, 0.6}, 1}} {
		g := make([]float64, m.size())
		m.accumulate(w, g, pt.x, pt.y, s)
		const h = 1e-6
		for i := range w {
			orig := w[i]
			w[i] = orig + h
			up := m.forward(w, pt.x, pt.y, s)
			w[i] = orig - h
			down := m.forward(w, pt.x, pt.y, s)
			w[i] = orig
			if num := (up - down) / (2 * h); math.Abs(num-g[i]) > 1e-6*(1+math.Abs(num)) {
				t.Errorf("%s, x %v: weight %d of %d: backward %v, finite difference %v", m.describe(), pt.x, i, len(w), g[i], num)
				return
			}
		}
	}
}

// Every activation, in a 3-layer net whose middle layer is residual; and
// nets mixing them, deeper, with skips in a row.
func TestArchGradientMatchesFiniteDifferences(t *testing.T) {
	for _, act := range activationNames {
		t.Run(act, func(t *testing.T) {
			m := archNetwork(t, "5 "+act, "5 "+act+" skip", "4 "+act)
			if !m.layers[1].skip || m.layers[2].skip {
				t.Fatalf("layers %+v", m.layers)
			}
			checkGradient(t, m, 3)
		})
	}
	t.Run("mixed", func(t *testing.T) {
		checkGradient(t, archNetwork(t, "6 gelu", "6 silu skip", "6 elu skip", "3 sigmoid", "3 relu skip", "7 tanh"), 5)
	})
	t.Run("one layer", func(t *testing.T) {
		checkGradient(t, archNetwork(t, "4 elu"), 6)
	})
}

// Each activation's derivative against a central difference of apply,
// away from ReLU's and ELU's kink.
func TestActivationDerivatives(t *testing.T) {
	for f := range activationNames {
		act := activation(f)
		for _, a := range []float64{-3.1, -1, -0.2, 0.3, 1.2, 4} {
			const h = 1e-6
			num := (act.apply(a+h) - act.apply(a-h)) / (2 * h)
			if got := act.deriv(a, act.apply(a)); math.Abs(got-num) > 1e-8 {
				t.Errorf("%s′(%v) = %v, finite difference %v", act, a, got, num)
			}
		}
	}
	// The exact GELU, x·Φ(x): Φ(1) = 0.8413447460685429.
	if got := actGELU.apply(1); math.Abs(got-0.8413447460685429) > 1e-15 {
		t.Errorf("gelu(1) = %v, want 0.8413447460685429 (erf form)", got)
	}
}

// The hidden network is the architecture of one tanh layer of its width,
// but keeps its original initialisation and checkpoint version.
func TestHiddenNetworkIsOneTanhLayer(t *testing.T) {
	m, err := defaultHyper().network(dataDim, classes)
	if err != nil {
		t.Fatal(err)
	}
	if m.arch != "" || m.layers != nil || m.hidden != 32 || m.size() != 32*2+32+3*32+3 {
		t.Errorf("hidden network %+v, size %d", m, m.size())
	}
	a := archNetwork(t, "32 tanh")
	if a.size() != m.size() {
		t.Errorf("one tanh layer of 32: %d weights, the hidden network %d", a.size(), m.size())
	}
	tr := newTrainer(m, spiral(3, 10, 0.2, 1), 0.1, 0.9, 4, allNodes(1), 1)
	if s := tr.snapshot(0, 0); s.Version != stateVersionHidden || s.Arch != "" || s.Hidden != 32 {
		t.Errorf("hidden network's checkpoint: version %d, arch %q, hidden %d", s.Version, s.Arch, s.Hidden)
	}
}

// A checkpoint written before architectures (version 1, no Arch field in
// the gob) loads into the hidden network.
func TestVersion1CheckpointLoads(t *testing.T) {
	type stateV1 struct { // state as go-mlp wrote it before architectures
		Version         int
		Step, Samples   int64
		Hidden, Classes int
		Weights         []float64
		Velocity        []float64
		RNG             []byte
	}
	m := mlp{in: dataDim, hidden: 8, classes: classes}
	src := newTrainer(m, spiral(3, 10, 0.2, 1), 0.1, 0.9, 4, allNodes(1), 1)
	src.step(nil)
	s := src.snapshot(1, 4)
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(stateV1{1, s.Step, s.Samples, s.Hidden, s.Classes, s.Weights, s.Velocity, s.RNG}); err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(&buf)
	if err != nil {
		t.Fatal(err)
	}
	dst := newTrainer(m, spiral(3, 10, 0.2, 1), 0.1, 0.9, 4, allNodes(1), 2)
	if err := dst.restore(got); err != nil {
		t.Fatal(err)
	}
	src.step(nil)
	dst.step(nil)
	for i := range src.weights {
		if src.weights[i] != dst.weights[i] {
			t.Fatalf("weight %d: %v after resuming, %v without", i, dst.weights[i], src.weights[i])
		}
	}
	// An architecture's network refuses it.
	a := newTrainer(archNetwork(t, "8 tanh"), spiral(3, 10, 0.2, 1), 0.1, 0.9, 4, allNodes(1), 2)
	if err := a.restore(got); err == nil || !strings.Contains(err.Error(), "8 hidden") || !strings.Contains(err.Error(), "mlp[8 tanh]") {
		t.Errorf("architecture restoring a hidden checkpoint: %v", err)
	}
}

// Data parallelism changes who computes what, not the update: two workers
// match one, and two hosts one host with two nodes, bit for bit.
func TestArchAllreduceMatchesOneWorker(t *testing.T) {
	m := archNetwork(t, "8 relu", "8 gelu skip", "6 silu")
	checkWorkersMatch(t, m, 2)
	checkHostsTrainLikeOne(t, m, 2, []nodeSpan{{2, 0, 1}, {2, 1, 1}})
}

// A 2-layer architecture learns, reports its size, and resumes exactly.
func TestArchTrainsAndResumesExactly(t *testing.T) {
	arch := archJSON(t, "32 relu", "32 tanh skip")
	params := func(steps int) map[string]any {
		return map[string]any{"arch": arch, "steps": steps, "checkpoint_every": 1000}
	}
	want := archNetwork(t, "32 relu", "32 tanh skip").size()
	whole := newTrial(t).launch(params(200), 2, "")
	if code := whole.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, whole.stderr)
	}
	if !strings.Contains(whole.stderr.String(), "mlp[32 relu, 32 tanh skip]") {
		t.Errorf("stderr %q does not name the architecture", whole.stderr)
	}
	a, _ := whole.read()
	for i, rep := range a {
		if rep.Metrics["params"] != float64(want) {
			t.Errorf("report %d: params %v, want %d", i, rep.Metrics["params"], want)
		}
	}
	first, last := a[0], a[len(a)-1]
	if !(last.Metrics["val_loss"] < 0.8*first.Metrics["val_loss"]) || !(last.Metrics["loss"] < first.Metrics["loss"]) {
		t.Errorf("loss did not fall: first %v, last %v", first.Metrics, last.Metrics)
	}

	b := resumedHalfway(t, params)
	gotLast := b[len(b)-1]
	if gotLast.Step != 200 || gotLast.Samples != last.Samples || gotLast.Metrics["val_loss"] != last.Metrics["val_loss"] || gotLast.Metrics["loss"] != last.Metrics["loss"] {
		t.Errorf("100 + 100 steps ended at %+v; 200 steps at %+v: want identical progress and losses", gotLast, last)
	}
}

// Two hosts train an architecture as one host with two nodes does.
func TestArchManyHostsTrainTogether(t *testing.T) {
	params := map[string]any{"arch": archJSON(t, "16 gelu", "16 silu skip"), "steps": 60, "checkpoint_every": 1000}
	runs := newTrial(t).launchHosts(params, []int{1, 1}, "")
	for r, code := range waitAll(runs, 30*time.Second) {
		if code != 0 {
			t.Fatalf("host %d: exit %d\n%s", r, code, stderrs(runs))
		}
	}
	one := newTrial(t).launch(params, 2, "")
	if code := one.wait(30 * time.Second); code != 0 {
		t.Fatalf("one host: exit %d\n%s", code, one.stderr)
	}
	reps, _ := runs[0].read()
	oneReps, _ := one.read()
	got, want := reps[len(reps)-1], oneReps[len(oneReps)-1]
	if got.Step != 60 || got.Metrics["val_loss"] != want.Metrics["val_loss"] || got.Metrics["loss"] != want.Metrics["loss"] {
		t.Errorf("two hosts ended at %+v, one host at %+v: want the same step and losses", got, want)
	}
}

func TestBadArchExitsWithAClearError(t *testing.T) {
	for _, c := range []struct{ name, arch, want string }{
		{"unknown activation", `{"layers":{"kind":"mlp","layers":[{"width":8,"activation":"relu"},{"width":8,"activation":"swish"}]}}`, "layers.layers[1].activation"},
		{"width 0", `{"layers":{"kind":"mlp","layers":[{"width":0,"activation":"relu"}]}}`, "layers.layers[0].width"},
		{"no layers", `{"layers":{"kind":"mlp","layers":[]}}`, "layers.layers"},
		{"cnn", `{"layers":{"kind":"cnn","layers":[{"width":8,"activation":"relu"}]}}`, "layers.kind"},
		{"cell", `{"cell":{"nodes":2,"edges":[["conv_3x3"]]}}`, "cell architecture"},
		{"unknown field", `{"layers":{"kind":"mlp","layers":[{"width":8,"activation":"relu","dropout":0.5}]}}`, "dropout"},
		{"too large", `{"layers":{"kind":"mlp","layers":[{"width":4096,"activation":"relu"},{"width":4096,"activation":"relu"}]}}`, "weights, more than"},
		{"not JSON", `mlp[8 relu]`, "invalid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTrial(t).launch(map[string]any{"arch": c.arch}, 1, "")
			if code := r.wait(10 * time.Second); code != exitParams || !strings.Contains(r.stderr.String(), "arch: ") || !strings.Contains(r.stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want %d naming arch and %s", code, r.stderr, exitParams, c.want)
			}
		})
	}
}

// Resuming with another network fails, naming both.
func TestArchMismatchOnResumeFails(t *testing.T) {
	a, b := archJSON(t, "8 relu", "8 relu skip"), archJSON(t, "8 relu", "8 relu")
	for _, c := range []struct {
		name     string
		from, to map[string]any
		want     []string
	}{
		{"another architecture", map[string]any{"arch": a}, map[string]any{"arch": b}, []string{"mlp[8 relu, 8 relu skip]", "mlp[8 relu, 8 relu]"}},
		{"architecture to hidden", map[string]any{"arch": a}, map[string]any{"hidden": 8}, []string{"mlp[8 relu, 8 relu skip]", "8 hidden"}},
		{"hidden to architecture", map[string]any{"hidden": 8}, map[string]any{"arch": a}, []string{"8 hidden", "mlp[8 relu, 8 relu skip]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newTrial(t)
			c.from["steps"], c.to["steps"] = 10, 20
			r := d.launch(c.from, 1, "")
			if code := r.wait(10 * time.Second); code != 0 {
				t.Fatalf("exit %d: %s", code, r.stderr)
			}
			reps, _ := r.read()
			r2 := d.launch(c.to, 1, lastCheckpoint(t, reps).Checkpoint)
			code, msg := r2.wait(10*time.Second), r2.stderr.String()
			if code != exitEnv || !strings.Contains(msg, trial.EnvResumeFrom) {
				t.Errorf("exit %d, stderr %q; want %d naming %s", code, msg, exitEnv, trial.EnvResumeFrom)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not name %s", msg, w)
				}
			}
		})
	}
}

// nas.yaml validates as a NAS campaign, and every architecture and
// parameter its space draws is one the trainer builds.
func TestNASSpecIsValid(t *testing.T) {
	spec, err := gleaner.LoadAndValidate("../nas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Kind != "nas" || spec.Search.Algorithm != "evolution" || spec.Search.Evolution == nil ||
		spec.Search.Evolution.Population != 8 || spec.Search.Evolution.SampleSize != 3 ||
		spec.Objective.Metric != "val_loss" || spec.Objective.Mode != "min" {
		t.Errorf("spec: kind %q, search %+v, objective %+v", spec.Kind, spec.Search, spec.Objective)
	}
	for i, h := range sampledParams(t, spec.Space) {
		if h.Arch == "" {
			t.Fatalf("point %d of the space: no arch", i)
		}
	}
}
