package allocator

import "fmt"

// solvePaper solves the node-level MILP of BFTrainer (Liu et al., "BFTrainer:
// Low-Cost Training of Neural Networks on Unfillable Supercomputer Nodes",
// arXiv 2106.12091, §3), as its authors implemented it. It is slow — one
// binary per (trial, node) — and is kept as the reference for correctness.
//
// Inputs: idle nodes N (one type); for each trial j the nodes it holds now
// that are still idle C_j (c_jn = 1 iff n ∈ C_j), allowed counts {0} ∪
// [min_j, max_j] with max_j capped at |N|, throughput curve O_j, rescale
// costs R_up_j and R_dw_j, weight w_j, and its current rate
// r_j = O_j(|C_j|) when |C_j| ≥ min_j, else 0 (starting costs nothing).
// Variables and constraints:
//
//	x_jn ∈ {0,1}                  node n goes to trial j
//	n_j = Σ_n x_jn                node count
//	Σ_j x_jn ≤ 1                  each node to at most one trial
//	min_j·a_j ≤ n_j ≤ max_j·a_j   a_j ∈ {0,1}: n_j ∈ {0} ∪ [min_j, max_j]
//	x_jn ≥ g_j  (n ∈ C_j)         g_j ∈ {0,1}: no migration (see below)
//	x_jn ≤ g_j  (n ∉ C_j)
//	n_j = Σ_i λ_ji·k_i            breakpoints (k_i, O_j(k_i)), k_0 = 0,
//	S_j = Σ_i λ_ji·O_j(k_i)       λ_ji ≥ 0, Σ_i λ_ji = 1
//	λ_ji ≤ s_ji + s_j(i+1)        s_ji ∈ {0,1} picks segment [k_(i−1), k_i],
//	Σ_i s_ji = 1                  so at most two adjacent λ are non-zero
//	n_j − |C_j| ≤ M·u_j           u_j ∈ {0,1}: the trial grows
//	|C_j| − n_j ≤ M·d_j           d_j ∈ {0,1}: the trial shrinks
//
//	maximise Σ_j w_j·( T_fwd·S_j − (u_j·R_up_j + d_j·R_dw_j)·r_j )
//
// The objective penalises u_j and d_j, so at an optimum they are 1 only
// when forced (or when their penalty is 0): the optimum equals
// in.objective of the decoded counts. S_j is Curve.At(n_j)
// exactly: n_j is integral and the λ sit on one segment, between two
// adjacent breakpoints. The curve need not be concave (measured curves are
// noisy), which is why the segment binaries are needed at all.
//
// Only counts are returned; mapNodes picks the node ids (keeping
// longest-idle nodes), which any optimal x can be permuted into.
func solvePaper(in *instance, s Settings) (decision, Status, error) {
	d, status, _, err := solvePaperMILP(in, s)
	return d, status, err
}

// paperTrial holds the columns of one trial in the paper MILP.
type paperTrial struct {
	x    []int // x[n], one per node of the pool
	a, g int   // g is -1 when the trial holds no node
	u, d int
}

// solvePaperMILP is solvePaper that also returns the MILP's own objective
// (plus the constant value of trials fixed at 0), for tests.
func solvePaperMILP(in *instance, s Settings) (decision, Status, float64, error) {
	d := newDecision(len(in.trials))
	switch len(in.types) {
	case 0:
		return d, StatusOptimal, in.objective(d), nil
	case 1:
	default:
		return d, "", 0, fmt.Errorf("%w: paper formulation needs a single node type; the pool has %d: %q",
			ErrUnsupported, len(in.types), in.types)
	}
	nodes := len(in.p.Nodes)
	m := &milp{}
	cols := make([]*paperTrial, len(in.trials))
	constant := 0.0
	for j := range in.trials {
		ti := &in.trials[j]
		c := ti.choice(0)
		if c == nil {
			constant += ti.zero // no allowed count: fixed at 0
			continue
		}
		cols[j] = addPaperTrial(m, &in.p.Trials[j], ti, c, nodes, in.p.Lookahead.Seconds())
	}
	// Each node to at most one trial.
	for n := range nodes {
		var row []int
		for _, pt := range cols {
			if pt != nil {
				row = append(row, pt.x[n])
			}
		}
		if len(row) > 1 {
			m.addRow(-inf, row, unitCoefs(len(row)), 1)
		}
	}
	sol, err := m.solve(s)
	if err != nil {
		return d, "", 0, fmt.Errorf("paper formulation: %w", err)
	}
	for j, pt := range cols {
		if pt == nil {
			continue
		}
		k := 0
		for _, col := range pt.x {
			if on(sol.x, col) {
				k++
			}
		}
		if c := in.trials[j].choice(0); k != 0 && (k < c.min || k > c.max()) {
			return d, "", 0, fmt.Errorf("%w: paper formulation: trial %q got %d nodes, outside {0} ∪ [%d, %d]",
				ErrSolver, in.p.Trials[j].ID, k, c.min, c.max())
		}
		d.counts[j] = k
	}
	status := StatusOptimal
	if !sol.optimal {
		status = StatusFeasible
	}
	return d, status, sol.objective + constant, nil
}

