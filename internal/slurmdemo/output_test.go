package slurmdemo

import (
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// fixedResult is a run's result with every section filled (figures like
// docs/benchmarks.md's live B), for the printed report.
func fixedResult() *Result {
	return &Result{
		Plan: PlanSummary{SWF: "embedded:traces/theta-2022.swf", Offset: (179*24*time.Hour + 17*time.Hour).String(), TraceStart: 1656548921,
			Jobs: 220, Compression: 750, TraceNodes: 4360, Nodes: 6, SpanS: 723, LongestRunS: 115, Load: 0.88, TraceLoad: 0.54,
			Sizes: map[int]int{3: 7, 1: 196, 4: 1, 2: 16}},
		Slurm:    &SlurmSummary{Version: "22.05.8", GraceS: 10, KillWaitS: 5, BFInterval: 2, SignalUser: true},
		Baseline: &PassResult{Kind: "baseline", Seconds: 946, Batch: BatchSummary{Planned: 220, Started: 220}, NodeSeconds: NodeSeconds{Total: 5676, Idle: 1814}},
		Live: &PassResult{Kind: "live", Seconds: 951, Batch: BatchSummary{Planned: 220, Started: 220},
			NodeSeconds: NodeSeconds{Total: 5706, Batch: 3849, Idle: 1857, Trial: 1431, Pilot: 32, Free: 394}, Harvest: 0.771,
			Pilots:    PilotSummary{Submitted: 53, Started: 49, Preempted: 43, Yielded: 12, States: map[string]int{"COMPLETED": 40, "CANCELLED": 9}},
			Handovers: 40, HandoverPilots: 43, HandoverWait: stats.Summary{P50: 0.04, P95: 1.2, Max: 16}, HandoverGap: stats.Summary{P50: 1, Max: 3},
			Churn: Churn{Holes: 190, IdleToPilot: stats.Summary{P50: 1, P95: 2}, IdleToTrial: stats.Summary{P50: 1, P95: 3}, Missed: 140, MissedLength: stats.Summary{P50: 1}}},
		Delays: &Delays{Matched: 220, Delay: stats.Summary{Mean: 4.13, P50: 3.47, P95: 11.47, Max: 17.47}, Bound: 12, OverBound: 9, Later: 150, Earlier: 10},
		Trials: &TrialsSummary{Campaign: "slurm-demo-150405", Created: 29, Completed: 21, States: map[string]int{"running": 6, "completed": 21, "pending": 2},
			Audit: Audit{CheckpointEvery: 1280, Started: 27, Finished: 21, RelaunchedDone: 2, Runs: 69, LostPerStop: stats.Summary{N: 42}}},
		Sim: &SimComparison{Workload: SimWorkload{Jobs: 62, Samples: 38400, Rate: 635}, Raw: SimPrediction{Harvest: 1, Efficiency: 1},
			Lagged: SimPrediction{Harvest: 0.888, Efficiency: 1}, LagS: 1, QueueGaps: 82, QueueGapNodeS: 152, OfferedNodeS: 1705,
			Offered: SimPrediction{Harvest: 0.926}, LiveOfferedHarvest: 0.839, LiveHarvest: 0.771, LiveEfficiency: 0.992},
		Leftovers: []string{"4242 /bin/go-mlp --data bin/slurm-demo/data", "4243 gleaner agent --data-dir bin/slurm-demo/data"},
		Files:     Files{Result: "bin/slurm-demo/result.json", IdleEvents: "bin/slurm-demo/idle-events.csv"},
	}
}

// The report for people: no Go maps or slices, sizes and states in a
// stable order.
func TestPrintResult(t *testing.T) {
	want := `
== Slurm live harvest: 220 jobs of theta-2022.swf from trace offset 179 d 17 h, 750× faster, on 6 nodes (Slurm 22.05.8, GraceTime 10s, KillWait 5s, bf_interval 2s, preempt_send_user_signal on)
window: submitted over 12m3s, offered load 0.88 (0.54 on the logged machine); sizes: 196 jobs of 1 node, 16 of 2 nodes, 7 of 3 nodes, 1 of 4 nodes
baseline pass: 220/220 jobs ran in 15m46s; idle 32.0% of node-seconds
live pass: 220/220 jobs ran in 15m51s
  node-seconds: batch 3849, idle 1857 (32.5%) = trial 1431 + pilot without trial 32 + free 394
  harvest (trial ÷ idle node-seconds): 0.771
  pilots: 53 submitted, 49 started, 43 preempted (12 of them yielding to the plan); 0 left after the worker stopped
  handovers: 40 batch jobs took the nodes of 43 pilots; submission → pilot end p50 0.0s, p95 1.2s, max 16.0s; pilot end → batch start p50 1.0s, max 3.0s
  churn: 190 holes; idle→pilot p50 1.0s p95 2.0s; idle→trial p50 1.0s p95 3.0s; 140 holes no pilot reached (p50 length 1.0s)
  trials: 21 completed, 0 failed, 0 stopped (campaign); trial workflows: completed 21, running 6, pending 2
  trials lost: 0, completed twice: 0 (audit of 69 runs of 27 trials: 21 finished, 0 finished twice, 0 overlapping, 0 regressed; 2 relaunched after finishing, training nothing)
  training lost per stop: mean 0, p95 0, max 0 samples over 42 stops (0 lost any); checkpoint interval 1280 samples; 0 runs SIGKILLed, 0 restarts
  batch delay (live − baseline start, 220 jobs): mean 4.13s, p50 3.47s, p95 11.47s, max 17.47s; 9 over GraceTime + bf_interval (12s); 150 later, 10 earlier by > 1 s
  simulator, same idle events, 62 jobs of 38400 samples at 635.0 samples/s: harvest 1.000 (holes 1.0s later: 0.888) vs live 0.771; efficiency 1.000 (1.000) vs live 0.992
  queue gaps (a node idle while the batch job that takes it next was already queued): 82, 152 node-s; on the other 1705 idle node-s the simulator (holes 1.0s later) predicts 0.926, live 0.839
leftover processes: 2
  4242 /bin/go-mlp --data bin/slurm-demo/data
  4243 gleaner agent --data-dir bin/slurm-demo/data
result: bin/slurm-demo/result.json; idle events: bin/slurm-demo/idle-events.csv
`
	var b strings.Builder
	fixedResult().Print(&b)
	if got := b.String(); got != want {
		t.Errorf("Print (-want +got):\n%s", lineDiff(want, got))
	}
}

func TestSizesAndCountsText(t *testing.T) {
	for _, tc := range []struct {
		sizes map[int]int
		want  string
	}{
		{map[int]int{2: 7, 1: 53}, "53 jobs of 1 node, 7 of 2 nodes"},
		{map[int]int{1: 1}, "1 job of 1 node"},
		{map[int]int{4: 1, 3: 1}, "1 job of 3 nodes, 1 of 4 nodes"},
		{nil, "no jobs"},
	} {
		if got := SizesText(tc.sizes); got != tc.want {
			t.Errorf("SizesText(%v) = %q, want %q", tc.sizes, got, tc.want)
		}
	}
	for _, tc := range []struct {
		counts map[string]int
		want   string
	}{
		{map[string]int{"running": 2, "completed": 40}, "completed 40, running 2"},
		{map[string]int{"b": 1, "a": 1, "c": 3}, "c 3, a 1, b 1"}, // ties by name
		{map[string]int{}, "none"},
	} {
		if got := CountsText(tc.counts); got != tc.want {
			t.Errorf("CountsText(%v) = %q, want %q", tc.counts, got, tc.want)
		}
	}
}

func TestTraceTime(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{179*24*time.Hour + 17*time.Hour, "179 d 17 h"},
		{2*time.Hour + 30*time.Minute + 5*time.Second, "2 h 30 min 5 s"},
		{45 * time.Second, "45 s"},
		{0, "0 s"},
	} {
		if got := TraceTime(tc.d); got != tc.want {
			t.Errorf("TraceTime(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// lineDiff is want and got line by line, "-" for want and "+" for got
// where they differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			b.WriteString("  " + wl + "\n")
			continue
		}
		if i < len(w) {
			b.WriteString("- " + wl + "\n")
		}
		if i < len(g) {
			b.WriteString("+ " + gl + "\n")
		}
	}
	return b.String()
}
