package workflows

// A trial workflow's runs: registering with the pool, its assignments,
// launching the trainer, its progress and profiles, and how a run ends.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/jpa"
)

// register tells the pool the trial wants nodes (starting the pool if it
// is not running).
func (t *trial) register(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	reg := RegisterTrial{
		TrialID:         t.wfID,
		CampaignID:      t.in.CampaignID,
		MinNodes:        t.in.MinNodes,
		MaxNodes:        t.in.MaxNodes,
		NodeType:        t.in.NodeType,
		RescaleUpCost:   t.in.RescaleUpCost,
		RescaleDownCost: t.in.RescaleDownCost,
		GracePeriod:     t.in.GracePeriod,
		Arch:            t.in.Arch(),
		Weight:          t.in.Weight,
	}
	reg.Model, reg.Batch = t.model()
	t.prof.told(reg.Model, reg.Batch)
	err := workflow.ExecuteActivity(actx, RegisterTrialActivityName, RegisterTrialInput{Pool: t.in.Pool, Registration: reg}).Get(ctx, nil)
	if err != nil {
		return fmt.Errorf("registering trial %s with pool %s: %w", t.in.TrialID, t.in.Pool, err)
	}
	t.registered = true
	return nil
}

// deregister gives the trial's nodes back to the pool for good (until it
// registers again); assignments sent before are void.
func (t *trial) deregister(ctx workflow.Context) { t.awaitDeregister(ctx, t.sendDeregister(ctx)) }

// awaitDeregister waits until the server has taken a deregistration.
func (t *trial) awaitDeregister(ctx workflow.Context, f workflow.Future) {
	if err := f.Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("deregistering from pool failed", "pool", t.in.Pool, "error", err)
	}
}

// sendDeregister is deregister without the wait: the future is the
// server's taking the signal.
func (t *trial) sendDeregister(ctx workflow.Context) workflow.Future {
	t.registered = false
	t.assigned, t.assignedType, t.assignedPredicted = nil, "", nil
	return workflow.SignalExternalWorkflow(ctx, PoolWorkflowID(t.in.Pool), "", SignalDeregisterTrial, DeregisterTrial{TrialID: t.wfID})
}

func (t *trial) launch(ctx workflow.Context) {
	nodes := slices.Clone(t.assigned)
	wasRunning := t.core.p.State == TrialRunning
	run := t.core.launched(workflow.Now(ctx), nodes, !t.atZero && !t.relaunch, t.relaunch)
	t.relaunch = false
	actx, cancel := workflow.WithCancel(ctx)
	actx = workflow.WithActivityOptions(actx, runTrialOptions(t.in.MaxRestarts))
	in := RunTrialInput{Trial: t.in, Run: run, Nodes: nodes, NodeType: t.assignedType, ResumeFrom: t.core.p.Checkpoint, Owner: t.owner(ctx),
		Hosts: slices.Clone(t.assignedHosts), PredictedMetrics: t.assignedPredicted}
	var future workflow.Future
	switch len(in.Hosts) {
	case 0:
		future = workflow.ExecuteActivity(actx, RunTrialActivityName, in)
	case 1:
		future = workflow.ExecuteActivity(workflow.WithTaskQueue(actx, in.Hosts[0].TaskQueue), RunTrialActivityName, in)
	default:
		future = runGroup(ctx, actx, in)
		t.core.markGroupRun(run)
	}
	t.active = &activeRun{
		run:        run,
		nodes:      nodes,
		future:     future,
		cancel:     cancel,
		afterPause: t.atZero,
		hosts:      max(len(in.Hosts), 1),
		queues:     hostQueues(in.Hosts),
	}
	t.atZero = false
	if !wasRunning { // (the core put it in TrialRunning)
		t.announceState(ctx)
	}
}

// hostQueues are the task queues of a placement (an agent that restarted
// holds the same nodes on a new queue).
func hostQueues(hosts []HostNodes) []string {
	var qs []string
	for _, h := range hosts {
		qs = append(qs, h.TaskQueue)
	}
	return qs
}

func (t *trial) onAssignment(ctx workflow.Context, a Assignment) {
	if a.Epoch <= t.epoch || !t.registered {
		return // stale, or sent before the trial released its nodes
	}
	t.epoch = a.Epoch
	if !slices.Equal(t.assigned, a.Nodes) {
		// Failures on several hosts are counted per assignment, like a
		// one-host run's per run.
		t.groupFails, t.hostFaults = 0, 0
	}
	t.assigned = slices.Clone(a.Nodes)
	t.assignedType = a.NodeType
	t.assignedHosts = slices.Clone(a.Hosts)
	t.assignedPredicted = a.PredictedMetrics
	t.reason = a.Reason
	if t.active == nil {
		if a.NoReleaseAwaited && workflow.GetVersion(ctx, "assignment-confirmed-if-awaited", workflow.DefaultVersion, 1) == 1 {
			return // the pool waits for no node of the trial's: nothing to confirm
		}
		t.released(ctx) // nothing runs: no node outside the assignment is used
	}
}

// released tells the pool the trainer uses no node outside the newest
// assignment, so nodes taken from the trial can go to others.
func (t *trial) released(ctx workflow.Context) {
	if t.epoch == 0 {
		return
	}
	t.out.send(ctx, PoolWorkflowID(t.in.Pool), SignalReleased, Released{TrialID: t.wfID, Epoch: t.epoch})
}

func (t *trial) onControl(c Control) {
	if t.core.p.State.Terminal() {
		return
	}
	switch c.Action {
	case ControlPause:
		t.paused = true
	case ControlResume:
		t.paused = false
	case ControlStop:
		t.stopRequested = true
	}
}

