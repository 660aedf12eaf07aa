package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/jpa"
)

// Trial tuning. Variables, not constants, only so tests can shrink them.
var (
	// TrialHistoryThreshold is the history length at which a trial stops
	// its trainer gracefully and continues as new (a long trial sends a
	// progress signal every few seconds).
	TrialHistoryThreshold = 20_000
	// TrialReportInterval bounds how often a running trial reports its
	// metrics to its campaign (the final report is always sent).
	TrialReportInterval = 10 * time.Second
	// TrialHeartbeatTimeout is how long RunTrial may go without a
	// heartbeat before Temporal retries it elsewhere (a dead worker).
	TrialHeartbeatTimeout = 20 * time.Second
	// TrialStartToClose bounds one launch of a trainer.
	TrialStartToClose = 7 * 24 * time.Hour
	// TrialFaultRetries is how many times one run is retried after a lost
	// worker or server on top of its max_restarts: those retries resume
	// from the newest checkpoint and do not count as restarts, but a run
	// that takes its worker down every time must still end.
	TrialFaultRetries = 100
)

const (
	// ErrTypeInvalidTrial marks a trial that can never run.
	ErrTypeInvalidTrial = "InvalidTrial"
)

// TrialWorkflow runs one trial to its end: it registers with its pool,
// runs the trainer (RunTrial) on the nodes the pool assigns, relaunches it
// from its last checkpoint whenever the assignment changes (a resize, a
// preemption to 0 nodes and the resume after it), and reports metrics to
// its campaign. It returns the final TrialReport, also sent to the
// campaign. See docs/workflows.md.
func TrialWorkflow(ctx workflow.Context, in TrialInput) (TrialReport, error) {
	if err := in.validate(); err != nil {
		return TrialReport{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidTrial, err)
	}
	t, err := newTrial(ctx, in)
	if err != nil {
		return TrialReport{}, err
	}
	if err := t.setHandlers(ctx); err != nil {
		return TrialReport{}, err
	}
	t.upsertAttributes(ctx)
	continueAsNew, err := t.loop(ctx)
	if err != nil {
		return TrialReport{}, err
	}
	if continueAsNew {
		return TrialReport{}, t.continueAsNew(ctx)
	}
	rep := t.finish(ctx)
	// A failed trial's workflow fails too (red in the Temporal UI, not a
	// green "Completed"); its report has reached the campaign already.
	if rep.State == TrialFailed && workflow.GetVersion(ctx, "trial-failure-fails-workflow", workflow.DefaultVersion, 1) == 1 {
		return rep, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("trial %s failed: %s", t.in.TrialID, rep.Error), ErrTypeTrialFailed, nil, rep)
	}
	return rep, nil
}

func (in TrialInput) validate() error {
	switch {
	case in.TrialID == "":
		return errors.New("trial_id: empty")
	case in.Pool == "":
		return fmt.Errorf("trial %s: pool: empty", in.TrialID)
	case len(in.Command) == 0 || in.Command[0] == "":
		return fmt.Errorf("trial %s: command: empty", in.TrialID)
	case in.MinNodes < 1:
		return fmt.Errorf("trial %s: min_nodes: %d must be at least 1", in.TrialID, in.MinNodes)
	case in.MaxNodes < in.MinNodes:
		return fmt.Errorf("trial %s: min_nodes %d > max_nodes %d", in.TrialID, in.MinNodes, in.MaxNodes)
	case in.MaxRestarts < 0:
		return fmt.Errorf("trial %s: max_restarts: %d must not be negative", in.TrialID, in.MaxRestarts)
	case !(in.Budget >= 0) || math.IsInf(in.Budget, 0):
		return fmt.Errorf("trial %s: budget: %v must be a finite number ≥ 0 (0: none)", in.TrialID, in.Budget)
	case in.Budget > 0 && !slices.Contains(gleaner.BudgetUnits, in.BudgetUnit):
		return fmt.Errorf("trial %s: budget unit: %q is not one of %s", in.TrialID, in.BudgetUnit, strings.Join(gleaner.BudgetUnits, ", "))
	case in.From != "" && gleaner.ValidateName("from", in.From) != nil:
		return fmt.Errorf("trial %s: %w", in.TrialID, gleaner.ValidateName("from", in.From))
	}
	return nil
}

