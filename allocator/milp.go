package allocator

import (
	"fmt"
	"math"

	"github.com/bartolsthoorn/gohighs/highs"
)

// milp is a maximisation MILP built column by column and row by row, the
// only place this package touches the HiGHS binding.
type milp struct {
	cost, lower, upper []float64
	integer            []bool
	rowLower, rowUpper []float64
	entries            []highs.Nonzero
	// absGap, when positive, is an absolute MIP gap (in objective units)
	// at which HiGHS may stop, besides Settings.RelGap.
	absGap float64
}

// addBinary adds a 0/1 column with objective coefficient c and returns it.
func (m *milp) addBinary(c float64) int { return m.addCol(c, 0, 1, true) }

// addCol adds a column and returns its index.
func (m *milp) addCol(c, lo, hi float64, integer bool) int {
	m.cost = append(m.cost, c)
	m.lower = append(m.lower, lo)
	m.upper = append(m.upper, hi)
	m.integer = append(m.integer, integer)
	return len(m.cost) - 1
}

// addRow adds lo ≤ Σ coef[i]·x[cols[i]] ≤ hi (±Inf for no bound).
func (m *milp) addRow(lo float64, cols []int, coef []float64, hi float64) {
	r := len(m.rowLower)
	m.rowLower = append(m.rowLower, lo)
	m.rowUpper = append(m.rowUpper, hi)
	for i, c := range cols {
		if coef[i] != 0 {
			m.entries = append(m.entries, highs.Nonzero{Row: r, Col: c, Val: coef[i]})
		}
	}
}

// milpSolution is what a solve returns.
type milpSolution struct {
	x         []float64
	objective float64
	optimal   bool // proven within the gap; else stopped at the time limit
}

// solve maximises the model under s's time limit and gap. The objective
// is divided by its largest coefficient before HiGHS sees it (and the
// optimum multiplied back), so its coefficients are O(1) whatever the
// units of throughput. It returns an
// error wrapping ErrSolver when HiGHS finds no solution.
func (m *milp) solve(s Settings) (milpSolution, error) {
	if len(m.cost) == 0 {
		return milpSolution{optimal: true}, nil
	}
	scale := 0.0
	for _, c := range m.cost {
		scale = math.Max(scale, math.Abs(c))
	}
	if scale == 0 {
		scale = 1
	}
	costs := make([]float64, len(m.cost))
	for i, c := range m.cost {
		costs[i] = c / scale
	}
	types := make([]highs.VariableType, len(m.cost))
	for i, isInt := range m.integer {
		if isInt {
			types[i] = highs.Integer
		}
	}
	model := highs.Model{
		Maximize:    true,
		ColCosts:    costs,
		ColLower:    m.lower,
		ColUpper:    m.upper,
		RowLower:    m.rowLower,
		RowUpper:    m.rowUpper,
		ConstMatrix: m.entries,
		VarTypes:    types,
	}
	opts := []highs.SolveOption{
		highs.WithOutput(false),
		highs.WithTimeLimit(s.TimeLimit.Seconds()),
		highs.WithMIPRelGap(s.RelGap),
		highs.WithThreads(1),
		// HiGHS 1.12's symmetry detection proved a suboptimal solution
		// "optimal" on the paper model of a real-curve instance (node
		// columns are interchangeable there; frozen in
		// TestPaperSymmetryRegression). Correctness first.
		highs.WithBoolOption("mip_detect_symmetry", false),
	}
	if m.absGap > 0 {
		opts = append(opts, highs.WithMIPAbsGap(m.absGap/scale))
	}
	sol, err := model.Solve(opts...)
	if err != nil {
		return milpSolution{}, fmt.Errorf("%w: HiGHS: %w", ErrSolver, err)
	}
	if !sol.HasSolution() || len(sol.ColValues) != len(m.cost) {
		return milpSolution{}, fmt.Errorf("%w: HiGHS stopped with status %v and no solution", ErrSolver, sol.Status)
	}
	// The binding reports a solution at a time limit even when HiGHS found
	// none (the values are then zeros): check it.
	if !sol.IsOptimal() && !m.satisfiedBy(sol.ColValues, 1e-6) {
		return milpSolution{}, fmt.Errorf("%w: HiGHS stopped with status %v before finding a feasible solution", ErrSolver, sol.Status)
	}
	return milpSolution{x: sol.ColValues, objective: sol.Objective * scale, optimal: sol.IsOptimal()}, nil
}

// on reports whether binary column c is set in x.
func on(x []float64, c int) bool { return x[c] > 0.5 }

var inf = math.Inf(1)

// satisfiedBy reports whether x keeps m's bounds, integrality and rows
// within tol (relative to the size of the row's bound).
func (m *milp) satisfiedBy(x []float64, tol float64) bool {
	if len(x) != len(m.cost) {
		return false
	}
	for i, v := range x {
		if v < m.lower[i]-tol || v > m.upper[i]+tol || (m.integer[i] && math.Abs(v-math.Round(v)) > tol) {
			return false
		}
	}
	activity := make([]float64, len(m.rowLower))
	for _, e := range m.entries {
		activity[e.Row] += e.Val * x[e.Col]
	}
	for r, a := range activity {
		lo, hi := m.rowLower[r], m.rowUpper[r]
		if a < lo-tol*math.Max(1, math.Abs(lo)) || a > hi+tol*math.Max(1, math.Abs(hi)) {
			return false
		}
	}
	return true
}

// lpSession is a linear programme kept in HiGHS between solves, so that
// rows can be added and the LP re-solved from the previous basis (a
// handful of dual simplex iterations instead of a fresh solve): the
// cutting-plane master adds one row per iteration.
type lpSession struct {
	s *highs.Solver
}

// newLPSession starts a maximisation LP with the given columns and no rows.
func newLPSession(cost, lower, upper []float64) (*lpSession, error) {
	s, err := highs.NewSolver()
	if err != nil {
		return nil, fmt.Errorf("%w: HiGHS: %w", ErrSolver, err)
	}
	for _, step := range []func() error{
		func() error { return s.SetBoolOption("output_flag", false) },
		func() error { return s.SetIntOption("threads", 1) },
		func() error { return s.SetMaximize(true) },
		func() error { return s.AddVars(lower, upper) },
		func() error { return s.SetColCosts(cost) },
	} {
		if err := step(); err != nil {
			s.Close()
			return nil, fmt.Errorf("%w: HiGHS: %w", ErrSolver, err)
		}
	}
	return &lpSession{s: s}, nil
}

// addRow adds lo ≤ Σ coef[i]·x[cols[i]] ≤ hi.
func (l *lpSession) addRow(lo float64, cols []int, coef []float64, hi float64) error {
	if err := l.s.AddRow(lo, hi, cols, coef); err != nil {
		return fmt.Errorf("%w: HiGHS: %w", ErrSolver, err)
	}
	return nil
}

// solve returns the optimal column values and objective.
func (l *lpSession) solve() ([]float64, float64, error) {
	sol, err := l.s.Run()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: HiGHS: %w", ErrSolver, err)
	}
	if !sol.IsOptimal() {
		return nil, 0, fmt.Errorf("%w: HiGHS stopped with status %v on a linear programme", ErrSolver, sol.Status)
	}
	return sol.ColValues, sol.Objective, nil
}

func (l *lpSession) close() { l.s.Close() }
