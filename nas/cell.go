package nas

import (
	"fmt"
	"strings"
)

// Cell is one cell architecture, self-contained: the "cell" object of the
// JSON a trainer reads (docs/nas.md).
//
// The cell is a DAG over Nodes nodes: node 0 is the cell's input, node
// Nodes−1 its output, and every node i > 0 is the sum over j < i of
// Edges[i−1][j] applied to node j. The network is a 3×3 conv stem with
// Channels channels, then Stacks stages of Cells cells each, the channels
// doubling (and the resolution halving) at a residual reduction block
// between stages, then BN, ReLU, global average pooling and a linear
// classifier: NAS-Bench-201's macro skeleton, sized by these fields.
type Cell struct {
	Nodes int `json:"nodes"`
	// Edges[i−1][j] is the operation on edge j→i (one of CellOps).
	Edges    [][]string `json:"edges"`
	Stacks   int        `json:"stacks"`
	Cells    int        `json:"cells"`
	Channels int        `json:"channels"`
}

// Validate checks c against the bounds and the operations this package
// knows (CellOps), not against a space's choices; errors name the field
// ("cell.edges[1][0]: …").
func (c Cell) Validate() error { return c.check(cellOps) }

// check checks c's fields against their bounds and its operations against
// ops; errors name the field from the architecture's root ("cell.…").
func (c Cell) check(ops []string) error {
	if err := checkRange("cell.nodes", c.Nodes, MinNodes, MaxNodes); err != nil {
		return err
	}
	if len(c.Edges) != c.Nodes-1 {
		return fmt.Errorf("cell.edges: %d rows for %d nodes, want %d (row i−1 lists the edges into node i)", len(c.Edges), c.Nodes, c.Nodes-1)
	}
	for r, row := range c.Edges {
		if len(row) != r+1 {
			return fmt.Errorf("cell.edges[%d]: %d operations, want %d (one per edge j→%d, j = 0..%d)", r, len(row), r+1, r+1, r)
		}
		for j, op := range row {
			if indexOf(ops, op) < 0 {
				return fmt.Errorf("cell.edges[%d][%d]: %q (edge %d→%d) is not one of %s", r, j, op, j, r+1, oneOf(ops))
			}
		}
	}
	if err := checkRange("cell.stacks", c.Stacks, 1, MaxStacks); err != nil {
		return err
	}
	if err := checkRange("cell.cells", c.Cells, 1, MaxCells); err != nil {
		return err
	}
	return checkRange("cell.channels", c.Channels, 1, MaxChannels)
}

// String returns the cell in NAS-Bench-201's notation, one |op~j| per edge
// j→i, the nodes separated by "+": |conv_3x3~0|+|skip_connect~0|none~1|+|…|.
// The network's size (stacks, cells, channels) is not part of it.
func (c Cell) String() string {
	var b strings.Builder
	for r, row := range c.Edges {
		if r > 0 {
			b.WriteByte('+')
		}
		b.WriteByte('|')
		for j, op := range row {
			fmt.Fprintf(&b, "%s~%d|", op, j)
		}
	}
	return b.String()
}

// matrix returns c's edges as canonical operation indices: m[i][j] is the
// operation on edge j→i (j < i); m[0] is empty. c must be valid.
func (c Cell) matrix() [][]int {
	m := make([][]int, c.Nodes)
	for r, row := range c.Edges {
		m[r+1] = make([]int, len(row))
		for j, op := range row {
			m[r+1][j] = opIndex(op)
		}
	}
	return m
}

// Canonical returns the canonical form of c, which must be valid
// (Validate): the one representative of the architectures isomorphic to
// c.
//
//  1. Prune. An edge contributes to the output only if it lies on a path
//     from the input (node 0) to the output (node n−1): its source is
//     reachable from the input and its target reaches the output, along
//     edges that are not none. Every other edge becomes none. When the
//     output is unreachable from the input, every edge is none: all such
//     cells are one architecture, "disconnected".
//  2. Relabel. The intermediate nodes 1..n−2 are renumbered by every
//     permutation that keeps each remaining edge going from a lower to a
//     higher node (the input and output stay put). Each relabelling is
//     encoded as its operations' indices in CellOps, edge by edge in the
//     order of Edges (row by row); the lexicographically smallest wins.
//
// So two cells have one canonical form exactly when their pruned graphs
// are isomorphic as edge-labelled DAGs with fixed input and output. No
// other equivalence is applied (e.g. skip_connect composed with an
// operation is not identified with that operation).
func (c Cell) Canonical() Cell {
	m := c.matrix()
	prune(m)
	best := relabel(m)
	out := c
	out.Edges = make([][]string, c.Nodes-1)
	for i := 1; i < c.Nodes; i++ {
		out.Edges[i-1] = make([]string, i)
		for j := range i {
			out.Edges[i-1][j] = cellOps[best[i][j]]
		}
	}
	return out
}

// prune sets to none (0) every edge of m off all input→output paths.
func prune(m [][]int) {
	n := len(m)
	from := make([]bool, n) // reachable from node 0
	from[0] = true
	for i := 1; i < n; i++ {
		for j := range i {
			if m[i][j] != 0 && from[j] {
				from[i] = true
				break
			}
		}
	}
	to := make([]bool, n) // reaches node n−1
	to[n-1] = true
	for j := n - 2; j >= 0; j-- {
		for i := j + 1; i < n; i++ {
			if m[i][j] != 0 && to[i] {
				to[j] = true
				break
			}
		}
	}
	for i := 1; i < n; i++ {
		for j := range i {
			if !from[j] || !to[i] {
				m[i][j] = 0
			}
		}
	}
}

// relabel returns the lexicographically smallest relabelling of m over the
// permutations of its intermediate nodes that keep every edge j→i (not
// none) with j < i.
func relabel(m [][]int) [][]int {
	n := len(m)
	perm := make([]int, n) // perm[old] = new
	for i := range perm {
		perm[i] = i
	}
	var best [][]int
	cand := make([][]int, n)
	for i := range cand {
		cand[i] = make([]int, i)
	}
	var try func(k int)
	try = func(k int) {
		if k < n-2 {
			for s := k; s < n-1; s++ {
				perm[k], perm[s] = perm[s], perm[k]
				try(k + 1)
				perm[k], perm[s] = perm[s], perm[k]
			}
			return
		}
		for i := 1; i < n; i++ {
			for j := range i {
				if m[i][j] == 0 {
					continue
				}
				if perm[j] > perm[i] {
					return
				}
			}
		}
		for i := range cand {
			clear(cand[i])
		}
		for i := 1; i < n; i++ {
			for j := range i {
				if m[i][j] != 0 {
					cand[perm[i]][perm[j]] = m[i][j]
				}
			}
		}
		if best == nil || less(cand, best) {
			best = make([][]int, n)
			for i := range cand {
				best[i] = append([]int(nil), cand[i]...)
			}
		}
	}
	try(1)
	return best
}

// less compares two edge matrices row by row.
func less(a, b [][]int) bool {
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return a[i][j] < b[i][j]
			}
		}
	}
	return false
}