// model is what the trial trains, for the JPA: the campaign's
// resources.model and .batch, each where set, else what the trainer
// reported.
func (t *trial) model() (string, int) {
	return cmp.Or(t.in.Model, t.core.p.Model), cmp.Or(t.in.Batch, t.core.p.Batch)
}

func (t *trial) onProgress(ctx workflow.Context, pr Progress) {
	if t.core.absorbProgress(pr) {
		t.reportDirty = true
	}
	a := t.active
	if a == nil || a.run != pr.Run || pr.Nodes <= 0 || pr.Time.IsZero() {
		return
	}
	// A new attempt of the run relaunched the trainer: its warm-up is a
	// restart's, not throughput.
	restart := !a.seen
	if pr.Attempt != a.attempt && a.seen && workflow.GetVersion(ctx, "profile-restart-per-attempt", workflow.DefaultVersion, 1) == 1 {
		restart = true
	}
	t.prof.profiler.Ingest(jpa.Progress{
		TrialID:    t.wfID,
		Nodes:      pr.Nodes,
		NodeType:   t.assignedType,
		Samples:    pr.Samples,
		Time:       pr.Time,
		Restart:    restart,
		AfterPause: !a.seen && a.afterPause,
	})
	a.seen, a.attempt = true, pr.Attempt
	t.sendProfile(ctx, pr.Nodes)
}

// sendProfile tells the pool what the trial measured at n nodes of its
// node type when the estimate is new or moved by more than profileChange.
func (t *trial) sendProfile(ctx workflow.Context, n int) {
	model, batch := t.model()
	byType := func() bool {
		return workflow.GetVersion(ctx, "profile-sent-per-type", workflow.DefaultVersion, 1) == 1
	}
	if r, due := t.prof.next(t.wfID, n, t.assignedType, model, batch, byType); due {
		t.out.send(ctx, PoolWorkflowID(t.in.Pool), SignalProfile, r)
	}
}

func (t *trial) onRunEnded(ctx workflow.Context, run *activeRun, f workflow.Future) {
	t.active = nil
	defer func() {
		// A run that ended the trial needs no release of its own: finish
		// deregisters the trial, which frees its nodes.
		if !(t.core.p.State.Terminal() && t.registered && t.finishesTogether(ctx)) {
			t.released(ctx)
		}
	}()
	var res RunTrialResult
	err := f.Get(ctx, &res)
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		t.core.absorbResult(run.run, res)
		// On several hosts the trainers agree on a stop and exit 0 together,
		// so rank 0's trainer may exit 0 before its own stop reached it: a
		// run being stopped did not finish. (One that did finish finishes
		// again at once from its last checkpoint.)
		if res.Outcome == RunCompleted && !(run.hosts > 1 && run.stopping) {
			t.end(ctx, TrialCompleted, "")
			return
		}
		if !run.stopping && len(run.queues) > 0 && workflow.GetVersion(ctx, "stopped-by-agent-waits", workflow.DefaultVersion, 1) == 1 {
			// Its agent stopped it: the pool is taking the nodes. Register
			// again, so the pool re-sends the assignment (a newer epoch)
			// even if it decides the same nodes.
			t.waitEpoch = t.epoch
			t.registered = false
		}
	case errors.As(err, &canceled), canceledBeforeLaunch(ctx, err):
		// Stopped before the trainer started: nothing ran.
	case run.stopping && isTimeout(err):
		// The worker was lost while the run was being stopped: the server
		// does not retry an activity whose cancellation was requested, it
		// times it out. The trainer is gone; the next launch resumes from
		// its newest checkpoint.
	case run.hosts > 1 && run.stopping:
		// Stopped on purpose; a rank that did not end cleanly while it was
		// being stopped changes nothing.
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() && app.Details(&res) == nil {
			t.core.absorb(res.Samples, res.Step, res.Epoch, res.Metrics, res.Checkpoint)
		}
	case run.hosts > 1 && t.groupFailed(ctx, run, err):
		// A rank failed or a host was lost; the run starts again from the
		// newest checkpoint (groupFailed counted it).
	default:
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() && app.Details(&res) == nil {
			t.core.absorbResult(run.run, res)
		}
		t.end(ctx, TrialFailed, errorMessage(err))
		return
	}
	// Stopped on purpose. A relaunch straight onto new nodes is a
	// rescale; a wait at 0 nodes first makes the next launch a start.
	t.core.p.Nodes = nil
	t.atZero = t.paused || t.stopRequested || t.continuing || len(t.assigned) < t.in.MinNodes
}

// canceledBeforeLaunch reports whether a run ended with ErrTypeRunCanceled
// as a failure: stopped before its trainer started, by a heartbeat the
// worker could not deliver (a loaded server), not by a cancellation the
// server reported as one. Nothing ran: it is no failure of the trial.
// (Versioned: runs that failed their trial so replay as they ran.)
func canceledBeforeLaunch(ctx workflow.Context, err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == ErrTypeRunCanceled &&
		workflow.GetVersion(ctx, "run-canceled-before-launch", workflow.DefaultVersion, 1) == 1
}

func isTimeout(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te)
}

// errorMessage is a failed run's reason for people: the application
// error's message (and its cause's), without the SDK's "(type: …,
// retryable: …)", which would land after the log lines a trainer failure
// ends with.
func errorMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		if cause := app.Unwrap(); cause != nil {
			return app.Message() + ": " + errorMessage(cause)
		}
		return app.Message()
	}
	return err.Error()
}
