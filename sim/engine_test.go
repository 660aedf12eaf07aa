package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// linear10 is 10 samples/s per node up to 2 nodes.
var linear10 = allocator.Curve{{Nodes: 1, Throughput: 10}, {Nodes: 2, Throughput: 20}}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func counts(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// One job alone on two nodes for 100 s: 2 × 10 samples/s = 20 samples/s,
// 2000 samples done exactly at t = 100; it held the 200 idle node-seconds
// and needed 2000 / 10 = 200 on dedicated nodes (every scale is as
// efficient on a linear curve).
func TestRunOneJobNoLoss(t *testing.T) {
	events := []Event{{Time: 0, Idle: []string{"a", "b"}}, {Time: 100}}
	jobs := []Job{{Name: "J", MinNodes: 1, MaxNodes: 2, RescaleUp: 10, RescaleDown: 10, TotalSamples: 2000, Curve: linear10}}
	res, err := Run(events, jobs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	near(t, "duration", m.Duration, 100)
	near(t, "samples", m.Samples, 2000)
	near(t, "throughput", m.Throughput, 20)
	near(t, "idle node-s", m.IdleNodeSeconds, 200)
	near(t, "allocated node-s", m.AllocatedNodeSeconds, 200)
	near(t, "hole utilisation", m.HoleUtilisation, 1)
	near(t, "efficiency", m.EfficiencyVsDedicated, 1)
	near(t, "finish", res.PerJob[0].Finish, 100)
	counts(t, "completed", m.JobsCompleted, 1)
	counts(t, "rescales", m.Rescales, 0)
}

// A preemption halfway and a rescale cost, one job (linear 10/node, min 1,
// max 2, 2000 samples, rescale up = down = 10 s), End = 150:
//
//	 0– 50  nodes a,b: 20/s → 1000 samples.
//	50      busy b: shrink 2→1, lost 10 s × 20/s = 200 samples.
//	50– 75  1 node: 25 s × 10/s = 250 trained, 200 re-train the loss → 1050.
//	75      idle b: grow (300·20 − 10·10 = 5900 > 300·10): lost 10 × 10 = 100.
//	75–127.5 2 nodes: (2000 − 1050 + 100) / 20 = 52.5 s → done at 127.5.
//
// Idle node-s 2·50 + 1·25 + 2·75 = 275; held 100 + 25 + 2·52.5 = 230
// (= (2000 + 300 lost) / 10). Utilisation 230/275; dedicated 2000/10 = 200
// node-s, efficiency 200/230; throughput 2000/150.
func TestRunPreemptionAndRescale(t *testing.T) {
	events := []Event{
		{Time: 0, Idle: []string{"a", "b"}},
		{Time: 50, Busy: []string{"b"}},
		{Time: 75, Idle: []string{"b"}},
	}
	jobs := []Job{{Name: "J", MinNodes: 1, MaxNodes: 2, RescaleUp: 10, RescaleDown: 10, TotalSamples: 2000, Curve: linear10}}
	res, err := Run(events, jobs, Config{Start: 0, End: 150})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	near(t, "idle node-s", m.IdleNodeSeconds, 275)
	near(t, "allocated node-s", m.AllocatedNodeSeconds, 230)
	near(t, "hole utilisation", m.HoleUtilisation, 230.0/275)
	near(t, "samples", m.Samples, 2000)
	near(t, "throughput", m.Throughput, 2000.0/150)
	near(t, "progress lost", m.ProgressLost, 300)
	near(t, "dedicated node-s", m.DedicatedNodeSeconds, 200)
	near(t, "efficiency", m.EfficiencyVsDedicated, 200.0/230)
	near(t, "finish", res.PerJob[0].Finish, 127.5)
	counts(t, "rescales", m.Rescales, 1)
	counts(t, "preemptions", m.Preemptions, 1)
	counts(t, "completed", m.JobsCompleted, 1)
}

// Two jobs, both linear 10/node on 1–2 nodes (up 8 s, down 5 s); A needs
// 3000 samples, B never finishes. Nodes a,b,c,d idle from t = 0 (Initial),
// window [0, 200]:
//
//	  0      A gets a,b and B c,d (mapping: free nodes by id, jobs in order).
//	 50      busy b preempts A: 2→1, lost 5 × 20 = 100; A has 1000 samples.
//	         Decision on 3 nodes (T_fwd = 300): (A,B) = (1,2) is worth
//	         3000 + 6000 = 9000, (2,1) 5920 + 2900 = 8820: nothing changes.
//	 50–100  A: 500 trained, 100 re-trained → 1400.
//	100      idle b: A grows 1→2 (5920 > 3000), lost 8 × 10 = 80.
//	100–184  A: (3000 − 1400 + 80) / 20 = 84 s → done at 184.
//	184–200  a,b idle and unused (B is at its max).
//
// Idle node-s 4·50 + 3·50 + 4·100 = 750. Held: A 2·50 + 1·50 + 2·84 = 318,
// B 2·200 = 400, 718 in all. Samples 3000 + 4000 = 7000, throughput 35.
// Dedicated 300 + 400 = 700 node-s: efficiency 700/718 (A 300/318, B 1).
func TestRunTwoJobs(t *testing.T) {
	events := []Event{
		{Time: 50, Busy: []string{"b"}},
		{Time: 100, Idle: []string{"b"}},
	}
	jobs := []Job{
		{Name: "A", MinNodes: 1, MaxNodes: 2, RescaleUp: 8, RescaleDown: 5, TotalSamples: 3000, Curve: linear10},
		{Name: "B", MinNodes: 1, MaxNodes: 2, RescaleUp: 8, RescaleDown: 5, TotalSamples: 1e9, Curve: linear10},
	}
	// Greedy and the paper MILP find the same decisions here.
	for _, policy := range []allocator.Formulation{allocator.FormulationCompact, allocator.FormulationPaper, allocator.FormulationGreedy} {
		t.Run(string(policy), func(t *testing.T) {
			res, err := Run(events, jobs, Config{Policy: policy, Start: 0, End: 200, Initial: []string{"a", "b", "c", "d"}})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Metrics
			near(t, "idle node-s", m.IdleNodeSeconds, 750)
			near(t, "allocated node-s", m.AllocatedNodeSeconds, 718)
			near(t, "hole utilisation", m.HoleUtilisation, 718.0/750)
			near(t, "samples", m.Samples, 7000)
			near(t, "throughput", m.Throughput, 35)
			near(t, "progress lost", m.ProgressLost, 180)
			near(t, "efficiency", m.EfficiencyVsDedicated, 700.0/718)
			counts(t, "rescales", m.Rescales, 1)
			counts(t, "preemptions", m.Preemptions, 1)
			counts(t, "completed", m.JobsCompleted, 1)
			a, b := res.PerJob[0], res.PerJob[1]
			near(t, "A finish", a.Finish, 184)
			near(t, "A node-s", a.NodeSeconds, 318)
			near(t, "A efficiency", a.Efficiency, 300.0/318)
			near(t, "A lost", a.ProgressLost, 180)
			near(t, "B samples", b.Samples, 4000)
			near(t, "B efficiency", b.Efficiency, 1)
			if b.Completed || b.Finish != 0 {
				t.Errorf("B completed %v at %v, want not completed", b.Completed, b.Finish)
			}
			last := res.Series[len(res.Series)-1]
			if last.Time != 200 || last.Idle != 4 || last.Used != 2 || last.Rate != 20 || last.Active != 1 {
				t.Errorf("last series point %+v, want t=200 idle=4 used=2 rate=20 active=1", last)
			}
		})
	}
}

// A job needing exactly 2 nodes loses one to a busy event: it cannot run
// on 1, so it drops to 0 (lost 5 s × 20/s = 100) and releases b; the
// allocator restarts it on b,c, which costs nothing (it was at 0).
// 0–10: 200 samples; 10–20: 200 trained, 100 re-trained → 300. Held 40
// node-s of 50 idle; dedicated 300/10 = 30: efficiency 0.75.
func TestRunPreemptedBelowMinDropsToZero(t *testing.T) {
	events := []Event{{Time: 0, Idle: []string{"a", "b", "c"}}, {Time: 10, Busy: []string{"a"}}, {Time: 20}}
	jobs := []Job{{Name: "J", MinNodes: 2, MaxNodes: 2, RescaleUp: 7, RescaleDown: 5, TotalSamples: 1e6, Curve: linear10}}
	var held [][]string
	res, err := Run(events, jobs, Config{observe: func(e *engine) {
		held = append(held, append([]string(nil), e.st[0].nodes...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "[[a b] [] [b c]]"
	if got := fmt.Sprint(held); got != want {
		t.Errorf("nodes held after each step = %s, want %s", got, want)
	}
	m := res.Metrics
	near(t, "samples", m.Samples, 300)
	near(t, "progress lost", m.ProgressLost, 100)
	near(t, "allocated node-s", m.AllocatedNodeSeconds, 40)
	near(t, "idle node-s", m.IdleNodeSeconds, 50)
	near(t, "efficiency", m.EfficiencyVsDedicated, 0.75)
	counts(t, "rescales", m.Rescales, 0)
	counts(t, "preemptions", m.Preemptions, 1)
}

// The window clips the run: events before Start shape the idle set, a job
// submitted before Start arrives at Start, nothing counts after End.
func TestRunWindow(t *testing.T) {
	events := []Event{{Time: 0, Idle: []string{"a"}}, {Time: 10, Idle: []string{"b"}}, {Time: 30, Busy: []string{"a", "b"}}, {Time: 90}}
	jobs := []Job{{Name: "J", MinNodes: 1, MaxNodes: 2, TotalSamples: 1e6, Curve: linear10}}
	res, err := Run(events, jobs, Config{Start: 20, End: 40})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	near(t, "idle node-s", m.IdleNodeSeconds, 20) // 2 nodes 20–30
	near(t, "samples", m.Samples, 200)
	near(t, "throughput", m.Throughput, 10)
	near(t, "started", res.PerJob[0].Started, 20)
	counts(t, "preemptions", m.Preemptions, 1)
}

func TestRunSolverClock(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { now = now.Add(3 * time.Millisecond); return now }
	events := []Event{{Time: 0, Idle: []string{"a", "b"}}, {Time: 50, Busy: []string{"b"}}, {Time: 100}}
	jobs := []Job{{Name: "J", MinNodes: 1, MaxNodes: 2, TotalSamples: 1e6, Curve: linear10}}
	res, err := Run(events, jobs, Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	counts(t, "decisions", m.Decisions, 2)
	near(t, "solver p50", m.SolverMsP50, 3)
	near(t, "solver p99", m.SolverMsP99, 3)
}

func TestRunCurveSource(t *testing.T) {
	// The allocator is told job 1 scales perfectly and job 0 not at all;
	// the true curves are the reverse. Progress follows the truth.
	flat := allocator.Curve{{Nodes: 1, Throughput: 10}, {Nodes: 2, Throughput: 10}}
	jobs := []Job{
		{Name: "A", MinNodes: 1, MaxNodes: 2, TotalSamples: 1e9, Curve: linear10},
		{Name: "B", MinNodes: 1, MaxNodes: 2, TotalSamples: 1e9, Curve: flat},
	}
	events := []Event{{Time: 0, Idle: []string{"a", "b", "c"}}, {Time: 100}}
	told := func(job int, now float64) allocator.Curve {
		if job == 0 {
			return flat
		}
		return linear10
	}
	oracle, err := Run(events, jobs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := Run(events, jobs, Config{Curves: told})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "oracle throughput", oracle.Metrics.Throughput, 30) // A on 2, B on 1
	near(t, "misinformed throughput", wrong.Metrics.Throughput, 20)
}

func TestRunRejectsBadInput(t *testing.T) {
	good := Job{Name: "J", MinNodes: 1, MaxNodes: 2, TotalSamples: 10, Curve: linear10}
	ev := []Event{{Time: 0, Idle: []string{"a"}}, {Time: 10}}
	cases := []struct {
		name   string
		events []Event
		jobs   []Job
		cfg    Config
		want   string
	}{
		{"unsorted events", []Event{{Time: 5}, {Time: 1}}, nil, Config{}, "events[1]"},
		{"no window", nil, nil, Config{}, "no events"},
		{"empty window", ev, nil, Config{Start: 10, End: 10}, "not after start"},
		{"negative lookahead", ev, nil, Config{Lookahead: -1}, "lookahead"},
		{"unknown policy", ev, nil, Config{Policy: "best"}, `policy "best"`},
		{"max beyond curve", ev, []Job{{Name: "J", MinNodes: 1, MaxNodes: 3, TotalSamples: 10, Curve: linear10}}, Config{}, "max_nodes 3"},
		{"min zero", ev, []Job{{Name: "J", MinNodes: 0, MaxNodes: 2, TotalSamples: 10, Curve: linear10}}, Config{}, "min_nodes"},
		{"no samples", ev, []Job{{Name: "J", MinNodes: 1, MaxNodes: 2, Curve: linear10}}, Config{}, "total samples"},
		{"duplicate name", ev, []Job{good, good}, Config{}, "repeats jobs[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(c.events, c.jobs, c.cfg)
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalidInput mentioning %q", err, c.want)
			}
		})
	}
}
