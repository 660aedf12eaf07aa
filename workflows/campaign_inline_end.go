package workflows

// How an inline trial's run ends: its result kept with the trial core,
// its throughput measured for the pool, its final report and its record.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TrialRecordsWorkflow keeps a chunk of ended inline trials: it returns
// its input, so the records are readable for the namespace's retention
// (client.Trials reads them).
func TrialRecordsWorkflow(ctx workflow.Context, in TrialRecords) (TrialRecords, error) {
	return in, nil
}

// ended folds a run's end into its trial: finished, failed, or stopped
// on purpose (then it waits for nodes again, or ends stopped).
func (x *inliner) ended(ctx workflow.Context, r *inlineRun, res RunTrialResult, err error) {
	delete(x.running, r.key)
	i := x.find(r.key)
	if i < 0 {
		return
	}
	t := &x.st().Trials[i]
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		x.absorb(ctx, t, r.run, res)
		x.measure(ctx, r, res.Samples)
		if res.Outcome == RunCompleted {
			x.finish(ctx, r.key, TrialCompleted, "")
			return
		}
	case errors.As(err, &canceled), canceledBeforeLaunch(ctx, err):
		// Stopped before the trainer started: nothing ran.
	case r.stopping && isTimeout(err):
		// The worker was lost while the run was being stopped; the next
		// launch resumes from the newest checkpoint.
	default:
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() && app.Details(&res) == nil {
			x.absorb(ctx, t, r.run, res)
		}
		x.finish(ctx, r.key, TrialFailed, errorMessage(err))
		return
	}
	if x.c.st.Stopping || t.Stop {
		x.finish(ctx, r.key, TrialStopped, "")
		return
	}
	// Stopped on purpose: it waits for nodes again, as a trial workflow
	// does (pending until it first ran, then paused). A queued run
	// stopped before its turn leaves its trial waiting in line, pending
	// (campaign_pipeline.go).
	if t.Progress.State == TrialRunning {
		t.update(func(b *trialCore) { b.wait(workflow.Now(ctx), x.c.st.Paused) })
	}
}

// absorb folds a run's result into its trial with the trial core. A run
// of the campaign that began before inline trials kept their books with
// it (inline-trial-core) folds it in as it did: what it records (the
// ended trials' records, whose size cuts the chunks) must replay the same.
func (x *inliner) absorb(ctx workflow.Context, t *InlineTrial, run int, res RunTrialResult) {
	if x.withCore(ctx) {
		t.update(func(b *trialCore) { b.absorbResult(run, res) })
		return
	}
	p := &t.Progress
	p.Samples, p.Step, p.Epoch = max(p.Samples, res.Samples), max(p.Step, res.Step), max(p.Epoch, res.Epoch)
	if len(res.Metrics) > 0 {
		p.Metrics = res.Metrics
		_, seen := res.Metrics[t.Input.ObjectiveMetric]
		p.ObjectiveSeen = p.ObjectiveSeen || seen
	}
	if res.Checkpoint != "" {
		p.Checkpoint = res.Checkpoint
	}
	p.MalformedReports = max(p.MalformedReports, res.Malformed)
	p.Restarts += res.Failures
	if res.Exit.Killed {
		p.Killed++
	}
}

// withCore reports whether this run of the campaign keeps its inline
// trials' books with the trial core and measures them for the pool.
func (x *inliner) withCore(ctx workflow.Context) bool {
	if x.core == nil {
		v := workflow.GetVersion(ctx, "inline-trial-core", workflow.DefaultVersion, 1) == 1
		x.core = &v
	}
	return *x.core
}

// recordsSpans reports whether this run of the campaign keeps its ended
// trials' timelines in their records.
func (x *inliner) recordsSpans(ctx workflow.Context) bool {
	if x.spans == nil {
		v := workflow.GetVersion(ctx, "inline-record-spans", workflow.DefaultVersion, 1) == 1
		x.spans = &v
	}
	return *x.spans
}

