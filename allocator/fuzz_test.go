package allocator

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeProblem feeds arbitrary JSON to the allocator. A problem that
// decodes either fails validation with ErrInvalidProblem, or is solved by
// the baselines (no HiGHS, so each input is cheap) without panicking,
// within a few seconds, and feasibly.
func FuzzDecodeProblem(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Problem
		if json.Unmarshal(data, &p) != nil {
			return
		}
		if err := p.Validate(); err != nil {
			require.ErrorIs(t, err, ErrInvalidProblem)
			return
		}
		for _, form := range []Formulation{FormulationGreedy, FormulationEqual} {
			res, err := solveWithin(t, &p, form, 2*time.Minute)
			if err != nil {
				// Only a problem prepare rejects may fail here.
				require.Truef(t, errors.Is(err, ErrInvalidProblem), "%s: %v", form, err)
				continue
			}
			checkFeasible(t, &p, res)
		}
	})
}

// solveWithin solves p and fails the test if Solve takes longer than
// limit, so a hang shows up as a failure rather than a stalled fuzzer.
func solveWithin(t *testing.T, p *Problem, f Formulation, limit time.Duration) (*Result, error) {
	t.Helper()
	type answer struct {
		res *Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := Solve(p, &Settings{Formulation: f})
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-time.After(limit):
		t.Fatalf("%s: Solve did not return within %v", f, limit)
		return nil, nil
	}
}

// TestNonFiniteValues freezes a hang found while writing the fuzz test:
// valid problems whose values overflow float64 (huge throughput × look-ahead
// or rescale cost × rate, or an efficiency weight 1/(O(min)/min) of a
// subnormal throughput) give NaN or ±Inf values, on which greedy and
// compact loop forever. Each formulation must either reject such a
// problem with ErrInvalidProblem or return a feasible, finite result.
func TestNonFiniteValues(t *testing.T) {
	problems := map[string]*Problem{
		"overflow": {
			Nodes: []Node{{ID: "a"}, {ID: "b"}},
			Trials: []Trial{{ID: "t", Nodes: []string{"a"}, MinNodes: 1, MaxNodes: 2,
				Curve: Curve{{Nodes: 1, Throughput: 1e300}, {Nodes: 2, Throughput: 1e300}}, RescaleUpCost: 1e300, RescaleDownCost: 1e300}},
			Lookahead: time.Duration(math.MaxInt64),
		},
		"subnormal-efficiency": {
			Nodes:     []Node{{ID: "a"}, {ID: "b"}},
			Trials:    []Trial{{ID: "t", MinNodes: 1, MaxNodes: 2, Curve: Curve{{Nodes: 1, Throughput: 5e-324}, {Nodes: 2, Throughput: 0}}}},
			Lookahead: time.Second,
			Objective: ObjectiveEfficiency,
		},
	}
	for name, p := range problems {
		for _, f := range Formulations {
			t.Run(name+"/"+string(f), func(t *testing.T) {
				res, err := solveWithin(t, p, f, 2*time.Minute)
				if err != nil {
					require.ErrorIs(t, err, ErrInvalidProblem)
					return
				}
				checkFeasible(t, p, res)
				require.False(t, math.IsNaN(res.Objective) || math.IsInf(res.Objective, 0), "objective %v", res.Objective)
			})
		}
	}
}
