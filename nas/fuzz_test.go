package nas

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// FuzzCanonical feeds user-written architecture JSON (the seed corpus in
// testdata/fuzz/FuzzCanonical: valid, invalid and edge cases) to several
// spaces and to the package's Canonical. Whatever one accepts has a
// canonical form that is a fixed point, in the space and canonical
// package-wide, with a finite cost, and neighbours and a mutation in the
// space that differ from it; what the package's Canonical accepts hashes
// like its canonical form.
func FuzzCanonical(f *testing.F) {
	spaces := []hpo.Architectures{
		mustCellSpace(f, hpo.CellSpace{}),
		mustCellSpace(f, hpo.CellSpace{Nodes: 6, Ops: cellOps, Stacks: 1, Channels: 4}),
		mustLayerSpace(f, hpo.LayerSpace{}),
		mustLayerSpace(f, hpo.LayerSpace{Kind: KindCNN, MaxDepth: 3, Widths: []int{4, 8}, Activations: activations, Skip: true}),
	}
	f.Fuzz(func(t *testing.T, arch string) {
		if c, err := Canonical(arch); err == nil {
			if Hash(arch) != Hash(c) {
				t.Fatalf("Hash(%s) = %s, its canonical form's %s", arch, Hash(arch), Hash(c))
			}
			checkCanonical(t, arch, c)
		}
		for i, s := range spaces {
			c, err := s.Canonical(arch)
			if err != nil {
				continue
			}
			if again, err := s.Canonical(c); err != nil || again != c {
				t.Fatalf("space %d: Canonical(%s) = %s, then %s, %v", i, arch, c, again, err)
			}
			if g, err := Canonical(c); err != nil || g != c {
				t.Fatalf("space %d: %s is canonical in the space, not package-wide: %s, %v", i, c, g, err)
			}
			checkCanonical(t, arch, c)
			ns := s.Neighbors(c)
			if !slices.IsSorted(ns) || slices.Contains(ns, c) {
				t.Fatalf("space %d: Neighbors(%s) unsorted or holding it", i, c)
			}
			m := s.Mutate(rand.New(rand.NewPCG(uint64(len(arch)), 1)), c)
			if _, ok := slices.BinarySearch(ns, m); !ok && !(len(ns) == 0 && m == c) {
				t.Fatalf("space %d: Mutate(%s) = %s, not a neighbour", i, c, m)
			}
		}
	})
}

// checkCanonical checks c, a canonical form of arch: the package's
// Canonical keeps it, and it has a name and a cost.
func checkCanonical(t *testing.T, arch, c string) {
	t.Helper()
	if again, err := Canonical(c); err != nil || again != c {
		t.Fatalf("Canonical(%s) = %s, then %s, %v", arch, c, again, err)
	}
	a, err := Parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if a.String() == "" {
		t.Fatalf("%s: empty String", c)
	}
	flops, params := a.Cost(Shape{Channels: 1, Height: 8, Width: 8}, 10)
	if !(flops > 0 && params > 0) || math.IsInf(flops, 0) || math.IsInf(params, 0) {
		t.Fatalf("%s: cost %v FLOPs, %v params", c, flops, params)
	}
}

// FuzzParseThroughputModel feeds model files (what --throughput-model
// reads) to ParseThroughputModel: whatever it accepts predicts a finite,
// positive throughput curve for a cell or fails with an error, never a
// panic or a NaN.
func FuzzParseThroughputModel(f *testing.F) {
	m, err := FitThroughput(synthSamples(f, rand.New(rand.NewPCG(5, 5)), synthCoef, 60, 0.02))
	if err != nil {
		f.Fatal(err)
	}
	good, err := json.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(good))
	f.Add(strings.Replace(string(good), `"coef":[`, `"coef":[-1,`, 1))
	f.Add(`{"features":[],"coef":[]}`)
	f.Add(`{}`)
	f.Add(`[`)
	arch := `{"cell":{"nodes":4,"edges":[["conv_3x3"],["skip_connect","conv_1x1"],["none","conv_3x3","skip_connect"]]}}`
	f.Fuzz(func(t *testing.T, raw string) {
		m, err := ParseThroughputModel([]byte(raw))
		if err != nil {
			return
		}
		c, err := m.Curve(arch, 4)
		if err != nil {
			return
		}
		for n, x := range c {
			if !(x > 0) || math.IsInf(x, 0) {
				t.Fatalf("%s: throughput %v on %d nodes", raw, x, n+1)
			}
		}
	})
}

// FuzzReadBenchmark feeds tables to ReadBenchmark: every architecture it
// returns has a finite positive rate and a canonical hash.
func FuzzReadBenchmark(f *testing.F) {
	const head = BenchmarkHeader + "\n"
	row := "c10d12431913,|conv_1x1~0|+|conv_1x1~0|conv_1x1~1|+|conv_1x1~0|conv_1x1~1|conv_1x1~2|,6146,111264,"
	f.Add("# comment\n" + head + row + "1,1408,2.1,0.2,0.15\n" + row + "2,2816,1.1,0.7,0.28\n")
	f.Add(head + row + "1,1408,2.1,0.2,0.15\n" + row + "2,1408,1.1,0.7,0.28\n")
	f.Add(head + row + "1,1408,2.1,0.2,0.15\n")
	f.Add(head + "c10d12431913,|none~0|+|none~0|none~1|+|none~0|none~1|none~2|,1,1,1,1,1,1,1\n")
	f.Add("hash,arch\n")
	f.Fuzz(func(t *testing.T, table string) {
		archs, err := ReadBenchmark(strings.NewReader(table), DefaultStacks, DefaultCells, DefaultChannels)
		if err != nil {
			return
		}
		for _, a := range archs {
			if !(a.Rate > 0) || math.IsInf(a.Rate, 0) || Hash(a.Arch) != a.Hash {
				t.Fatalf("%+v from\n%s", a, table)
			}
		}
	})
}
