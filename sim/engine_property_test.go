package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// randomJobs have random, not necessarily monotone, curves.
func randomJobs(rng *rand.Rand, n int, horizon float64) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		top := 1 + rng.IntN(8)
		var c allocator.Curve
		for k := 1; k <= top; k++ {
			if k == top || rng.IntN(2) == 0 {
				c = append(c, allocator.Point{Nodes: k, Throughput: 1 + 100*rng.Float64()})
			}
		}
		lo := 1 + rng.IntN(top)
		hi := lo + rng.IntN(top-lo+1)
		jobs[i] = Job{
			Name:         fmt.Sprintf("R%d", i),
			Submit:       horizon * rng.Float64() * 0.7,
			MinNodes:     lo,
			MaxNodes:     hi,
			RescaleUp:    30 * rng.Float64(),
			RescaleDown:  20 * rng.Float64(),
			TotalSamples: 1e3 + 2e5*rng.Float64(),
			Curve:        c,
		}
	}
	return jobs
}

func TestRunInvariantsRandom(t *testing.T) {
	policies := []allocator.Formulation{allocator.FormulationCompact, allocator.FormulationGreedy, allocator.FormulationEqual, allocator.FormulationPaper}
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 1))
		const horizon = 20000
		events := Churn(4+rng.IntN(12), 0, horizon, 600, 600, seed)
		jobs := randomJobs(rng, 2+rng.IntN(8), horizon)
		for _, policy := range policies {
			if policy == allocator.FormulationPaper && seed >= 3 {
				continue // the node-level MILP is slow; a few scenarios suffice
			}
			t.Run(fmt.Sprintf("seed%d/%s", seed, policy), func(t *testing.T) {
				checkInvariants(t, events, jobs, Config{Policy: policy})
			})
		}
	}
}

func checkInvariants(t *testing.T, events []Event, jobs []Job, cfg Config) *Result {
	t.Helper()
	prev := make([]float64, len(jobs))
	var failed bool
	fail := func(format string, args ...any) {
		if !failed {
			t.Errorf(format, args...)
			failed = true
		}
	}
	cfg.observe = func(e *engine) {
		holder := map[string]int{}
		for j := range e.st {
			st, job := &e.st[j], jobs[j]
			k := len(st.nodes)
			if k != 0 && (k < job.MinNodes || k > job.MaxNodes) {
				fail("t=%v: job %s runs on %d nodes, outside [%d, %d]", e.now, job.Name, k, job.MinNodes, job.MaxNodes)
			}
			if k > 0 && !st.active {
				fail("t=%v: job %s holds nodes but is not active (done %v)", e.now, job.Name, st.done)
			}
			for _, id := range st.nodes {
				if _, idle := e.idle[id]; !idle {
					fail("t=%v: job %s runs on %s, which is not idle", e.now, job.Name, id)
				}
				if other, ok := holder[id]; ok {
					fail("t=%v: node %s given to %s and %s", e.now, id, jobs[other].Name, job.Name)
				}
				holder[id] = j
			}
			s := e.res.PerJob[j].Samples
			if s < prev[j] || s > job.TotalSamples {
				fail("t=%v: job %s samples %v after %v (total %v)", e.now, job.Name, s, prev[j], job.TotalSamples)
			}
			prev[j] = s
		}
		if len(holder) != len(e.owner) {
			fail("t=%v: owner map has %d nodes, jobs hold %d", e.now, len(e.owner), len(holder))
		}
		// The incrementally kept idle list is the idle set, sorted.
		if e.idleList != nil {
			want := make([]string, 0, len(e.idle))
			for id := range e.idle {
				want = append(want, id)
			}
			sort.Strings(want)
			got := make([]string, len(e.idleList))
			for i, n := range e.idleList {
				got[i] = n.ID
			}
			if !slices.Equal(got, want) {
				fail("t=%v: idle list %v, idle set %v", e.now, got, want)
			}
		}
	}
	res, err := Run(events, jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	const eps = 1e-9
	if m.HoleUtilisation > 1+eps || m.HoleUtilisation < 0 {
		t.Errorf("hole utilisation %v outside [0, 1]", m.HoleUtilisation)
	}
	if m.EfficiencyVsDedicated > 1+eps || m.EfficiencyVsDedicated < 0 {
		t.Errorf("efficiency vs dedicated %v outside [0, 1]", m.EfficiencyVsDedicated)
	}
	sumHeld, sumSamples, sumLost := 0.0, 0.0, 0.0
	for i, pj := range res.PerJob {
		sumHeld += pj.NodeSeconds
		sumSamples += pj.Samples
		if _, _, perNode := jobs[i].BestPlacement(); perNode > 0 {
			sumLost += pj.ProgressLost / perNode
		}
		if pj.Completed != (pj.Samples == jobs[i].TotalSamples) {
			t.Errorf("job %s: completed %v with %v of %v samples", pj.Name, pj.Completed, pj.Samples, jobs[i].TotalSamples)
		}
		// Held node-time bounds the work: trained ≤ held × best per-node rate.
		_, perNode := jobs[i].BestScale()
		if trained := pj.Samples + pj.ProgressLost; pj.Completed && trained > pj.NodeSeconds*perNode*(1+eps)+eps {
			t.Errorf("job %s trained %v samples on %v node-s at ≤ %v/node-s", pj.Name, trained, pj.NodeSeconds, perNode)
		}
	}
	// Where the efficiency goes: the rescales' share is their lost
	// progress in node-seconds; the scale's share the rest, never below 0.
	if m.AllocatedNodeSeconds > 0 {
		if want := sumLost / m.AllocatedNodeSeconds; math.Abs(m.LossRescale-want) > 1e-9 {
			t.Errorf("loss_rescale %v, want %v", m.LossRescale, want)
		}
		if sum := m.EfficiencyVsDedicated + m.LossRescale + m.LossScale; m.LossScale < 0 || m.LossScale > 0 && math.Abs(sum-1) > 1e-9 {
			t.Errorf("efficiency %v + loss_rescale %v + loss_scale %v = %v, want 1 (loss_scale ≥ 0)", m.EfficiencyVsDedicated, m.LossRescale, m.LossScale, sum)
		}
	}
	if math.Abs(sumHeld-m.AllocatedNodeSeconds) > 1e-6*math.Max(1, sumHeld) {
		t.Errorf("per-job node-s sum %v, run total %v", sumHeld, m.AllocatedNodeSeconds)
	}
	if math.Abs(m.Throughput*m.Duration-sumSamples) > 1e-6*math.Max(1, sumSamples) {
		t.Errorf("throughput × duration %v, samples %v", m.Throughput*m.Duration, sumSamples)
	}
	for i := 1; i < len(res.Series); i++ {
		a, b := res.Series[i-1], res.Series[i]
		if b.Time < a.Time || b.Samples < a.Samples*(1-eps) || b.Used > b.Idle {
			t.Fatalf("series %d→%d: %+v then %+v", i-1, i, a, b)
		}
	}
	return res
}

func TestRunDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	events := Churn(10, 0, 20000, 600, 600, 5)
	jobs := randomJobs(rng, 8, 20000)
	a, err := Run(events, jobs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(events, jobs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Result{a, b} {
		r.Metrics.SolverMsP50, r.Metrics.SolverMsP99, r.Metrics.SolverMsMax, r.Metrics.SolverMsTotal = 0, 0, 0, 0
		if len(r.SolverMs) != r.Metrics.Decisions {
			t.Fatalf("%d solve times for %d decisions", len(r.SolverMs), r.Metrics.Decisions)
		}
		r.SolverMs = nil
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("two runs of the same input differ")
	}
}
