package hpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func res(v ...float64) Result { return Result{Values: v} }

func TestConstrainedDomination(t *testing.T) {
	five := 5.0
	g := Goals{Modes: []string{"min", "max"}, Constraints: []Constraint{{Metric: "latency", Max: &five}}}
	feasible := Result{Values: []float64{1, 1}, Constraints: []float64{4}}
	better := Result{Values: []float64{0.5, 2}, Constraints: []float64{5}}
	slightlyOver := Result{Values: []float64{0, 9}, Constraints: []float64{6}}
	farOver := Result{Values: []float64{0, 9}, Constraints: []float64{9}}
	unreported := Result{Values: []float64{0, 9}}

	assert.True(t, g.Dominates(better, feasible), "better in both objectives")
	assert.False(t, g.Dominates(feasible, better))
	assert.True(t, g.Dominates(feasible, slightlyOver), "feasible first, whatever the objectives")
	assert.True(t, g.Dominates(slightlyOver, farOver), "less violation wins")
	assert.True(t, g.Dominates(farOver, unreported), "a constraint never reported is infinitely violated")
	assert.False(t, g.Dominates(farOver, farOver))
	assert.Equal(t, 4.0, g.Violation(farOver))
	assert.True(t, math.IsInf(g.Violation(unreported), 1))
}

func TestRanksAndFront(t *testing.T) {
	g := Goals{Modes: []string{"min", "min"}}
	rs := []Result{res(1, 5), res(2, 2), res(5, 1), res(3, 3), res(6, 6), res(2, 2)}
	assert.Equal(t, []int{0, 0, 0, 1, 2, 0}, g.Ranks(rs))
	assert.Equal(t, []int{0, 1, 2, 5}, g.Front(rs))

	// A missing value is worse than any reported one.
	assert.Equal(t, []int{0, 1}, g.Ranks([]Result{res(1, 1), res(1, math.NaN())}))
}

func TestCrowding(t *testing.T) {
	g := Goals{Modes: []string{"min", "max"}}
	// In minimisation terms: (0,-4) (1,-3) (3,-1) (4,0).
	d := g.Crowding([]Result{res(0, 4), res(1, 3), res(3, 1), res(4, 0)})
	assert.True(t, math.IsInf(d[0], 1))
	assert.True(t, math.IsInf(d[3], 1))
	assert.InDelta(t, 3.0/4+3.0/4, d[1], 1e-12)
	assert.InDelta(t, 3.0/4+3.0/4, d[2], 1e-12)
}

func TestHypervolumeTwoObjectives(t *testing.T) {
	g := Goals{Modes: []string{"min", "max"}}
	// Minimisation: (1,-3) and (2,-5) against ref (4,0): 3·3 + 2·2 = 13.
	hv := g.Hypervolume([]Result{res(1, 3), res(2, 5), res(3, 1), res(9, 9)}, []float64{4, 0})
	assert.InDelta(t, 13.0, hv, 1e-12, "(3,1) is dominated and (9,9) lies beyond the reference point")
}

func TestHypervolumeThreeObjectivesMatchesMonteCarlo(t *testing.T) {
	g := Goals{Modes: []string{"min", "min", "min"}}
	rng := rand.New(rand.NewPCG(1, 2))
	var rs []Result
	for range 30 {
		// Points near the simplex x+y+z = 1 are mutually non-dominated.
		a, b := rng.Float64(), rng.Float64()
		if a+b > 1 {
			a, b = 1-a, 1-b
		}
		rs = append(rs, res(a, b, 1-a-b))
	}
	ref := []float64{1.1, 1.1, 1.1}
	exact := g.Hypervolume(rs, ref)
	in, n := 0, 200000
	for range n {
		p := []float64{rng.Float64() * 1.1, rng.Float64() * 1.1, rng.Float64() * 1.1}
		for _, r := range rs {
			if r.Values[0] <= p[0] && r.Values[1] <= p[1] && r.Values[2] <= p[2] {
				in++
				break
			}
		}
	}
	mc := float64(in) / float64(n) * 1.1 * 1.1 * 1.1
	assert.InDelta(t, mc, exact, 0.01, "exact %v, Monte Carlo %v", exact, mc)
}

func TestHypervolumeSkipsInfeasibleAndIncomplete(t *testing.T) {
	one := 1.0
	g := Goals{Modes: []string{"min", "min"}, Constraints: []Constraint{{Metric: "mem", Max: &one}}}
	rs := []Result{
		{Values: []float64{1, 1}, Constraints: []float64{0.5}},
		{Values: []float64{0, 0}, Constraints: []float64{2}},
		{Values: []float64{0, math.NaN()}, Constraints: []float64{0}},
	}
	assert.InDelta(t, 1.0, g.Hypervolume(rs, []float64{2, 2}), 1e-12)
}

