package nas

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func mlp(ys ...Layer) Layers { return Layers{Kind: KindMLP, Layers: ys} }

func ly(w int, act string, skip bool) Layer { return Layer{Width: w, Activation: act, Skip: skip} }

func TestLayerSpaceDefaults(t *testing.T) {
	got := mustLayerSpace(t, hpo.LayerSpace{}).Definition()
	if got.Kind != "mlp" || got.MinDepth != 1 || got.MaxDepth != 4 || !slices.Equal(got.Widths, []int{16, 32, 64, 128}) ||
		!slices.Equal(got.Activations, []string{"relu", "tanh", "gelu"}) || got.Skip {
		t.Errorf("defaults %+v", got)
	}
	// max_depth left out follows a larger min_depth.
	if got := mustLayerSpace(t, hpo.LayerSpace{MinDepth: 6}).Definition(); got.MaxDepth != 6 {
		t.Errorf("min_depth 6: max_depth %d, want 6", got.MaxDepth)
	}
}

func TestLayerSpaceErrors(t *testing.T) {
	for _, tc := range []struct {
		def  hpo.LayerSpace
		want string
	}{
		{hpo.LayerSpace{Kind: "rnn"}, `layers.kind: "rnn" is not one of mlp, cnn`},
		{hpo.LayerSpace{MinDepth: -1}, "layers.min_depth: -1 must be in [1, 64]"},
		{hpo.LayerSpace{MaxDepth: 65}, "layers.max_depth: 65 must be in [1, 64]"},
		{hpo.LayerSpace{MinDepth: 3, MaxDepth: 2}, "layers.max_depth: 2 < min_depth 3"},
		{hpo.LayerSpace{Widths: []int{16, 0}}, "layers.widths[1]: 0 must be in [1, 65536]"},
		{hpo.LayerSpace{Widths: []int{16, 32, 16}}, "layers.widths[2]: 16 is listed twice (also at [0])"},
		{hpo.LayerSpace{Activations: []string{"relu", "swish"}}, `layers.activations[1]: "swish" is not one of relu, tanh, gelu, sigmoid, silu, elu`},
	} {
		_, err := NewLayerSpace(tc.def)
		wantErr(t, err, tc.want)
	}
}

func TestLayerSpaceCanonical(t *testing.T) {
	s := mustLayerSpace(t, hpo.LayerSpace{Skip: true})
	for _, tc := range []struct{ arch, want string }{
		{ // skip cleared on the first layer and where the width changes
			`{"layers":{"layers":[{"width":64,"activation":"relu","skip":true},{"width":64,"activation":"gelu","skip":true},{"width":32,"activation":"tanh","skip":true}]}}`,
			`{"layers":{"kind":"mlp","layers":[{"width":64,"activation":"relu","skip":false},{"width":64,"activation":"gelu","skip":true},{"width":32,"activation":"tanh","skip":false}]}}`,
		},
		{
			`{"layers":{"kind":"mlp","layers":[{"width":16,"activation":"tanh"}]}}`,
			`{"layers":{"kind":"mlp","layers":[{"width":16,"activation":"tanh","skip":false}]}}`,
		},
	} {
		got, err := s.Canonical(tc.arch)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%s)\n got %s, %v\nwant %s", tc.arch, got, err, tc.want)
		}
	}
	if got := mlp(ly(64, "relu", false), ly(64, "gelu", true)).String(); got != "mlp[64 relu, 64 gelu skip]" {
		t.Errorf("String() = %s", got)
	}
}

func TestLayerSpaceCanonicalErrors(t *testing.T) {
	s := mustLayerSpace(t, hpo.LayerSpace{})
	for _, tc := range []struct{ arch, want string }{
		{`{"layers":{"kind":"cnn","layers":[{"width":16,"activation":"relu"}]}}`, `layers.kind: "cnn", but the space's is "mlp"`},
		{`{"layers":{"layers":[]}}`, "layers.layers: 0 layers, the space has 1 to 4"},
		{`{"layers":{"layers":[{"width":16,"activation":"relu"},{"width":48,"activation":"relu"}]}}`, "layers.layers[1].width: 48 is not one of 16, 32, 64, 128"},
		{`{"layers":{"layers":[{"width":16,"activation":"elu"}]}}`, `layers.layers[0].activation: "elu" is not one of relu, tanh, gelu`},
		{`{"layers":{"layers":[{"width":16,"activation":"relu"},{"width":16,"activation":"relu","skip":true}]}}`, "layers.layers[1].skip: the space has no skip connections (skip: true allows them)"},
		{`{"layers":{"layers":[{"width":16,"activation":"relu","dropout":0.1}]}}`, `architecture: invalid JSON: json: unknown field "dropout"`},
		{`{"cell":{"edges":[]}}`, "layers: missing: this is a layer space, not a cell space"},
	} {
		_, err := s.Canonical(tc.arch)
		wantErr(t, err, tc.want)
	}
}

