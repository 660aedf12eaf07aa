package workflows

import (
	"math"
	"slices"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// trialCore is one trial's bookkeeping, the same for a trial workflow
// (trial.go) and an inline trial (campaign_inline.go): what its reports
// and run results add up to, the point it resumes from, its restarts,
// and the report and status it gives. It is plain deterministic Go: no
// workflow.Context, no clock, no I/O; the runtimes hold one and act on
// what it says.
//
// The rules, one each:
//   - Progress never goes backwards: a report or result with fewer samples
//     than the trial has is an older run's and only its checkpoint counts
//     (a checkpoint, once written, is kept). The objective's values go into
//     History, a bounded window over the whole run (appendBounded).
//   - Restarts are the trainer's failures that were relaunched: per run at
//     most max_restarts (the failure past it ends the trial, it is no
//     restart); retries after a lost worker or server are no failures.
//   - ObjectiveMissing is set on the final report of a trial that did not
//     fail and never reported the objective metric: a failure says why by
//     itself, and a completed or stopped trial that reported other metrics
//     is a finished segment the campaign counts (EndedWithoutObjective).
//   - Resume, on the final report of a trial that completed its budget,
//     carries everything its next segment continues: samples, step, epoch,
//     checkpoint, runs, restarts and rescales, and its timeline (Started,
//     its newest spans).
//   - The timeline (Started, Ended, Spans) follows the trial's state and
//     node count (trial_spans.go).
type trialCore struct {
	in  TrialInput
	key string // the trial's workflow id (an inline trial's segment key)
	p   TrialProgress

	failures  map[int]int  // trainer failures counted per run (p.Runs numbers runs)
	groupRuns map[int]bool // runs on several hosts: their failures are counted per assignment by the trial workflow
}

// newTrialCore starts the bookkeeping of a trial from its input's carried
// state (continue-as-new, or the segment it continues), if any.
func newTrialCore(in TrialInput, key string) *trialCore {
	b := &trialCore{in: in, key: key, p: TrialProgress{State: TrialPending}}
	if in.State != nil {
		b.p = *in.State
		b.p.Nodes = nil
		// A state carried from before ObjectiveSeen existed.
		_, reported := b.p.Metrics[in.ObjectiveMetric]
		b.p.ObjectiveSeen = b.p.ObjectiveSeen || reported || len(b.p.History) > 0
	}
	b.in.State = nil
	return b
}

// absorb keeps the newest progress; it reports whether it took new
// metrics (a report to the campaign is due).
func (b *trialCore) absorb(samples float64, step int64, epoch float64, metrics map[string]float64, checkpoint string) bool {
	if checkpoint != "" {
		b.p.Checkpoint = checkpoint
	}
	if samples < b.p.Samples {
		return false
	}
	b.p.Samples, b.p.Step, b.p.Epoch = samples, step, epoch
	if len(metrics) == 0 {
		return false
	}
	b.p.Metrics = metrics
	if v, ok := metrics[b.in.ObjectiveMetric]; ok {
		b.p.ObjectiveSeen = true
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			b.p.History = appendBounded(b.p.History, MetricPoint{Samples: samples, Value: v})
		}
	}
	return true
}

// absorbProgress folds in a running trainer's report; it reports whether
// it took new metrics.
func (b *trialCore) absorbProgress(pr Progress) bool {
	if pr.Model != "" {
		b.p.Model = pr.Model
	}
	if pr.Batch > 0 {
		b.p.Batch = pr.Batch
	}
	b.countFailures(pr.Run, pr.Failures)
	fresh := b.absorb(pr.Samples, pr.Step, pr.Epoch, pr.Metrics, pr.Checkpoint)
	b.p.MalformedReports = max(b.p.MalformedReports, pr.Malformed)
	b.noteBadCheckpoints(pr.BadCheckpoints, pr.BadCheckpoint)
	return fresh
}

// absorbResult folds in a run's result, or the last state a failed run
// returned with its error.
func (b *trialCore) absorbResult(run int, res RunTrialResult) {
	if res.Exit.Killed {
		b.p.Killed++
	}
	b.absorb(res.Samples, res.Step, res.Epoch, res.Metrics, res.Checkpoint)
	b.p.MalformedReports = max(b.p.MalformedReports, res.Malformed)
	b.countFailures(run, res.Failures)
	b.noteBadCheckpoints(res.BadCheckpoints, res.BadCheckpoint)
}