func TestReferencePoint(t *testing.T) {
	g := Goals{Modes: []string{"min", "max"}}
	ref := g.ReferencePoint([]Result{res(1, 10), res(3, 20), res(2, math.NaN())})
	assert.InDeltaSlice(t, []float64{3.2, 9}, ref, 1e-12)
	assert.Nil(t, g.ReferencePoint([]Result{res(math.NaN(), 1)}))
	assert.Positive(t, g.Hypervolume([]Result{res(1, 10), res(3, 20)}, ref))
}

func TestReportAndFinishFeedEverySearcher(t *testing.T) {
	s, err := NewSearcher(Config{Algorithm: "tpe", Space: Space{{Name: "x", Type: ParamFloat, Max: 1}},
		MaxTrials: 3, MaxConcurrent: 1, Mode: "min"})
	require.NoError(t, err)
	acts := s.Initial()
	require.Len(t, acts, 1)
	id := acts[0].(Create).ID
	s.TrialCreated(id)
	Report(s, id, 1, res(0.5, 7))
	assert.NotEmpty(t, Finish(s, id, res(0.25, 7), OutcomeCompleted), "the single-objective searcher sees the first value and asks for the next trial")
}

func TestConfigObjectivesValidation(t *testing.T) {
	base := Config{Algorithm: "tpe", Space: Space{{Name: "x", Type: ParamFloat, Max: 1}}, MaxTrials: 3, MaxConcurrent: 1, Mode: "min"}
	two := base
	two.Objectives = []Objective{{Metric: "loss", Mode: "min"}, {Metric: "latency", Mode: "min"}}
	assert.ErrorContains(t, two.Validate(), "algorithm: tpe takes one objective and no constraints")

	bad := base
	bad.Objectives = []Objective{{Metric: "loss", Mode: "min"}, {Metric: "loss", Mode: "max"}}
	assert.ErrorContains(t, bad.Validate(), `objectives[1].metric: "loss" is already an objective`)

	bad.Objectives = []Objective{{Metric: "loss", Mode: "up"}}
	assert.ErrorContains(t, bad.Validate(), `objectives[0].mode: "up" is not one of min, max`)

	bad = base
	bad.Constraints = []Constraint{{Metric: "mem"}}
	assert.ErrorContains(t, bad.Validate(), "constraints[0]: mem: give max, min or both")

	one := base
	one.Objectives = []Objective{{Metric: "loss", Mode: "min"}}
	assert.NoError(t, one.Validate(), "one objective in the list is a single-objective search")
}

func TestHypervolumeWithDominatedPointsInSlices(t *testing.T) {
	g := Goals{Modes: []string{"min", "min", "min"}}
	// (1,1,1) dominates the other two: only its box counts.
	hv := g.Hypervolume([]Result{res(1, 1, 1), res(1.5, 1.5, 1.5), res(1, 1.9, 1.2)}, []float64{2, 2, 2})
	assert.InDelta(t, 1.0, hv, 1e-12)
	hv4 := Goals{Modes: []string{"min", "min", "min", "min"}}.Hypervolume([]Result{res(1, 1, 1, 1), res(1.5, 1, 1.5, 1.5)}, []float64{2, 2, 2, 2})
	assert.InDelta(t, 1.0, hv4, 1e-12)
}

func BenchmarkHypervolume(b *testing.B) {
	for _, d := range []int{2, 3} {
		g := Goals{Modes: slices.Repeat([]string{"min"}, d)}
		rng := rand.New(rand.NewPCG(3, 4))
		rs := make([]Result, 1000)
		ref := slices.Repeat([]float64{1.1}, d)
		for i := range rs {
			v := make([]float64, d)
			norm := 0.0
			for j := range v {
				v[j] = rng.NormFloat64()
				norm += v[j] * v[j]
			}
			for j := range v {
				v[j] = math.Abs(v[j]) / math.Sqrt(norm) // on the unit sphere: a DTLZ2-like front
			}
			rs[i] = Result{Values: v}
		}
		b.Run(fmt.Sprintf("front1000_d%d", d), func(b *testing.B) {
			for b.Loop() {
				g.Hypervolume(rs, ref)
			}
		})
	}
}

// The three-dimensional staircase agrees with the general slicing (a
// fourth objective every point has at 0, reference 1) on random sets with
// dominated points, ties and duplicates.
func TestHypervolume3AgreesWithSlicing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := 1 + rng.IntN(40)
		var pts3, pts4 [][]float64
		for range n {
			p := []float64{float64(rng.IntN(6)) / 5, float64(rng.IntN(6)) / 5, float64(rng.IntN(6)) / 5}
			pts3 = append(pts3, p)
			pts4 = append(pts4, append(slices.Clone(p), 0))
		}
		want := hypervolumeMin(nondominatedMin(pts4), []float64{1.1, 1.1, 1.1, 1})
		assert.InDelta(t, want, hypervolume3(pts3, []float64{1.1, 1.1, 1.1}), 1e-9)
	}
}