// Sampling: canonical, in the space, determined by the seed, depth uniform.
func TestLayerSample(t *testing.T) {
	s := mustLayerSpace(t, hpo.LayerSpace{Widths: []int{8, 16}, Skip: true})
	a, b := rand.New(rand.NewPCG(4, 4)), rand.New(rand.NewPCG(4, 4))
	depths := map[int]int{}
	skips := 0
	const n = 4000
	for range n {
		x, y := s.Sample(a), s.Sample(b)
		if x != y {
			t.Fatalf("same seed, samples %s and %s", x, y)
		}
		if c, err := s.Canonical(x); err != nil || c != x {
			t.Fatalf("sample %s not canonical: %s, %v", x, c, err)
		}
		l, _ := s.Parse(x)
		depths[len(l.Layers)]++
		for _, y := range l.Layers {
			if y.Skip {
				skips++
			}
		}
	}
	for d := 1; d <= 4; d++ {
		if c := depths[d]; c < n/4-150 || c > n/4+150 {
			t.Errorf("depth %d in %d of %d samples, want about %d", d, c, n, n/4)
		}
	}
	if skips == 0 {
		t.Error("no skip sampled")
	}
}

// Hand-counted neighbours of one 64-relu layer in the default space:
// 3 other widths + 2 other activations + 2 positions × 12 new layers,
// less the one duplicate (64 relu inserted before or after) = 28; no
// removal below min_depth 1.
func TestLayerNeighborsHand(t *testing.T) {
	s := mustLayerSpace(t, hpo.LayerSpace{})
	arch := mlp(ly(64, "relu", false)).json()
	if n := len(s.Neighbors(arch)); n != 28 {
		t.Errorf("%d neighbours, want 28", n)
	}
	// A single-architecture space has no neighbours; Mutate returns arch.
	one := mustLayerSpace(t, hpo.LayerSpace{MaxDepth: 1, Widths: []int{8}, Activations: []string{"relu"}})
	arch = mlp(ly(8, "relu", false)).json()
	if ns := one.Neighbors(arch); len(ns) != 0 {
		t.Errorf("neighbours %v, want none", ns)
	}
	if m := one.Mutate(rand.New(rand.NewPCG(1, 1)), arch); m != arch {
		t.Errorf("Mutate = %s, want %s", m, arch)
	}
}

// Neighbours are distinct, sorted, canonical, in the space and one edit
// away (depth differs by at most one); mutations are neighbours and
// determined by the seed.
func TestLayerNeighborsAndMutate(t *testing.T) {
	for _, def := range []hpo.LayerSpace{{}, {Kind: "cnn", MinDepth: 2, MaxDepth: 3, Widths: []int{4, 8}, Skip: true}} {
		s := mustLayerSpace(t, def)
		rng := rand.New(rand.NewPCG(9, 9))
		for range 200 {
			arch := s.Sample(rng)
			l, _ := s.Parse(arch)
			ns := s.Neighbors(arch)
			if !slices.IsSorted(ns) || len(slices.Compact(slices.Clone(ns))) != len(ns) {
				t.Fatalf("Neighbors(%s) not sorted and distinct", arch)
			}
			for _, n := range ns {
				m, err := s.Parse(n)
				if err != nil || m.json() != n || n == arch {
					t.Fatalf("neighbour %s of %s: %v", n, arch, err)
				}
				if d := len(m.Layers) - len(l.Layers); d < -1 || d > 1 {
					t.Fatalf("neighbour %s of %s: depth changed by %d", n, arch, d)
				}
			}
			seed := rng.Uint64()
			m := s.Mutate(rand.New(rand.NewPCG(seed, 1)), arch)
			if again := s.Mutate(rand.New(rand.NewPCG(seed, 1)), arch); again != m {
				t.Fatalf("same seed, mutations %s and %s", m, again)
			}
			if _, ok := slices.BinarySearch(ns, m); !ok {
				t.Fatalf("Mutate(%s) = %s: not a neighbour", arch, m)
			}
		}
	}
}

// A skip toggle is a neighbour exactly where it can apply.
func TestLayerNeighborsSkip(t *testing.T) {
	s := mustLayerSpace(t, hpo.LayerSpace{Skip: true, MinDepth: 2, MaxDepth: 2})
	arch := mlp(ly(32, "relu", false), ly(32, "relu", false)).json()
	want := mlp(ly(32, "relu", false), ly(32, "relu", true)).json()
	if _, ok := slices.BinarySearch(s.Neighbors(arch), want); !ok {
		t.Errorf("%s is not a neighbour of %s", want, arch)
	}
	// Widening the second layer drops its skip.
	arch = want
	want = mlp(ly(32, "relu", false), ly(64, "relu", false)).json()
	if _, ok := slices.BinarySearch(s.Neighbors(arch), want); !ok {
		t.Errorf("%s is not a neighbour of %s", want, arch)
	}
}