// addPaperTrial adds trial j's columns and rows to m.
func addPaperTrial(m *milp, t *Trial, ti *trialInstance, c *typeChoice, nodes int, lookahead float64) *paperTrial {
	w, hi, cur := c.weight, c.max(), ti.cur
	// The rate the trial runs at now, as prepareTrial computes it.
	rate := 0.0
	if cur >= t.MinNodes {
		rate = c.curve.At(cur)
	}
	pt := &paperTrial{x: make([]int, nodes), g: -1}
	for n := range nodes {
		pt.x[n] = m.addBinary(0)
	}
	// n_j ∈ {0} ∪ [min_j, max_j]: n_j − min_j·a_j ≥ 0 and n_j − max_j·a_j ≤ 0.
	pt.a = m.addBinary(0)
	m.addRow(0, joined(pt.x, pt.a), joined(unitCoefs(nodes), -float64(c.min)), inf)
	m.addRow(-inf, joined(pt.x, pt.a), joined(unitCoefs(nodes), -float64(hi)), 0)

	// No migration. With c_jn constant, z_jn = x_jn XOR c_jn is x_jn where
	// c_jn = 0 (a node gained) and 1 − x_jn where c_jn = 1 (a node lost).
	// The grow indicator g_j allows only gains (g_j = 1: z_jn ≤ 0 on C_j,
	// i.e. x_jn ≥ g_j) or only losses (g_j = 0: z_jn ≤ 0 off C_j, i.e.
	// x_jn ≤ g_j), never both: a trial never swaps a node for another.
	// A trial holding nothing can only gain, so it needs no g_j.
	if cur > 0 {
		pt.g = m.addBinary(0)
		held := make([]bool, nodes)
		for _, n := range ti.curNodes {
			held[n] = true
		}
		for n, x := range pt.x {
			if held[n] {
				m.addRow(0, []int{x, pt.g}, []float64{1, -1}, inf)
			} else {
				m.addRow(-inf, []int{x, pt.g}, []float64{1, -1}, 0)
			}
		}
	}

	// S_j by interpolation over the breakpoints (0, 0), the curve's points
	// up to max_j and the first point at or beyond it.
	ks, os := []float64{0}, []float64{0}
	for _, p := range c.curve {
		ks, os = append(ks, float64(p.Nodes)), append(os, p.Throughput)
		if p.Nodes >= hi {
			break
		}
	}
	lambda := make([]int, len(ks))
	for i := range ks {
		lambda[i] = m.addCol(0, 0, 1, false)
	}
	seg := make([]int, len(ks)-1) // seg[i] is the interval [k_i, k_(i+1)]
	for i := range seg {
		seg[i] = m.addBinary(0)
	}
	m.addRow(1, lambda, unitCoefs(len(lambda)), 1)
	m.addRow(1, seg, unitCoefs(len(seg)), 1)
	for i, l := range lambda {
		row, coef := []int{l}, []float64{1}
		if i > 0 {
			row, coef = append(row, seg[i-1]), append(coef, -1)
		}
		if i < len(seg) {
			row, coef = append(row, seg[i]), append(coef, -1)
		}
		m.addRow(-inf, row, coef, 0) // λ_i ≤ s_(i−1) + s_i
	}
	// n_j = Σ λ_i·k_i.
	m.addRow(0, joined(pt.x, lambda...), joined(unitCoefs(nodes), negated(ks)...), 0)
	// S_j = Σ λ_i·O_i carries the throughput part of the objective.
	// S_j is carried in units of the curve's peak, so the row's
	// coefficients are O(1): measured samples/s reach 1e5 and more, and
	// HiGHS's tolerances then let it prove a worse solution "optimal".
	peak := 0.0
	for _, o := range os {
		peak = max(peak, o)
	}
	if peak == 0 {
		peak = 1
	}
	unit := make([]float64, len(os))
	for i, o := range os {
		unit[i] = o / peak
	}
	sCol := m.addCol(w*lookahead*peak, 0, inf, false)
	m.addRow(0, append([]int{sCol}, lambda...), append([]float64{1}, negated(unit)...), 0)

	// u_j = 1 iff n_j > |C_j|, d_j = 1 iff n_j < |C_j|; n_j − |C_j| never
	// exceeds max_j and |C_j| − n_j never exceeds |C_j|, which are the big Ms.
	pt.u = m.addBinary(-w * t.RescaleUpCost * rate)
	pt.d = m.addBinary(-w * t.RescaleDownCost * rate)
	m.addRow(-inf, joined(pt.x, pt.u), joined(unitCoefs(nodes), -float64(max(hi, 1))), float64(cur))
	m.addRow(float64(cur), joined(pt.x, pt.d), joined(unitCoefs(nodes), float64(max(cur, 1))), inf)
	return pt
}

// unitCoefs returns n ones.
func unitCoefs(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// negated returns −v.
func negated(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = -x
	}
	return out
}

// joined returns a new slice holding a then b.
func joined[T any](a []T, b ...T) []T {
	return append(append(make([]T, 0, len(a)+len(b)), a...), b...)
}
