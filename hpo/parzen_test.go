package hpo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func TestGaussMass(t *testing.T) {
	for _, tc := range []struct{ a, b, want float64 }{
		{-1, 1, 0.6826894921370859},
		{0, 1, 0.3413447460685429},
		{-1, 0, 0.3413447460685429},
		{-40, 40, 1},
		{-math.Inf(1), math.Inf(1), 1},
		{10, 40, 7.619853024160527e-24},   // far in a tail: relative precision kept
		{-40, -10, 7.619853024160527e-24}, // the same, mirrored
		{5, 5, 0},
	} {
		got := gaussMass(tc.a, tc.b)
		if math.Abs(got-tc.want) > 1e-14*tc.want && math.Abs(got-tc.want) > 1e-300 {
			t.Errorf("gaussMass(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// Optuna's default_weights: ones up to 25, then linspace(1/n, 1, n−25)
// followed by 25 ones.
func TestDefaultWeight(t *testing.T) {
	for n := range 25 {
		for pos := range n {
			if w := defaultWeight(pos, n); w != 1 {
				t.Fatalf("defaultWeight(%d, %d) = %v, want 1", pos, n, w)
			}
		}
	}
	// default_weights(30) = [1/30, 0.275, 0.51667, 0.75833, 1, 1 × 25].
	want := []float64{1.0 / 30, 0.275, 0.5166666666666667, 0.7583333333333333, 1}
	for pos, w := range want {
		if got := defaultWeight(pos, 30); !near(got, w, 1e-15) {
			t.Errorf("defaultWeight(%d, 30) = %v, want %v", pos, got, w)
		}
	}
	if got := defaultWeight(29, 30); got != 1 {
		t.Errorf("newest of 30: %v, want 1", got)
	}
	if got := defaultWeight(0, 26); got != 1.0/26 {
		t.Errorf("defaultWeight(0, 26) = %v, want 1/26 (a ramp of one)", got)
	}
}

var defaultSet = (*TPESettings)(nil).params()

// The σ rule on a hand-solved case: centres 0.1, 0.2, 0.7, the prior's ½
// among them, 0 and 1 around: sorted 0 | 0.1 0.2 0.5 0.7 | 1.
func TestMixture1Sigmas(t *testing.T) {
	obs := []kernel{{0.1, 1}, {0.2, 1}, {0.7, 1}}
	noClip := defaultSet
	noClip.magicClip = false
	ends := noClip
	ends.endpoints = true
	clipped := defaultSet
	for _, tc := range []struct {
		name string
		set  tpeParams
		want []float64
	}{
		// Without endpoints the first and last take their inner gap.
		{"no clip", noClip, []float64{0.1, 0.3, 0.2, 1}},
		// With them, the larger gap: 0.1 for 0.1 (both), 0.3 for 0.7 (to 1).
		{"endpoints", ends, []float64{0.1, 0.3, 0.3, 1}},
		// The magic clip: at least 1/min(100, 3+2) = 0.2.
		{"magic clip", clipped, []float64{0.2, 0.3, 0.2, 1}},
	} {
		var m mixture1
		m.fit(obs, formDensity, 0, tc.set)
		if len(m.sigma) != len(tc.want) {
			t.Fatalf("%s: σ %v, want %v", tc.name, m.sigma, tc.want)
		}
		for k := range tc.want {
			if !near(m.sigma[k], tc.want[k], 1e-12) {
				t.Errorf("%s: σ %v, want %v", tc.name, m.sigma, tc.want)
				break
			}
		}
	}
	// Repeated centres with the same σ merge into one kernel of their
	// total weight.
	var m mixture1
	m.fit([]kernel{{0.3, 1}, {0.3, 1}, {0.3, 1}, {0.9, 1}}, formDensity, 0, defaultSet)
	if len(m.mu) != 4 || m.mu[1] != 0.3 || m.mu[2] != 0.9 {
		t.Errorf("merged centres %v (σ %v), want [0.3 0.3 0.9 0.5]", m.mu, m.sigma)
	}
}

// A continuous estimator integrates to 1 over [0, 1]; a discrete one's
// probabilities of the cells sum to 1; samples follow the density.
func TestMixture1IsADistribution(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, step := range []float64{0, 1.0 / 7} {
		for _, set := range []tpeParams{defaultSet, {priorWeight: 2, endpoints: true, gamma: 0.1}} {
			var obs []kernel
			for i := range 12 {
				u := math.Pow(rng.Float64(), 3) // crowded near 0
				if step > 0 {
					u = (math.Floor(u/step) + 0.5) * step
				}
				obs = append(obs, kernel{u, defaultWeight(i, 12)})
			}
			slices.SortStableFunc(obs, cmpMu)
			form := formDensity
			if step > 0 {
				form = formMass
			}
			var m mixture1
			m.fit(obs, form, step, set)
			var total, mean float64
			if step == 0 {
				const n = 200_000
				for i := range n {
					x := (float64(i) + 0.5) / n
					total += m.value(x) / n
					mean += x * m.value(x) / n
				}
			} else {
				for j := range 7 {
					x := (float64(j) + 0.5) * step
					total += m.value(x)
					mean += x * m.value(x)
				}
			}
			if !near(total, 1, 1e-6) {
				t.Errorf("step %v, %+v: total mass %v, want 1", step, set, total)
			}
			var sampled float64
			const draws = 40_000
			for range draws {
				x := m.sample(rng)
				if x < 0 || x > 1 {
					t.Fatalf("sample %v outside [0, 1]", x)
				}
				if step > 0 {
					x = (math.Min(math.Floor(x/step), 6) + 0.5) * step
				}
				sampled += x / draws
			}
			if math.Abs(sampled-mean) > 0.01 {
				t.Errorf("step %v, %+v: sample mean %v, density's mean %v", step, set, sampled, mean)
			}
		}
	}
}

// Optuna's categorical kernel, by hand: 3 values, observations 0, 0, 2
// of weight 1, prior weight 1: a = 1/4, each kernel (¼ + [v = o])/(7/4),
// the prior ⅓; mixed 1:1:1:1.
func TestChoiceProbs(t *testing.T) {
	got := choiceProbs([]float64{2, 0, 1}, 3, 3, 1, nil)
	hit, miss := (0.25+1)/1.75, 0.25/1.75
	want := []float64{
		(2*hit + miss + 1.0/3) / 4,
		(3*miss + 1.0/3) / 4,
		(hit + 2*miss + 1.0/3) / 4,
	}
	for v := range want {
		if !near(got[v], want[v], 1e-15) {
			t.Errorf("probabilities %v, want %v", got, want)
		}
	}
	if u := choiceProbs([]float64{0, 0}, 0, 0, 1, nil); u[0] != 0.5 || u[1] != 0.5 {
		t.Errorf("no observations: %v, want uniform", u)
	}
}

// The joint estimator is a distribution over the product space: a float,
// a discrete int of 4 values and a choice of 3.
func TestJointMixtureIsADistribution(t *testing.T) {
	dims := []dim{
		newDim(Param{Name: "x", Type: ParamFloat, Min: 0, Max: 1}),
		newDim(Param{Name: "n", Type: ParamInt, Min: 1, Max: 4}),
		newDim(Param{Name: "c", Type: ParamChoice, Choices: []string{"a", "b", "c"}}),
		newDim(Param{Name: "k", Type: ParamFloat, Min: 2, Max: 2}),
	}
	if dims[1].kind != dimDiscrete || dims[3].kind != dimConst {
		t.Fatalf("kinds %v %v", dims[1].kind, dims[3].kind)
	}
	cols := [][]float64{{0.1, 0.15, 0.8}, {0.125, 0.875, 0.125}, {0, 2, 2}, {0, 0, 0}}
	var m jointMixture
	m.fit(dims, cols, []float64{1, 1, 0.5}, defaultSet)
	const nx = 20_000
	var total float64
	x := make([]float64, 4)
	for i := range nx {
		x[0] = (float64(i) + 0.5) / nx
		for j := range 4 {
			x[1] = (float64(j) + 0.5) / 4
			for c := range 3 {
				x[2] = float64(c)
				total += math.Exp(m.logDensity(x)) / nx
			}
		}
	}
	if !near(total, 1, 1e-6) {
		t.Errorf("total mass %v, want 1", total)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		m.sample(rng, x)
		if x[0] < 0 || x[0] > 1 || x[1] < 0 || x[1] > 1 || x[2] != math.Trunc(x[2]) || x[2] < 0 || x[2] > 2 {
			t.Fatalf("sample %v outside the space", x)
		}
	}
}

// toUnit and fromUnit are inverse on the row values, and map ints' cells
// and log scales as documented; each numeric kind is scored in its form.
func TestDimUnit(t *testing.T) {
	for _, tc := range []struct {
		p     Param
		x, u  float64
		cells int
		form  kernelForm
	}{
		{Param{Type: ParamFloat, Min: -5, Max: 10}, 2.5, 0.5, 0, formHeight},
		{Param{Type: ParamFloat, Min: 1e-4, Max: 1, Log: true}, 1e-2, 0.5, 0, formHeight},
		{Param{Type: ParamInt, Min: 1, Max: 8}, 1, 1.0 / 16, 8, formMass},
		{Param{Type: ParamInt, Min: 1, Max: 8}, 8, 15.0 / 16, 8, formMass},
		{Param{Type: ParamInt, Min: 0, Max: 1e6}, 500_000, 0.5, 0, formDensity},                      // beyond maxCells: a real
		{Param{Type: ParamInt, Min: 1, Max: 4, Log: true}, 1, math.Ln2 / math.Log(9), 0, formHeight}, // [log ½, log 4.5]
		{Param{Type: ParamFloat, Min: -1e308, Max: 1e308}, 0, 0.5, 0, formHeight},
	} {
		d := newDim(tc.p)
		if d.cells != tc.cells {
			t.Errorf("%+v: %d cells, want %d", tc.p, d.cells, tc.cells)
		}
		if f := d.form(); f != tc.form {
			t.Errorf("%+v: kernel form %d, want %d", tc.p, f, tc.form)
		}
		if u := d.toUnit(tc.x); !near(u, tc.u, 1e-12) {
			t.Errorf("%+v: toUnit(%v) = %v, want %v", tc.p, tc.x, u, tc.u)
		}
		if x := d.fromUnit(d.toUnit(tc.x)); !near(x, tc.x, 1e-12) {
			t.Errorf("%+v: fromUnit(toUnit(%v)) = %v", tc.p, tc.x, x)
		}
	}
}