// trial is the workflow's state. Only the core's progress survives
// continue-as-new; the rest is rebuilt (the pool re-sends the assignment
// when the new run registers again).
type trial struct {
	in   TrialInput
	wfID string
	core *trialCore // the bookkeeping: progress, restarts, reports

	epoch         int64    // newest assignment applied
	assigned      []string // nodes the pool gives the trial now
	assignedType  string
	assignedHosts []HostNodes // the agents holding them (nil: the worker's own)
	reason        string      // why the pool gives none

	paused        bool // by a person or the campaign
	registered    bool // the pool counts the trial as wanting nodes
	stopRequested bool
	atBudget      bool // stopping (or stopped) because progress reached in.Budget
	continuing    bool // stopping the trainer to continue as new

	active *activeRun
	// relaunch: the next launch restarts a run that ended with a failed
	// rank or a lost host (not a rescale); hostFaults counts the lost hosts.
	relaunch   bool
	hostFaults int
	groupFails int // failed ranks since the assignment last changed
	// waitEpoch: a run ended stopped without the trial stopping it (its
	// agent left and stopped the trainer): the next launch waits for an
	// assignment newer than this epoch, not onto the leaving agent's nodes.
	waitEpoch int64

	// pausedSince is set while the trial sits at 0 nodes; the next launch
	// is then a start (after a pause), not a rescale.
	atZero bool

	// prof measures the trial's throughput and tells the pool; a trainer
	// that reports another model or batch makes the next profile go out.
	prof        *profileSender
	reportDirty bool
	lastReport  time.Time
	reportTimer bool

	wake workflow.Channel // update handlers nudge the loop
	out  outbox           // signals to the pool, drained before the run closes
}

// activeRun is one launch of the trainer.
type activeRun struct {
	run        int
	nodes      []string
	future     workflow.Future
	cancel     workflow.CancelFunc
	stopping   bool
	afterPause bool
	seen       bool     // a progress of this run has arrived
	attempt    int      // activity attempt of the latest progress
	hosts      int      // hosts it runs on (>1: one activity per host, a group)
	queues     []string // the task queue of each host's part (nil: the worker's own)
}

func newTrial(ctx workflow.Context, in TrialInput) (*trial, error) {
	prof, err := newProfileSender(trialProfiler)
	if err != nil {
		return nil, err
	}
	wfID := workflow.GetInfo(ctx).WorkflowExecution.ID
	t := &trial{
		in:     in,
		wfID:   wfID,
		core:   newTrialCore(in, wfID),
		atZero: true,
		prof:   prof,
		wake:   workflow.NewBufferedChannel(ctx, 1),
	}
	t.paused = in.Paused
	t.in.State, t.in.Paused = nil, false
	return t, nil
}

func (t *trial) status() TrialStatus { return t.core.status() }

func (t *trial) nudge() { t.wake.SendAsync(struct{}{}) }

