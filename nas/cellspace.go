package nas

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Defaults of a cell space, sized to train on a CPU in seconds on 8×8
// digit images (NAS-Bench-201 itself uses 3 stacks of 5 cells from 16
// channels on 32×32 images).
const (
	DefaultNodes    = 4
	DefaultStacks   = 2
	DefaultCells    = 1
	DefaultChannels = 8
)

// mutateTries bounds the random edge changes Mutate tries before it picks
// among the neighbours: a change can be pruned away or be an isomorphism.
const mutateTries = 32

// CellSpace is a cell space with its defaults filled: every cell has its
// Nodes, Stacks, Cells and Channels and operations from its Ops.
type CellSpace struct {
	def hpo.CellSpace
}

var _ hpo.Architectures = (*CellSpace)(nil)

// NewCellSpace checks def, fills its zero fields with the defaults and
// returns the space; errors name the field ("cell.nodes: 9 must be in
// [2, 7]").
func NewCellSpace(def hpo.CellSpace) (*CellSpace, error) {
	if def.Nodes == 0 {
		def.Nodes = DefaultNodes
	}
	if len(def.Ops) == 0 {
		def.Ops = nb201Ops
	}
	def.Ops = slices.Clone(def.Ops)
	if def.Stacks == 0 {
		def.Stacks = DefaultStacks
	}
	if def.Cells == 0 {
		def.Cells = DefaultCells
	}
	if def.Channels == 0 {
		def.Channels = DefaultChannels
	}
	if err := checkRange("cell.nodes", def.Nodes, MinNodes, MaxNodes); err != nil {
		return nil, err
	}
	if err := checkNames("cell.ops", def.Ops, cellOps); err != nil {
		return nil, err
	}
	if len(def.Ops) == 1 && def.Ops[0] == OpNone {
		return nil, fmt.Errorf("cell.ops: only %s: a space needs an operation that passes data", OpNone)
	}
	if err := checkRange("cell.stacks", def.Stacks, 1, MaxStacks); err != nil {
		return nil, err
	}
	if err := checkRange("cell.cells", def.Cells, 1, MaxCells); err != nil {
		return nil, err
	}
	if err := checkRange("cell.channels", def.Channels, 1, MaxChannels); err != nil {
		return nil, err
	}
	return &CellSpace{def: def}, nil
}

// Definition returns the space's definition, defaults filled.
func (s *CellSpace) Definition() hpo.CellSpace {
	d := s.def
	d.Ops = slices.Clone(d.Ops)
	return d
}

// Parse decodes arch, checks that it is in the space and returns its
// canonical form. Fields the architecture leaves out (nodes, stacks,
// cells, channels) are the space's; fields it sets must equal them.
func (s *CellSpace) Parse(arch string) (Cell, error) {
	a, err := Parse(arch)
	if err != nil {
		return Cell{}, err
	}
	if a.Cell == nil {
		return Cell{}, fmt.Errorf("cell: missing: this is a cell space, not a layer space")
	}
	c := *a.Cell
	for _, f := range []struct {
		name  string
		v     *int
		space int
	}{
		{"cell.nodes", &c.Nodes, s.def.Nodes},
		{"cell.stacks", &c.Stacks, s.def.Stacks},
		{"cell.cells", &c.Cells, s.def.Cells},
		{"cell.channels", &c.Channels, s.def.Channels},
	} {
		if *f.v == 0 {
			*f.v = f.space
		} else if *f.v != f.space {
			return Cell{}, fmt.Errorf("%s: %d, but the space's is %d", f.name, *f.v, f.space)
		}
	}
	if err := c.check(s.def.Ops); err != nil {
		return Cell{}, err
	}
	return c.Canonical(), nil
}

// Canonical checks arch and returns its canonical JSON (Cell.Canonical).
func (s *CellSpace) Canonical(arch string) (string, error) {
	c, err := s.Parse(arch)
	if err != nil {
		return "", err
	}
	return Architecture{Cell: &c}.JSON(), nil
}

// Sample draws every edge's operation uniformly from the space's and
// returns the cell's canonical form. (So the canonical architectures are
// not equally likely: one with many isomorphic or pruned forms is drawn
// more often, as in NAS-Bench-201's random search.)
func (s *CellSpace) Sample(rng *rand.Rand) string {
	c := Cell{Nodes: s.def.Nodes, Stacks: s.def.Stacks, Cells: s.def.Cells, Channels: s.def.Channels}
	c.Edges = make([][]string, c.Nodes-1)
	for r := range c.Edges {
		c.Edges[r] = make([]string, r+1)
		for j := range c.Edges[r] {
			c.Edges[r][j] = s.def.Ops[rng.IntN(len(s.def.Ops))]
		}
	}
	c = c.Canonical()
	return Architecture{Cell: &c}.JSON()
}

// Mutate applies Real et al.'s op mutation ("Regularized Evolution for
// Image Classifier Architecture Search", AAAI 2019) to arch's canonical
// form: a uniformly chosen edge gets a uniformly chosen different
// operation. A change that canonicalises back to arch (pruned, or an
// isomorphism) is redrawn, up to mutateTries times; then one of arch's
// neighbours is chosen uniformly. It returns arch only when the space
// has a single operation. arch must be in the space (Canonical accepts
// it): anything else is a caller's bug, and Mutate panics.
func (s *CellSpace) Mutate(rng *rand.Rand, arch string) string {
	c := s.mustParse(arch)
	self := Architecture{Cell: &c}.JSON()
	if len(s.def.Ops) < 2 {
		return self
	}
	edges := c.Nodes * (c.Nodes - 1) / 2
	for range mutateTries {
		e := rng.IntN(edges)
		r, j := edgeAt(e)
		cur := indexOf(s.def.Ops, c.Edges[r][j])
		k := rng.IntN(len(s.def.Ops) - 1)
		if k >= cur {
			k++
		}
		if m := s.withEdge(c, r, j, s.def.Ops[k]); m != self {
			return m
		}
	}
	ns := s.neighbors(c, self)
	return ns[rng.IntN(len(ns))]
}

// Neighbors lists every canonical cell one edge's operation away from
// arch's canonical form, without arch itself, deduplicated and sorted.
// arch must be in the space (see Mutate).
func (s *CellSpace) Neighbors(arch string) []string {
	c := s.mustParse(arch)
	return s.neighbors(c, Architecture{Cell: &c}.JSON())
}

func (s *CellSpace) neighbors(c Cell, self string) []string {
	var out []string
	for r, row := range c.Edges {
		for j, cur := range row {
			for _, op := range s.def.Ops {
				if op == cur {
					continue
				}
				if m := s.withEdge(c, r, j, op); m != self {
					out = append(out, m)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// withEdge returns the canonical JSON of c with edge (r, j) set to op.
func (s *CellSpace) withEdge(c Cell, r, j int, op string) string {
	m := c
	m.Edges = make([][]string, len(c.Edges))
	for i, row := range c.Edges {
		m.Edges[i] = slices.Clone(row)
	}
	m.Edges[r][j] = op
	m = m.Canonical()
	return Architecture{Cell: &m}.JSON()
}

func (s *CellSpace) mustParse(arch string) Cell {
	c, err := s.Parse(arch)
	if err != nil {
		panic(fmt.Sprintf("nas: architecture outside its cell space: %v", err))
	}
	return c
}

// edgeAt returns the row and column in Cell.Edges of the e-th edge, edges
// counted row by row.
func edgeAt(e int) (r, j int) {
	for e > r {
		e -= r + 1
		r++
	}
	return r, e
}
