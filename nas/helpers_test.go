package nas

import (
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Short names for the operations in hand-built cells.
const (
	no   = OpNone
	skip = OpSkipConnect
	c1   = OpConv1x1
	c3   = OpConv3x3
	avg  = OpAvgPool3x3
	mx   = OpMaxPool3x3
)

// cell builds a cell of the default space's size from its rows of edges.
func cell(rows ...[]string) Cell {
	return Cell{Nodes: len(rows) + 1, Edges: rows, Stacks: DefaultStacks, Cells: DefaultCells, Channels: DefaultChannels}
}

func row(ops ...string) []string { return ops }

func (c Cell) json() string { return Architecture{Cell: &c}.JSON() }

func (l Layers) json() string { return Architecture{Layers: &l}.JSON() }

// canon returns the canonical JSON of c through the package's API.
func canon(t *testing.T, c Cell) string {
	t.Helper()
	s, err := Canonical(c.json())
	if err != nil {
		t.Fatalf("Canonical(%s): %v", c, err)
	}
	return s
}

func mustCellSpace(t testing.TB, def hpo.CellSpace) *CellSpace {
	t.Helper()
	s, err := NewCellSpace(def)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustLayerSpace(t testing.TB, def hpo.LayerSpace) *LayerSpace {
	t.Helper()
	s, err := NewLayerSpace(def)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cellOf decodes a cell's JSON, failing the test on an error.
func cellOf(t testing.TB, arch string) Cell {
	t.Helper()
	a, err := Parse(arch)
	if err != nil || a.Cell == nil {
		t.Fatalf("Parse(%s): %v", arch, err)
	}
	return *a.Cell
}

// enumerate calls f with every cell of n nodes over ops, edges counted
// row by row as digits in base len(ops).
func enumerate(n int, ops []string, f func(Cell)) {
	edges := n * (n - 1) / 2
	total := 1
	for range edges {
		total *= len(ops)
	}
	for k := range total {
		c := Cell{Nodes: n, Stacks: 1, Cells: 1, Channels: 1, Edges: make([][]string, n-1)}
		x := k
		for r := range c.Edges {
			c.Edges[r] = make([]string, r+1)
			for j := range c.Edges[r] {
				c.Edges[r][j] = ops[x%len(ops)]
				x /= len(ops)
			}
		}
		f(c)
	}
}

// wantErr checks that err is not nil and its message is want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("no error, want %q", want)
	case err.Error() != want:
		t.Errorf("error %q,\n want %q", err, want)
	}
}

// wantErrPrefix checks that err is not nil and its message starts with
// want.
func wantErrPrefix(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want one starting %q", err, want)
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}
