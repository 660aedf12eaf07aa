package allocator

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// validProblem is a small valid problem that each case below breaks once.
func validProblem() *Problem {
	return &Problem{
		Nodes: []Node{{ID: "n1", Type: "a100"}, {ID: "n2", Type: "a100"}, {ID: "n3", Type: "h100"}},
		Trials: []Trial{
			{ID: "alpha", Nodes: []string{"n1"}, MinNodes: 1, MaxNodes: 2,
				Curve: Curve{{Nodes: 1, Throughput: 10}, {Nodes: 2, Throughput: 18}}, RescaleUpCost: 5, RescaleDownCost: 5},
			{ID: "beta", MinNodes: 1, MaxNodes: 2,
				CurvesByType: map[string]Curve{"a100": {{Nodes: 2, Throughput: 30}}, "h100": {{Nodes: 1, Throughput: 20}, {Nodes: 2, Throughput: 35}}}},
		},
		Lookahead: time.Minute,
		Objective: ObjectiveWeighted,
	}
}

func TestValidate(t *testing.T) {
	require.NoError(t, validProblem().Validate())

	tests := []struct {
		name string
		edit func(p *Problem)
		want []string // substrings of the message: who and which field
	}{
		{"min > max", func(p *Problem) { p.Trials[0].MinNodes = 3 },
			[]string{`trial "alpha"`, "min_nodes 3 > max_nodes 2"}},
		{"min below 1", func(p *Problem) { p.Trials[1].MinNodes = 0 },
			[]string{`trial "beta"`, "min_nodes"}},
		{"curve does not cover max", func(p *Problem) { p.Trials[0].MaxNodes = 3 },
			[]string{`trial "alpha"`, "curve", "max_nodes 3"}},
		{"empty curve", func(p *Problem) { p.Trials[0].Curve = nil },
			[]string{`trial "alpha"`, "curve: empty"}},
		{"non-increasing curve nodes", func(p *Problem) { p.Trials[0].Curve = Curve{{Nodes: 2, Throughput: 10}, {Nodes: 2, Throughput: 18}} },
			[]string{`trial "alpha"`, "curve[1].nodes"}},
		{"zero curve nodes", func(p *Problem) { p.Trials[0].Curve = Curve{{Nodes: 0, Throughput: 0}, {Nodes: 2, Throughput: 18}} },
			[]string{`trial "alpha"`, "curve[0].nodes"}},
		{"negative throughput", func(p *Problem) { p.Trials[0].Curve[1].Throughput = -1 },
			[]string{`trial "alpha"`, "curve[1].throughput"}},
		{"NaN throughput", func(p *Problem) { p.Trials[0].Curve[0].Throughput = math.NaN() },
			[]string{`trial "alpha"`, "curve[0].throughput"}},
		{"infinite throughput", func(p *Problem) { p.Trials[0].Curve[0].Throughput = math.Inf(1) },
			[]string{`trial "alpha"`, "curve[0].throughput"}},
		{"bad per-type curve", func(p *Problem) { p.Trials[1].CurvesByType["h100"][0].Throughput = -2 },
			[]string{`trial "beta"`, `curves_by_type["h100"][0].throughput`}},
		{"negative up cost", func(p *Problem) { p.Trials[0].RescaleUpCost = -1 },
			[]string{`trial "alpha"`, "rescale_up_s"}},
		{"negative down cost", func(p *Problem) { p.Trials[1].RescaleDownCost = -0.5 },
			[]string{`trial "beta"`, "rescale_down_s"}},
		{"NaN weight", func(p *Problem) { p.Trials[1].Weight = math.NaN() },
			[]string{`trial "beta"`, "weight"}},
		{"duplicate trial id", func(p *Problem) { p.Trials[1].ID = "alpha" },
			[]string{`trial "alpha"`, "duplicate id"}},
		{"empty trial id", func(p *Problem) { p.Trials[1].ID = "" },
			[]string{"trials[1].id"}},
		{"duplicate node id", func(p *Problem) { p.Nodes[2].ID = "n1" },
			[]string{`node "n1"`, "duplicate id"}},
		{"empty node id", func(p *Problem) { p.Nodes[1].ID = "" },
			[]string{"nodes[1].id"}},
		{"node held by two trials", func(p *Problem) { p.Trials[1].Nodes = []string{"n1"} },
			[]string{`node "n1"`, `trial "alpha"`, `trial "beta"`}},
		{"node listed twice in one trial", func(p *Problem) { p.Trials[0].Nodes = []string{"n1", "n1"} },
			[]string{`trial "alpha"`, `nodes: "n1" listed twice`}},
		{"zero lookahead", func(p *Problem) { p.Lookahead = 0 },
			[]string{"lookahead"}},
		{"negative lookahead", func(p *Problem) { p.Lookahead = -time.Second },
			[]string{"lookahead"}},
		{"bad objective", func(p *Problem) { p.Objective = "speed" },
			[]string{"objective", `"speed"`}},
		{"mixed node types in current nodes", func(p *Problem) { p.Trials[0].Nodes = []string{"n1", "n3"} },
			[]string{`trial "alpha"`, "nodes", `"n1" of type "a100"`, `"n3" of type "h100"`}},
		{"curves_by_type without the held type", func(p *Problem) { p.Trials[1].Nodes = []string{"n2"}; delete(p.Trials[1].CurvesByType, "a100") },
			[]string{`trial "beta"`, `"n2" of type "a100"`, "curves_by_type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validProblem()
			tt.edit(p)
			err := p.Validate()
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvalidProblem), "error %q does not wrap ErrInvalidProblem", err)
			for _, w := range tt.want {
				require.True(t, strings.Contains(err.Error(), w), "error %q does not name %s", err, w)
			}
			// Solve and Evaluate reject it the same way.
			_, err = Solve(p, nil)
			require.ErrorIs(t, err, ErrInvalidProblem)
			_, err = Evaluate(p, make([]int, len(p.Trials)), nil)
			require.ErrorIs(t, err, ErrInvalidProblem)
		})
	}
}

// TestValidateDepartedNodes: ids no longer in the pool are departures, not
// errors, and do not count against the one-type rule.
func TestValidateDepartedNodes(t *testing.T) {
	p := validProblem()
	p.Trials[0].Nodes = []string{"gone", "n1", "also-gone"}
	require.NoError(t, p.Validate())
}

func TestSolveUnknownFormulation(t *testing.T) {
	_, err := Solve(validProblem(), &Settings{Formulation: "simplex"})
	require.ErrorIs(t, err, ErrInvalidProblem)
	require.ErrorContains(t, err, `"simplex"`)
}

// TestRandomProblemsAreValid guards the test instance builder itself.
func TestRandomProblemsAreValid(t *testing.T) {
	for seed := range uint64(300) {
		rng := newTestRand(seed)
		p := randomProblem(rng, rng.IntN(9), rng.IntN(25), 1+rng.IntN(3))
		require.NoError(t, p.Validate(), "seed %d", seed)
	}
}
