package allocator

import "time"

// SolveNaiveMCKP solves the compact model as written, with every option of
// every trial and none of solveCompact's reductions: the reference that
// proves the reductions exact, and the baseline they are timed against.
func SolveNaiveMCKP(p *Problem, timeLimit time.Duration) (float64, Status, error) {
	in, err := prepare(p)
	if err != nil {
		return 0, "", err
	}
	var m milp
	capCols := make([][]int, len(in.types))
	capCoef := make([][]float64, len(in.types))
	for j := range in.trials {
		ti := &in.trials[j]
		cols := []int{m.addBinary(ti.zero)}
		for _, c := range ti.choices {
			for k := c.min; k <= c.max(); k++ {
				col := m.addBinary(c.value(k))
				cols = append(cols, col)
				capCols[c.typ] = append(capCols[c.typ], col)
				capCoef[c.typ] = append(capCoef[c.typ], float64(k))
			}
		}
		ones := make([]float64, len(cols))
		for i := range ones {
			ones[i] = 1
		}
		m.addRow(1, cols, ones, 1)
	}
	for t := range in.types {
		m.addRow(-inf, capCols[t], capCoef[t], float64(in.capacity[t]))
	}
	sol, err := m.solve(Settings{TimeLimit: timeLimit, RelGap: defaultRelGap})
	if err != nil {
		return 0, "", err
	}
	if !sol.optimal {
		return sol.objective, StatusFeasible, nil
	}
	return sol.objective, StatusOptimal, nil
}
