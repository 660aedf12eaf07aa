package sim

import (
	"slices"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// Result is what one run measured.
type Result struct {
	Metrics Metrics `json:"metrics"`
	// PerJob has one entry per input job, in input order.
	PerJob []JobMetrics `json:"per_job"`
	// Series samples the run at its start, after every decision instant
	// (node event, submission or completion) and at its end.
	Series []SeriesPoint `json:"series"`
	// NodeSecondsByType splits Metrics.AllocatedNodeSeconds by node type
	// (Config.NodeTypes); nil on an untyped pool. (Not in Metrics, which
	// stays comparable with ==.)
	NodeSecondsByType map[string]float64 `json:"allocated_node_s_by_type,omitempty"`
	// SolverMs is the wall-clock milliseconds of each allocator solve, in
	// decision order.
	SolverMs []float64 `json:"solver_ms"`
}

// Metrics are DESIGN.md's simulation metrics for one run. Node-seconds
// are integrated over the window [Start, End].
type Metrics struct {
	Policy   allocator.Formulation `json:"policy"`
	Start    float64               `json:"start"`
	End      float64               `json:"end"`
	Duration float64               `json:"duration_s"` // End − Start

	// Throughput is samples trained per second, summed over jobs:
	// Samples / Duration. Samples counts useful progress only (work
	// redone after a rescale is in ProgressLost, not here).
	Throughput float64 `json:"throughput"`
	Samples    float64 `json:"samples"`
	// Work is the useful work done in reference node-seconds, summed over
	// jobs (JobMetrics.Work): unlike samples, it adds up across models.
	// WorkRate = Work / Duration, in reference nodes: the quantity
	// allocator.ObjectiveEfficiency maximises (its Σ speedups, every
	// Weight 1), averaged over the window.
	Work     float64 `json:"work_node_s"`
	WorkRate float64 `json:"work_rate"`
	// Makespan is the seconds from Start to the last job's completion
	// when every job of the workload completed in the window; 0 otherwise.
	Makespan float64 `json:"makespan_s"`

	// EfficiencyVsDedicated = DedicatedNodeSeconds / AllocatedNodeSeconds:
	// the node-hours the same work (Samples) would take on dedicated
	// nodes, each job at its best fixed scale (Job.BestScale: the most
	// samples per node-second), over the idle node-hours the jobs held.
	// 1.0 = no loss from holes, rescales or preemptions; 0 when no node
	// was held.
	EfficiencyVsDedicated float64 `json:"efficiency_vs_dedicated"`
	// HoleUtilisation = AllocatedNodeSeconds / IdleNodeSeconds: the share
	// of the idle node-hours given to jobs; 0 when nothing was idle.
	HoleUtilisation float64 `json:"hole_utilisation"`

	IdleNodeSeconds      float64 `json:"idle_node_s"`
	AllocatedNodeSeconds float64 `json:"allocated_node_s"`
	DedicatedNodeSeconds float64 `json:"dedicated_node_s"`
	// Where 1 − EfficiencyVsDedicated goes, as shares of
	// AllocatedNodeSeconds (they add up to it): LossRescale is the
	// progress lost to rescales and preemptions (ProgressLost, in node-
	// seconds at each job's best per-node rate); LossScale the rest, node
	// time held at counts less efficient than a job's best fixed scale
	// (more nodes than it uses best, or fewer than it needs to).
	LossRescale float64 `json:"loss_rescale"`
	LossScale   float64 `json:"loss_scale"`

	// Rescales counts allocator decisions that changed the node count of
	// a running job (growing, shrinking, or pausing it to 0); starting a
	// job from 0 is not a rescale. Preemptions counts (busy event, job)
	// pairs where the batch scheduler took nodes from a running job.
	Rescales    int `json:"rescales"`
	Preemptions int `json:"preemptions"`
	// ProgressLost is the samples lost to rescales and preemptions: each
	// costs RescaleUp or RescaleDown seconds × the job's rate before it.
	ProgressLost float64 `json:"progress_lost"`

	// Decisions is how many times the allocator ran; solver times are
	// wall-clock milliseconds per run of allocator.Solve (nearest-rank
	// percentiles; 0 with no decision).
	Decisions   int     `json:"decisions"`
	SolverMsP50 float64 `json:"solver_ms_p50"`
	SolverMsP99 float64 `json:"solver_ms_p99"`
	SolverMsMax float64 `json:"solver_ms_max"`
	// SolverMsTotal is the time spent in the allocator, summed.
	SolverMsTotal float64 `json:"solver_ms_total"`
	// LookaheadP10, P50 and P90 are the T_fwd the allocator was given,
	// in seconds, over its decisions (nearest rank; all Config.Lookahead
	// unless Config.DeriveLookahead; 0 with no decision).
	LookaheadP10 float64 `json:"lookahead_s_p10"`
	LookaheadP50 float64 `json:"lookahead_s_p50"`
	LookaheadP90 float64 `json:"lookahead_s_p90"`

	JobsSubmitted int `json:"jobs_submitted"`
	JobsCompleted int `json:"jobs_completed"`
	// IgnoredNodeEvents counts node ids in events that changed nothing: an
	// idle node reported idle again, or a busy report for a node that was
	// not idle.
	IgnoredNodeEvents int `json:"ignored_node_events"`
}

// JobMetrics are the metrics of one job.
type JobMetrics struct {
	Name      string `json:"name"`
	Submitted bool   `json:"submitted"` // within the window
	Completed bool   `json:"completed"`
	// Started is when the job first got nodes, Finish when it completed
	// (both 0 when it did not happen).
	Started float64 `json:"started,omitempty"`
	Finish  float64 `json:"finish,omitempty"`

	Samples      float64 `json:"samples"`
	ProgressLost float64 `json:"progress_lost"`
	Rescales     int     `json:"rescales"`
	Preemptions  int     `json:"preemptions"`

	// NodeSeconds is the idle node-time the job held; DedicatedNodeSeconds
	// = Samples / (Curve(BestScale)/BestScale) (on BestType with
	// CurvesByType: Job.BestPlacement); Efficiency is their ratio (0 when
	// it held nothing).
	NodeSeconds          float64 `json:"node_s"`
	DedicatedNodeSeconds float64 `json:"dedicated_node_s"`
	Efficiency           float64 `json:"efficiency_vs_dedicated"`
	BestScale            int     `json:"best_scale"`
	BestType             string  `json:"best_type,omitempty"`
	// Work = Samples / Job.ReferenceRate: the work done in node-seconds
	// of the job's reference type at MinNodes (0 when that rate is 0).
	Work float64 `json:"work_node_s"`
}

// SeriesPoint is the state of the run at one instant, after the decision
// taken there.
type SeriesPoint struct {
	Time float64 `json:"t"`
	Idle int     `json:"idle"` // idle nodes
	Used int     `json:"used"` // idle nodes held by jobs
	// Rate is the samples/s the jobs train at from this instant on,
	// summed (including samples that re-train lost progress).
	Rate float64 `json:"rate"`
	// Samples is the cumulative useful samples so far.
	Samples float64 `json:"samples"`
	Active  int     `json:"active"` // submitted, unfinished jobs
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// finish fills in the derived metrics.
func (r *Result) finish(jobs []Job, solverMs, lookaheads []float64) {
	m := &r.Metrics
	m.Duration = m.End - m.Start
	var lostNodeSeconds float64 // ProgressLost at each job's best per-node rate
	for i := range r.PerJob {
		pj := &r.PerJob[i]
		typ, k, perNode := jobs[i].BestPlacement()
		pj.BestType, pj.BestScale = typ, k
		pj.DedicatedNodeSeconds = ratio(pj.Samples, perNode)
		lostNodeSeconds += ratio(pj.ProgressLost, perNode)
		pj.Efficiency = ratio(pj.DedicatedNodeSeconds, pj.NodeSeconds)
		pj.Work = ratio(pj.Samples, jobs[i].ReferenceRate())
		m.Samples += pj.Samples
		m.Work += pj.Work
		m.DedicatedNodeSeconds += pj.DedicatedNodeSeconds
		m.ProgressLost += pj.ProgressLost
		m.Rescales += pj.Rescales
		m.Preemptions += pj.Preemptions
		if pj.Submitted {
			m.JobsSubmitted++
		}
		if pj.Completed {
			m.JobsCompleted++
			m.Makespan = max(m.Makespan, pj.Finish-m.Start)
		}
	}
	if m.JobsCompleted < len(jobs) {
		m.Makespan = 0
	}
	m.Throughput = ratio(m.Samples, m.Duration)
	m.WorkRate = ratio(m.Work, m.Duration)
	m.EfficiencyVsDedicated = ratio(m.DedicatedNodeSeconds, m.AllocatedNodeSeconds)
	if m.AllocatedNodeSeconds > 0 {
		m.LossRescale = lostNodeSeconds / m.AllocatedNodeSeconds
		m.LossScale = max(0, 1-m.EfficiencyVsDedicated-m.LossRescale)
	}
	m.HoleUtilisation = ratio(m.AllocatedNodeSeconds, m.IdleNodeSeconds)
	r.SolverMs = solverMs
	m.Decisions = len(solverMs)
	if len(solverMs) > 0 { // no quantiles of nothing: they stay 0 (JSON has no NaN)
		m.SolverMsP50 = stats.NearestRank(solverMs, 0.5)
		m.SolverMsP99 = stats.NearestRank(solverMs, 0.99)
		m.SolverMsMax = slices.Max(solverMs)
	}
	for _, ms := range solverMs {
		m.SolverMsTotal += ms
	}
	if len(lookaheads) > 0 {
		m.LookaheadP10 = stats.NearestRank(lookaheads, 0.1)
		m.LookaheadP50 = stats.NearestRank(lookaheads, 0.5)
		m.LookaheadP90 = stats.NearestRank(lookaheads, 0.9)
	}
}
