package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gleaner-hpc/gleaner/sim"
)

// simTraceReport is the "trace" object of `gleaner sim --json`; its keys
// are a stable contract (docs/sim.md).
type simTraceReport struct {
	File               string  `json:"file"`
	Format             string  `json:"format"` // "events" or "swf"
	Nodes              int     `json:"nodes"`  // machine size (Trace.Size)
	NodeIDs            int     `json:"node_ids"`
	Events             int     `json:"events"`
	Start              float64 `json:"start"`
	End                float64 `json:"end"`
	Lines              int     `json:"lines"`
	Records            int     `json:"records"`
	SWFJobs            int     `json:"swf_jobs"`
	SkippedJobs        int     `json:"skipped_jobs"`
	UnknownWaits       int     `json:"unknown_waits"`
	ClippedJobs        int     `json:"clipped_jobs"`
	ClippedNodeSeconds float64 `json:"clipped_node_s"`
	Inconsistent       int     `json:"inconsistent"`
	DroppedHoles       int     `json:"dropped_holes"`
	DroppedNodeSeconds float64 `json:"dropped_node_s"`
	// Holes: hole lengths and idle-node counts (sim.HoleStats).
	Holes sim.HoleStats `json:"holes"`
}

// simWorkloadReport is the "workload" object of `gleaner sim --json`.
type simWorkloadReport struct {
	Source string `json:"source"` // the --jobs file, or "synthetic"
	Jobs   int    `json:"jobs"`
	Seed   uint64 `json:"seed,omitempty"` // synthetic only
	// Synthetic only: how jobs arrive ("start" or "uniform"), each job's
	// node-hours at its best scale, and the curves' stretch.
	Arrivals  string  `json:"arrivals,omitempty"`
	NodeHours float64 `json:"node_hours,omitempty"`
	Stretch   int     `json:"stretch,omitempty"`
	// NodeTypes is --node-types (mixed pools only): the synthetic jobs
	// are then drawn from Gavel's per-GPU table.
	NodeTypes string `json:"node_types,omitempty"`
}

// simPolicyReport is one entry of "policies": sim.Metrics (its JSON keys:
// policy, throughput, efficiency_vs_dedicated, hole_utilisation, rescales,
// preemptions, solver_ms_p50, solver_ms_p99, jobs_completed, …) and the
// wall-clock time of the replay.
type simPolicyReport struct {
	sim.Metrics
	// Curves is what the allocator was told: "oracle" (the true curves,
	// each type's on a mixed pool), "blind" (each job's mean curve on
	// every type) or "jpa" (learnt online from noisy simulated
	// measurements).
	Curves string `json:"curves"`
	// Objective is the allocator's (--objective).
	Objective string `json:"objective"`
	// NodeSecondsByType splits allocated_node_s by node type (mixed
	// pools only).
	NodeSecondsByType map[string]float64 `json:"allocated_node_s_by_type,omitempty"`
	WallSeconds       float64            `json:"wall_s"`
	// IdleEstimate is what the allocator was told of when nodes are taken
	// back (--idle-estimate: none, true, noisy:SIGMA); TFwd is the
	// look-ahead: its seconds when fixed, or "auto" when derived from the
	// estimates (lookahead_s_p10/p50/p90 say what it was).
	IdleEstimate string `json:"idle_estimate"`
	TFwd         string `json:"tfwd"`
	// JPA counts the JPA's work (jpa curves only).
	JPA *sim.JPAStats `json:"jpa,omitempty"`
	// PerJob is every job's metrics, in workload order (--per-job only).
	PerJob []sim.JobMetrics `json:"per_job,omitempty"`
}

type simReport struct {
	Trace    simTraceReport    `json:"trace"`
	Workload simWorkloadReport `json:"workload"`
	Policies []simPolicyReport `json:"policies"`
}

func printSimReport(w io.Writer, r simReport) error {
	t := r.Trace
	fmt.Fprintf(w, "trace     %s (%s): %d nodes (%d named), %d events, [%.0f, %.0f] = %.1f h\n",
		t.File, t.Format, t.Nodes, t.NodeIDs, t.Events, t.Start, t.End, (t.End-t.Start)/3600)
	switch t.Format {
	case "swf":
		fmt.Fprintf(w, "          %d SWF jobs, %d skipped, %d clipped (%.0f node-s beyond the free nodes), %d without a wait time (started at submit)\n",
			t.SWFJobs, t.SkippedJobs, t.ClippedJobs, t.ClippedNodeSeconds, t.UnknownWaits)
	default:
		fmt.Fprintf(w, "          %d inconsistent node mentions ignored\n", t.Inconsistent)
	}
	if t.DroppedHoles > 0 {
		fmt.Fprintf(w, "          %d holes shorter than --min-hole dropped (%.0f node-s)\n", t.DroppedHoles, t.DroppedNodeSeconds)
	}
	h := t.Holes
	fmt.Fprintf(w, "holes     %d; length p10/p50/p90/p99 %s/%s/%s/%s; idle node-hours in holes <1m/1-10m/10-60m/1-6h/>6h: %s\n",
		h.Holes, simDuration(h.LengthP10), simDuration(h.LengthP50), simDuration(h.LengthP90), simDuration(h.LengthP99), simShares(h.NodeSecondsByLength))
	fmt.Fprintf(w, "idle      %.0f node-hours (%.1f%% of the machine); idle nodes p10/p50/p90/max %d/%d/%d/%d, mean %.0f\n",
		h.IdleNodeSeconds/3600, 100*h.MeanIdleFraction, h.IdleP10, h.IdleP50, h.IdleP90, h.IdleMax, h.IdleMean)
	mix, _ := sim.ParseTypeMix(r.Workload.NodeTypes)
	if mix != nil {
		fmt.Fprintf(w, "workload  %s: %d jobs from Gavel's per-GPU throughputs; node types %s\n\n", r.Workload.Source, r.Workload.Jobs, r.Workload.NodeTypes)
	} else {
		fmt.Fprintf(w, "workload  %s: %d jobs\n\n", r.Workload.Source, r.Workload.Jobs)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "policy\tcurves\tidle_estimate\ttfwd\ttfwd_s_p50\tthroughput\tefficiency_vs_dedicated\tloss_rescale\tloss_scale\thole_utilisation\trescales\tpreemptions\tsolver_ms_p50\tsolver_ms_p99\tjobs_completed\twall_s\t"
	if mix != nil {
		// Mixed pools: the objective, the work rate and makespan (samples
		// of different models do not add up), and where the node-time went.
		header += "objective\twork_rate\tmakespan_h\tnode_s_by_type\t"
	}
	fmt.Fprintln(tw, header)
	for _, p := range r.Policies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.2f\t%.2f\t%d/%d\t%.1f\t",
			p.Policy, p.Curves, p.IdleEstimate, p.TFwd, p.LookaheadP50, p.Throughput, p.EfficiencyVsDedicated, p.LossRescale, p.LossScale, p.HoleUtilisation, p.Rescales, p.Preemptions,
			p.SolverMsP50, p.SolverMsP99, p.JobsCompleted, r.Workload.Jobs, p.WallSeconds)
		if mix != nil {
			makespan := "-"
			if p.Makespan > 0 {
				makespan = fmt.Sprintf("%.1f", p.Makespan/3600)
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t", p.Objective, p.WorkRate, makespan, typeShares(mix, p.NodeSecondsByType))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// simDuration prints seconds as a rounded duration (e.g. 7m5s).
func simDuration(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// simShares prints shares as percentages joined by "/".
func simShares(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f%%", 100*x)
	}
	return strings.Join(parts, "/")
}