func (t *trial) setHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (TrialStatus, error) {
		return t.status(), nil
	}); err != nil {
		return err
	}
	control := func(name string, apply func(), valid func() error) error {
		return workflow.SetUpdateHandlerWithOptions(ctx, name,
			func(ctx workflow.Context, _ ControlRequest) (TrialStatus, error) {
				apply()
				t.nudge()
				return t.status(), nil
			},
			workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, _ ControlRequest) error { return valid() }})
	}
	notTerminal := func(verb string) error {
		if t.core.p.State.Terminal() || t.stopRequested {
			return fmt.Errorf("trial %s is %s: cannot %s", t.in.TrialID, t.core.p.State, verb)
		}
		return nil
	}
	if err := control(UpdatePause, func() { t.paused = true }, func() error {
		if err := notTerminal("pause"); err != nil {
			return err
		}
		if t.paused {
			return fmt.Errorf("trial %s is already paused", t.in.TrialID)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := control(UpdateResume, func() { t.paused = false }, func() error {
		if err := notTerminal("resume"); err != nil {
			return err
		}
		if !t.paused {
			return fmt.Errorf("trial %s is not paused", t.in.TrialID)
		}
		return nil
	}); err != nil {
		return err
	}
	return control(UpdateStop, func() { t.stopRequested = true }, func() error { return notTerminal("stop") })
}

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
func (t *trial) deregister(ctx workflow.Context) {
	t.registered = false
	t.assigned, t.assignedType = nil, ""
	f := workflow.SignalExternalWorkflow(ctx, PoolWorkflowID(t.in.Pool), "", SignalDeregisterTrial, DeregisterTrial{TrialID: t.wfID})
	if err := f.Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("deregistering from pool failed", "pool", t.in.Pool, "error", err)
	}
}

// loop runs until the trial ends (false) or must continue as new (true).
func (t *trial) loop(ctx workflow.Context) (bool, error) {
	assignCh := workflow.GetSignalChannel(ctx, SignalAssignment)
	progressCh := workflow.GetSignalChannel(ctx, SignalProgress)
	controlCh := workflow.GetSignalChannel(ctx, SignalControl)
	for {
		if err := t.step(ctx); err != nil {
			return false, err
		}
		if t.core.p.State.Terminal() {
			return false, nil
		}
		if t.continuing && t.active == nil {
			return true, nil
		}
		sel := workflow.NewSelector(ctx)
		// Progress first: a run's last progress precedes its completion.
		sel.AddReceive(progressCh, func(c workflow.ReceiveChannel, _ bool) {
			var pr Progress
			c.Receive(ctx, &pr)
			t.onProgress(ctx, pr)
		})
		sel.AddReceive(assignCh, func(c workflow.ReceiveChannel, _ bool) {
			var a Assignment
			c.Receive(ctx, &a)
			t.onAssignment(ctx, a)
		})
		sel.AddReceive(controlCh, func(c workflow.ReceiveChannel, _ bool) {
			var ctl Control
			c.Receive(ctx, &ctl)
			t.onControl(ctl)
		})
		sel.AddReceive(t.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		if t.active != nil {
			run := t.active
			sel.AddFuture(run.future, func(f workflow.Future) { t.onRunEnded(ctx, run, f) })
		}
		if t.reportDirty && !t.reportTimer {
			t.reportTimer = true
			wait := TrialReportInterval - workflow.Now(ctx).Sub(t.lastReport)
			sel.AddFuture(workflow.NewTimer(ctx, max(wait, 0)), func(workflow.Future) {
				t.reportTimer = false
				t.reportToCampaign(ctx, false)
			})
		}
		sel.Select(ctx)
	}
}

// step brings the trainer, and the pool's view of the trial, in line
// with what the trial should do now.
func (t *trial) step(ctx workflow.Context) error {
	if t.core.p.State.Terminal() {
		return nil
	}
	if !t.atBudget && t.core.atBudget() {
		// Reached its budget: the trainer stops at a checkpoint (one that
		// reads GLEANER_BUDGET has exited already), and the trial ends
		// completed, holding no nodes, until its searcher continues it.
		t.atBudget, t.stopRequested = true, true
	}
	info := workflow.GetInfo(ctx)
	if !t.continuing && (info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > TrialHistoryThreshold) {
		t.continuing = true
	}
	if a := t.active; a != nil {
		if !a.stopping && (t.stopRequested || t.paused || t.continuing || !slices.Equal(a.nodes, t.assigned) ||
			!slices.Equal(a.queues, hostQueues(t.assignedHosts))) {
			a.stopping = true
			a.cancel()
		}
		return nil
	}
	wantNodes := !t.stopRequested && !t.continuing && !t.paused
	if wantNodes && !t.registered {
		if err := t.register(ctx); err != nil {
			return err
		}
	}
	if !wantNodes && t.registered && !t.continuing {
		t.deregister(ctx)
	}
	switch {
	case t.stopRequested && t.atBudget:
		t.setState(ctx, TrialCompleted)
	case t.stopRequested:
		t.setState(ctx, TrialStopped)
	case t.continuing:
	case t.paused:
		t.setState(ctx, TrialPaused)
	case t.waitEpoch > 0 && t.epoch <= t.waitEpoch:
		// The pool is about to take the nodes back (see waitEpoch).
	case len(t.assigned) >= t.in.MinNodes:
		t.waitEpoch = 0
		t.launch(ctx)
	case t.core.p.Runs > 0 || t.core.p.Samples > 0:
		t.setState(ctx, TrialPaused) // preempted to 0 nodes
	default:
		t.setState(ctx, TrialPending)
	}
	return nil
}

// owner is the trial directory's owner: the first segment's first run id.
func (t *trial) owner(ctx workflow.Context) string {
	if t.in.Owner != "" {
		return t.in.Owner
	}
	info := workflow.GetInfo(ctx)
	if info.FirstRunID != "" {
		return info.FirstRunID
	}
	return info.WorkflowExecution.RunID
}

func (t *trial) launch(ctx workflow.Context) {
	nodes := slices.Clone(t.assigned)
	run := t.core.launched(nodes, !t.atZero && !t.relaunch)
	t.relaunch = false
	actx, cancel := workflow.WithCancel(ctx)
	actx = workflow.WithActivityOptions(actx, runTrialOptions(t.in.MaxRestarts))
	in := RunTrialInput{Trial: t.in, Run: run, Nodes: nodes, NodeType: t.assignedType, ResumeFrom: t.core.p.Checkpoint, Owner: t.owner(ctx),
		Hosts: slices.Clone(t.assignedHosts)}
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
	t.setState(ctx, TrialRunning)
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
	t.reason = a.Reason
	if t.active == nil {
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
	t.prof.profiler.Ingest(jpa.Report{
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
	defer t.released(ctx)
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
	case errors.As(err, &canceled):
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

// end ends the trial in state s (errMsg: a failure's reason).
func (t *trial) end(ctx workflow.Context, s TrialState, errMsg string) {
	changed := t.core.p.State != s
	t.core.end(s, errMsg)
	if changed {
		t.announceState(ctx)
	}
}

func (t *trial) setState(ctx workflow.Context, s TrialState) {
	if t.core.p.State == s {
		return
	}
	t.core.p.State = s
	t.announceState(ctx)
}

// announceState shows a new state in the trial's attributes and tells
// the campaign.
func (t *trial) announceState(ctx workflow.Context) {
	s := t.core.p.State
	t.upsertAttributes(ctx)
	// The campaign shows its trials' states (ClassifyTrial): it hears a
	// change between pending, running and paused at once, without the
	// metrics (the searcher hears nothing new); an end comes with the
	// final report.
	if !s.Terminal() && t.in.CampaignWorkflowID != "" &&
		workflow.GetVersion(ctx, "trial-state-report", workflow.DefaultVersion, 1) == 1 {
		r := t.report(ctx, false)
		r.Metrics = nil
		workflow.SignalExternalWorkflow(ctx, t.in.CampaignWorkflowID, "", SignalTrialReport, r)
	}
}

func (t *trial) upsertAttributes(ctx workflow.Context) {
	_ = workflow.UpsertTypedSearchAttributes(ctx,
		GleanerKind.ValueSet(KindTrial),
		GleanerCampaign.ValueSet(t.in.CampaignID),
		GleanerTrial.ValueSet(t.in.TrialID),
		GleanerPool.ValueSet(t.in.Pool),
		GleanerStatus.ValueSet(string(t.core.p.State)),
	)
	workflow.SetCurrentDetails(ctx, t.details())
}

// details is the markdown the Temporal UI shows for the trial.
func (t *trial) details() string {
	s := fmt.Sprintf("**Trial %s** (%s) — %s\n\n| | |\n|---|---|\n| nodes | %d |\n| samples | %.0f |\n| step | %d |\n| restarts | %d |\n| rescales | %d |\n",
		t.in.TrialID, t.in.CampaignID, t.core.p.State, len(t.core.p.Nodes), t.core.p.Samples, t.core.p.Step, t.core.p.Restarts, t.core.p.Rescales)
	if v, ok := t.core.p.Metrics[t.in.ObjectiveMetric]; ok {
		s += fmt.Sprintf("| %s | %.6g |\n", t.in.ObjectiveMetric, v)
	}
	if t.in.Stage != "" {
		s += fmt.Sprintf("| stage | %s |\n", escapeMarkdown(t.in.Stage))
	}
	if t.in.Budget > 0 {
		s += fmt.Sprintf("| budget | %.0f %s |\n", t.in.Budget, t.in.BudgetUnit)
	}
	if t.in.From != "" {
		s += fmt.Sprintf("| started from | trial %s's checkpoint at %g %s |\n", t.in.From, t.in.FromProgress, t.in.BudgetUnit)
	}
	if t.core.p.Checkpoint != "" {
		s += fmt.Sprintf("| checkpoint | `%s` |\n", t.core.p.Checkpoint)
	}
	if t.core.p.MalformedReports > 0 {
		s += fmt.Sprintf("| malformed report lines skipped | %d |\n", t.core.p.MalformedReports)
	}
	if t.core.p.Killed > 0 {
		s += fmt.Sprintf("| runs killed after ignoring SIGTERM | %d |\n", t.core.p.Killed)
	}
	if t.core.p.BadCheckpoints > 0 {
		s += fmt.Sprintf("| reported checkpoints rejected | %d (latest: %s) |\n", t.core.p.BadCheckpoints, escapeMarkdown(strings.Join(strings.Fields(t.core.p.BadCheckpoint), " ")))
	}
	if t.core.p.State.Terminal() && t.core.p.State != TrialFailed && !t.core.p.ObjectiveSeen {
		s += fmt.Sprintf("\n**Warning:** the trainer never reported the objective metric `%s`.\n", t.in.ObjectiveMetric)
	}
	if t.core.p.Error != "" {
		s += fmt.Sprintf("\nError: %s\n", t.core.p.Error)
	}
	return s
}

func (t *trial) report(ctx workflow.Context, final bool) TrialReport {
	return t.core.report(t.owner(ctx), final)
}

func (t *trial) reportToCampaign(ctx workflow.Context, final bool) {
	t.reportDirty = false
	t.lastReport = workflow.Now(ctx)
	workflow.SetCurrentDetails(ctx, t.details())
	if t.in.CampaignWorkflowID == "" {
		return
	}
	f := workflow.SignalExternalWorkflow(ctx, t.in.CampaignWorkflowID, "", SignalTrialReport, t.report(ctx, final))
	if final {
		// The campaign counts the trial in flight until this arrives.
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("final report to campaign failed", "campaign", t.in.CampaignWorkflowID, "error", err)
		}
	}
}

// finish releases the trial's nodes and sends its final report.
func (t *trial) finish(ctx workflow.Context) TrialReport {
	if err := t.out.drain(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("a signal to the pool was not delivered", "pool", t.in.Pool, "error", err)
	}
	if t.registered {
		t.deregister(ctx)
	}
	t.reportToCampaign(ctx, true)
	return t.report(ctx, true)
}

// continueAsNew carries the durable progress into a new run; signals not
// yet handled are applied first so none is lost.
func (t *trial) continueAsNew(ctx workflow.Context) error {
	drain := func(name string, apply func(workflow.ReceiveChannel)) {
		ch := workflow.GetSignalChannel(ctx, name)
		for ch.Len() > 0 {
			apply(ch)
		}
	}
	drain(SignalProgress, func(c workflow.ReceiveChannel) {
		var pr Progress
		c.Receive(ctx, &pr)
		t.core.absorb(pr.Samples, pr.Step, pr.Epoch, pr.Metrics, pr.Checkpoint)
	})
	drain(SignalControl, func(c workflow.ReceiveChannel) {
		var ctl Control
		c.Receive(ctx, &ctl)
		t.onControl(ctl)
	})
	drain(SignalAssignment, func(c workflow.ReceiveChannel) { c.Receive(ctx, nil) }) // re-sent on register
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	if err := t.out.drain(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("a signal to the pool was not delivered", "pool", t.in.Pool, "error", err)
	}
	next := t.in
	st := t.core.p
	st.Nodes = nil
	next.State, next.Paused = &st, t.paused
	return workflow.NewContinueAsNewError(ctx, TrialWorkflowName, next)
}
