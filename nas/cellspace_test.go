package nas

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func TestCellSpaceDefaults(t *testing.T) {
	s := mustCellSpace(t, hpo.CellSpace{})
	got := s.Definition()
	want := hpo.CellSpace{Nodes: 4, Ops: nb201Ops, Stacks: 2, Cells: 1, Channels: 8}
	if got.Nodes != want.Nodes || !slices.Equal(got.Ops, want.Ops) || got.Stacks != want.Stacks || got.Cells != want.Cells || got.Channels != want.Channels {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	// An architecture may leave the network's size out: the space's.
	c, err := s.Canonical(`{"cell":{"edges":[["conv_3x3"],["none","conv_1x1"],["skip_connect","none","avg_pool_3x3"]]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"cell":{"nodes":4,"edges":[["conv_3x3"],["none","conv_1x1"],["skip_connect","none","avg_pool_3x3"]],"stacks":2,"cells":1,"channels":8}}`; c != want {
		t.Errorf("Canonical = %s, want %s", c, want)
	}
}

func TestCellSpaceErrors(t *testing.T) {
	for _, tc := range []struct {
		def  hpo.CellSpace
		want string
	}{
		{hpo.CellSpace{Nodes: 9}, "cell.nodes: 9 must be in [2, 7]"},
		{hpo.CellSpace{Nodes: 1}, "cell.nodes: 1 must be in [2, 7]"},
		{hpo.CellSpace{Ops: []string{"none", "skip_connect", "conv_9x9"}}, `cell.ops[2]: "conv_9x9" is not one of none, skip_connect, conv_1x1, conv_3x3, avg_pool_3x3, max_pool_3x3`},
		{hpo.CellSpace{Ops: []string{"conv_3x3", "none", "conv_3x3"}}, `cell.ops[2]: "conv_3x3" is listed twice (also at [0])`},
		{hpo.CellSpace{Ops: []string{"none"}}, "cell.ops: only none: a space needs an operation that passes data"},
		{hpo.CellSpace{Stacks: 7}, "cell.stacks: 7 must be in [1, 6]"},
		{hpo.CellSpace{Cells: -1}, "cell.cells: -1 must be in [1, 32]"},
		{hpo.CellSpace{Channels: -8}, "cell.channels: -8 must be in [1, 4096]"},
	} {
		_, err := NewCellSpace(tc.def)
		wantErr(t, err, tc.want)
	}
}

func TestCellSpaceCanonicalErrors(t *testing.T) {
	s := mustCellSpace(t, hpo.CellSpace{})
	for _, tc := range []struct{ arch, want string }{
		{`{"cell":{"edges":[["conv_3x3"],["none","conv_1x1"],["skip_connect","none","max_pool_3x3"]]}}`,
			`cell.edges[2][2]: "max_pool_3x3" (edge 2→3) is not one of none, skip_connect, conv_1x1, conv_3x3, avg_pool_3x3`},
		{`{"cell":{"edges":[["conv_3x3"],["none","conv_1x1"]]}}`,
			"cell.edges: 2 rows for 4 nodes, want 3 (row i−1 lists the edges into node i)"},
		{`{"cell":{"edges":[["conv_3x3"],["none"],["skip_connect","none","none"]]}}`,
			"cell.edges[1]: 1 operations, want 2 (one per edge j→2, j = 0..1)"},
		{`{"cell":{"nodes":5,"edges":[]}}`, "cell.nodes: 5, but the space's is 4"},
		{`{"cell":{"stacks":3,"edges":[]}}`, "cell.stacks: 3, but the space's is 2"},
		{`{"cell":{"channels":16,"edges":[]}}`, "cell.channels: 16, but the space's is 8"},
		{`{"layers":{"kind":"mlp","layers":[]}}`, "cell: missing: this is a cell space, not a layer space"},
		{`{"cell":{},"layers":{}}`, "layers: set along with cell: an architecture is one of cell, layers"},
		{`{}`, `architecture: neither "cell" nor "layers"`},
		{`{"cell":{"edges":[],"wires":1}}`, `architecture: invalid JSON: json: unknown field "wires"`},
		{`{"cell":{"edges":[]}} {}`, "architecture: invalid JSON: data after the architecture's object"},
		{`|conv_3x3~0|`, "architecture: invalid JSON: "},
	} {
		_, err := s.Canonical(tc.arch)
		wantErrPrefix(t, err, tc.want)
	}
}

// Sampling is canonical, inside the space and determined by the seed.
func TestCellSample(t *testing.T) {
	for _, def := range []hpo.CellSpace{{}, {Nodes: 6, Ops: cellOps}, {Nodes: 2, Ops: []string{"conv_3x3"}}} {
		s := mustCellSpace(t, def)
		a, b := rand.New(rand.NewPCG(7, 1)), rand.New(rand.NewPCG(7, 1))
		seen := map[string]bool{}
		for range 500 {
			x, y := s.Sample(a), s.Sample(b)
			if x != y {
				t.Fatalf("%+v: same seed, different samples %s, %s", def, x, y)
			}
			if c, err := s.Canonical(x); err != nil || c != x {
				t.Fatalf("%+v: sample %s not canonical in its space: %s, %v", def, x, c, err)
			}
			seen[x] = true
		}
		if len(def.Ops) != 1 && len(seen) < 100 {
			t.Errorf("%+v: only %d distinct architectures in 500 samples", def, len(seen))
		}
	}
}

// Every edge's operation is uniform before canonicalisation: the
// input→output edge (never pruned, never relabelled) shows it.
func TestCellSampleUniform(t *testing.T) {
	s := mustCellSpace(t, hpo.CellSpace{})
	rng := rand.New(rand.NewPCG(3, 3))
	counts := map[string]int{}
	const n = 5000
	for range n {
		c := cellOf(t, s.Sample(rng))
		counts[c.Edges[2][0]]++
	}
	for _, op := range nb201Ops {
		if c := counts[op]; c < n/5-150 || c > n/5+150 {
			t.Errorf("edge 0→3 is %s in %d of %d samples, want about %d", op, c, n, n/5)
		}
	}
}

// A mutation is a different canonical architecture of the space, one of
// the neighbours, and determined by the seed.
func TestCellMutate(t *testing.T) {
	for _, def := range []hpo.CellSpace{{}, {Nodes: 7, Ops: cellOps}, {Nodes: 2, Ops: []string{"conv_1x1", "conv_3x3"}}} {
		s := mustCellSpace(t, def)
		rng := rand.New(rand.NewPCG(11, uint64(def.Nodes)))
		for range 300 {
			arch := s.Sample(rng)
			seed := rng.Uint64()
			m := s.Mutate(rand.New(rand.NewPCG(seed, 0)), arch)
			if again := s.Mutate(rand.New(rand.NewPCG(seed, 0)), arch); again != m {
				t.Fatalf("same seed, mutations %s and %s", m, again)
			}
			checkMutation(t, s, arch, m)
		}
	}
}

// When most single-edge changes are pruned away, Mutate falls back on the
// neighbours and still mutates.
func TestCellMutateMostlyDead(t *testing.T) {
	s := mustCellSpace(t, hpo.CellSpace{Nodes: 7})
	// only 0→6 is live: 4 of the 84 changes alter the architecture.
	arch := cell(row(no), row(no, no), row(no, no, no), row(no, no, no, no), row(no, no, no, no, no), row(c3, no, no, no, no, no)).json()
	arch, _ = s.Canonical(arch)
	rng := rand.New(rand.NewPCG(5, 5))
	for range 100 {
		checkMutation(t, s, arch, s.Mutate(rng, arch))
	}
}

func checkMutation(t *testing.T, s *CellSpace, arch, m string) {
	t.Helper()
	if m == arch {
		t.Fatalf("Mutate(%s) returned it", arch)
	}
	if c, err := s.Canonical(m); err != nil || c != m {
		t.Fatalf("Mutate(%s) = %s: not canonical in its space: %s, %v", arch, m, c, err)
	}
	if _, ok := slices.BinarySearch(s.Neighbors(arch), m); !ok {
		t.Fatalf("Mutate(%s) = %s: not a neighbour", arch, m)
	}
}

func TestCellMutateSingleArchitecture(t *testing.T) {
	s := mustCellSpace(t, hpo.CellSpace{Ops: []string{"conv_3x3"}})
	arch := s.Sample(rand.New(rand.NewPCG(1, 1)))
	if m := s.Mutate(rand.New(rand.NewPCG(1, 1)), arch); m != arch {
		t.Errorf("the space's only architecture mutated to %s", m)
	}
	if ns := s.Neighbors(arch); len(ns) != 0 {
		t.Errorf("neighbours of the only architecture: %v", ns)
	}
}

func TestCellMutateOutsideSpacePanics(t *testing.T) {
	s := mustCellSpace(t, hpo.CellSpace{})
	mustPanic(t, "Mutate of a 5-node cell", func() {
		s.Mutate(rand.New(rand.NewPCG(1, 1)), cell(row(c3), row(c3, c3), row(c3, c3, c3), row(c3, c3, c3, c3)).json())
	})
	mustPanic(t, "Neighbors of invalid JSON", func() { s.Neighbors("{") })
}

// The neighbours are exactly the canonical forms of the single-edge
// changes of the canonical form, without it, sorted: checked through the
// JSON API on random cells.
func TestCellNeighbors(t *testing.T) {
	for _, def := range []hpo.CellSpace{{}, {Nodes: 5, Ops: []string{"none", "conv_3x3", "max_pool_3x3"}}} {
		s := mustCellSpace(t, def)
		rng := rand.New(rand.NewPCG(2, 2))
		for range 200 {
			arch := s.Sample(rng)
			c := cellOf(t, arch)
			want := map[string]bool{}
			for r := range c.Edges {
				for j := range c.Edges[r] {
					for _, op := range s.def.Ops {
						d := cellOf(t, arch)
						d.Edges[r][j] = op
						m, err := s.Canonical(d.json())
						if err != nil {
							t.Fatal(err)
						}
						if m != arch {
							want[m] = true
						}
					}
				}
			}
			got := s.Neighbors(arch)
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Fatalf("Neighbors(%s) not sorted and distinct: %v", arch, got)
			}
			if len(got) != len(want) {
				t.Fatalf("Neighbors(%s): %d, want %d", arch, len(got), len(want))
			}
			for _, m := range got {
				if !want[m] {
					t.Fatalf("Neighbors(%s) has %s, not a single-edge change", arch, m)
				}
			}
		}
	}
}

// Hand-counted: a two-node cell has one edge, so its neighbours are the
// other four operations; in NAS-Bench-201's space, the all-conv_3x3 cell
// has 6 edges × 4 other operations = 24 changes, of which two coincide:
// none on 0→1 (node 1 unreachable) and none on 2→3 (node 2 a dead end)
// both leave 0→3 beside a two-conv path through one node: 23 distinct.
func TestCellNeighborsHand(t *testing.T) {
	s := mustCellSpace(t, hpo.CellSpace{Nodes: 2})
	arch, _ := s.Canonical(`{"cell":{"edges":[["conv_3x3"]]}}`)
	var got []string
	for _, n := range s.Neighbors(arch) {
		got = append(got, cellOf(t, n).Edges[0][0])
	}
	if want := []string{"avg_pool_3x3", "conv_1x1", "none", "skip_connect"}; !slices.Equal(got, want) {
		t.Errorf("neighbours' operations %v, want %v", got, want)
	}
	s = mustCellSpace(t, hpo.CellSpace{})
	arch, _ = s.Canonical(cell(row(c3), row(c3, c3), row(c3, c3, c3)).json())
	if n := len(s.Neighbors(arch)); n != 23 {
		t.Errorf("all-conv_3x3 cell: %d neighbours, want 23", n)
	}
}