// countFailures adds the trainer failures of run not counted yet: the
// trial's restarts.
func (b *trialCore) countFailures(run, failures int) {
	if b.groupRuns[run] {
		return
	}
	failures = min(failures, b.in.MaxRestarts)
	if b.failures == nil {
		b.failures = map[int]int{}
	}
	if failures > b.failures[run] {
		b.p.Restarts += failures - b.failures[run]
		b.failures[run] = failures
	}
}

// markGroupRun leaves run's failures to the trial workflow's count per
// assignment (groupFailed).
func (b *trialCore) markGroupRun(run int) {
	if b.groupRuns == nil {
		b.groupRuns = map[int]bool{}
	}
	b.groupRuns[run] = true
}

func (b *trialCore) noteBadCheckpoints(n int, last string) {
	if n > b.p.BadCheckpoints {
		b.p.BadCheckpoints, b.p.BadCheckpoint = n, last
	}
}

// launched counts a new run of the trainer on nodes, now (a rescale when
// it moves a running trial to other nodes; restart: it follows a
// failure), puts the trial in TrialRunning and returns the run's number.
func (b *trialCore) launched(now time.Time, nodes []string, rescale, restart bool) int {
	b.p.Runs++
	if rescale {
		b.p.Rescales++
	}
	b.p.Nodes = nodes
	b.p.State = TrialRunning
	b.mark(now, false, restart)
	return b.p.Runs
}

// end sets the trial's final state, now; errMsg is a failure's reason.
func (b *trialCore) end(now time.Time, state TrialState, errMsg string) {
	b.setState(now, state, false)
	if errMsg != "" {
		b.p.Error = errMsg
	}
}

// budgetSlack is the relative rounding allowed on a budget, as on ASHA's
// rungs: a budget computed as r·η^k may land an ulp above the whole
// number a trainer reports at.
const budgetSlack = 1e-9

// atBudget reports whether the trial's progress reached its budget.
func (b *trialCore) atBudget() bool {
	return b.in.Budget > 0 && b.progress() >= b.in.Budget*(1-budgetSlack)
}

// progress is the trial's progress in its budget unit.
func (b *trialCore) progress() float64 {
	switch b.in.BudgetUnit {
	case gleaner.BudgetSteps:
		return float64(b.p.Step)
	case gleaner.BudgetEpochs:
		return b.p.Epoch
	}
	return b.p.Samples
}

func (b *trialCore) status() TrialStatus {
	return TrialStatus{TrialID: b.in.TrialID, Params: b.in.Params, Stage: b.in.Stage, TrialProgress: b.p}
}

// report is what the trial tells its campaign; owner is its trial
// directory's owner (TrialResume.Owner).
func (b *trialCore) report(owner string, final bool) TrialReport {
	p := b.p
	r := TrialReport{
		TrialID:    b.in.TrialID,
		WorkflowID: b.key,
		Number:     b.in.Number,
		Params:     b.in.Params,
		State:      p.State,
		Final:      final,
		Metrics:    p.Metrics,
		Samples:    p.Samples,
		Step:       p.Step,
		Epoch:      p.Epoch,
		Restarts:   p.Restarts,
		Rescales:   p.Rescales,
		Error:      p.Error,
		Stage:      b.in.Stage,
		Segment:    b.in.Segment,

		ObjectiveMissing: final && p.State != TrialFailed && !p.ObjectiveSeen,
	}
	if !final {
		return r // (reports while it runs are frequent: they carry no timeline)
	}
	r.Started, r.Ended, r.Spans, r.SpansDropped = p.Started, p.Ended, slices.Clone(p.Spans), p.SpansDropped
	if p.State == TrialCompleted && b.in.Budget > 0 {
		r.Resume = &TrialResume{Owner: owner, Samples: p.Samples, Step: p.Step, Epoch: p.Epoch,
			Checkpoint: p.Checkpoint, Runs: p.Runs, Restarts: p.Restarts, Rescales: p.Rescales, Seen: p.ObjectiveSeen,
			Started: p.Started}
		r.Resume.Spans, r.Resume.SpansDropped = resumeSpans(p)
	}
	return r
}

// metricHistoryLen bounds TrialProgress.History; when full, every other
// point is dropped, so it spans the whole run at lower density.
const metricHistoryLen = 256

func appendBounded(h []MetricPoint, p MetricPoint) []MetricPoint {
	if len(h) >= metricHistoryLen {
		kept := h[:0]
		for i := 0; i < len(h); i += 2 {
			kept = append(kept, h[i])
		}
		h = kept
	}
	return append(h, p)
}