// measure tells the pool's JPA what a run that ended trained: the
// samples from its start to its end over its time, launch and start-up
// included, as a trial workflow's profile (trial.sendProfile) under the
// campaign's registration. The estimate is the median of the recent runs
// at one trial's size (inlineProfiler).
func (x *inliner) measure(ctx workflow.Context, r *inlineRun, samples float64) {
	if !x.withCore(ctx) {
		return // began before inline trials were measured
	}
	c := x.c
	if x.prof == nil {
		prof, err := newProfileSender(inlineProfiler)
		if err != nil {
			c.logger.Warn("inline trials are not measured", "error", err)
			return
		}
		x.prof = prof
		x.prof.told(c.spec.Resources.Model, c.spec.Resources.Batch)
	}
	x.prof.ingestRun(&x.clock, c.wfID, len(r.nodes), r.nodeType, r.from, samples, workflow.Now(ctx).Sub(r.launched))
	if !x.profileDue(ctx) { // campaign_inline_rate.go
		return
	}
	byType := func() bool { return true }
	if p, due := x.prof.next(c.wfID, len(r.nodes), r.nodeType, c.spec.Resources.Model, c.spec.Resources.Batch, byType); due {
		c.out.send(ctx, PoolWorkflowID(c.spec.Pool), SignalProfile, p)
		x.profAt = workflow.Now(ctx)
	}
}

// finish ends an in-flight inline trial: its record is kept and the
// campaign handles its final report.
func (x *inliner) finish(ctx workflow.Context, key string, state TrialState, errMsg string) {
	st := x.st()
	i := x.find(key)
	t := st.Trials[i]
	st.Trials = slices.Delete(st.Trials, i, i+1)
	x.trialsGen++
	if len(st.Trials) == 0 {
		st.Trials = nil
	}
	var rep TrialReport
	var rec TrialStatus
	t.update(func(b *trialCore) {
		b.end(workflow.Now(ctx), state, errMsg)
		rep, rec = b.report(t.Input.Owner, true), b.status()
	})
	if !x.recordsSpans(ctx) {
		// Records are cut by size: a run that began before they carried
		// the timeline keeps them as they were, so that it replays.
		rec.Started, rec.Ended, rec.Spans, rec.SpansDropped = time.Time{}, time.Time{}, nil, 0
	}
	st.Records = append(st.Records, rec)
	st.RecordBytes += jsonSize(rec)
	x.c.endTrial(ctx, key, rep)
	tune := x.c.in.Tuning
	full := len(st.Records) >= tune.recordsChunk()
	if !full && st.RecordBytes >= tune.recordsBytes() {
		// Cut by size only in runs that began with this rule.
		full = workflow.GetVersion(ctx, "inline-records-bytes", workflow.DefaultVersion, 1) == 1
	}
	if full {
		x.flushRecords(ctx)
	}
}

// flushRecords keeps the ended trials not yet kept in a new TrialRecords
// workflow.
func (x *inliner) flushRecords(ctx workflow.Context) {
	c, st := x.c, x.st()
	if len(st.Records) == 0 {
		return
	}
	st.Chunks++
	recs := TrialRecords{Campaign: c.spec.Name, Chunk: st.Chunks, Trials: st.Records}
	st.Records, st.RecordBytes = nil, 0
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            TrialRecordsWorkflowID(c.wfID, recs.Chunk),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:         fmt.Sprintf("%s: ended trials, chunk %d (%d trials)", c.spec.Name, recs.Chunk, len(recs.Trials)),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			GleanerCampaign.ValueSet(c.spec.Name), GleanerKind.ValueSet(WorkflowKindRecords), GleanerPool.ValueSet(c.spec.Pool)),
	})
	fut := workflow.ExecuteChildWorkflow(cctx, TrialRecordsWorkflowName, recs)
	c.pendingStarts++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { c.pendingStarts--; c.dirty = true }()
		if err := fut.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			c.logger.Warn("could not keep ended trials in their records workflow", "chunk", recs.Chunk,
				"trials", len(recs.Trials), "error", err)
		}
	})
}

// trials answers QueryTrials.
func (x *inliner) trials() []TrialStatus {
	st := x.st()
	out := make([]TrialStatus, 0, len(st.Trials)+len(st.Records))
	for _, t := range st.Trials {
		t.update(func(b *trialCore) { out = append(out, b.status()) })
	}
	return append(out, st.Records...)
}
