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
	// metricHistoryLen bounds TrialProgress.History; when full, every
	// other point is dropped, so it spans the whole run at lower density.
	metricHistoryLen = 256
	// profileChange is the relative change of a throughput estimate that
	// is worth telling the pool. Part of the trial's JPA tuning: see
	// trialProfiler.
	profileChange = 0.05
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

// trial is the workflow's state. Only p (TrialProgress) survives
// continue-as-new; the rest is rebuilt (the pool re-sends the assignment
// when the new run registers again).
type trial struct {
	in   TrialInput
	wfID string
	p    TrialProgress

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

	active   *activeRun
	failures map[int]int // trainer failures seen per run (p.Runs numbers runs)
	// relaunch: the next launch restarts a run that ended with a failed
	// rank or a lost host (not a rescale); hostFaults counts the lost hosts.
	relaunch   bool
	hostFaults int
	groupFails int // failed ranks since the assignment last changed
	groupRuns  map[int]bool
	// waitEpoch: a run ended stopped without the trial stopping it (its
	// agent left and stopped the trainer): the next launch waits for an
	// assignment newer than this epoch, not onto the leaving agent's nodes.
	waitEpoch int64

	// pausedSince is set while the trial sits at 0 nodes; the next launch
	// is then a start (after a pause), not a rescale.
	atZero bool

	profiler *jpa.Profiler
	sent     map[profileKey]float64 // throughput last sent to the pool, per count and node type
	sentUp   float64
	sentDown float64
	// toldModel and toldBatch are the model and batch the pool was last
	// told (registration or profile): a trainer that reports another
	// makes the next profile go out.
	toldModel   string
	toldBatch   int
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

// trialProfiler is the JPA tuning a trial workflow measures its
// throughput with (jpa.Profiler runs in workflow code: which estimates it
// makes decides which profile signals the trial sends, so a different
// tuning replays a running trial's history differently). It is spelled
// out here rather than taken from jpa's defaults, so that retuning jpa
// (the simulator, `gleaner jpa eval`) cannot change running trials. To
// change it: keep this value, add the new one under a workflow.GetVersion
// branch in newTrial, and record a history that exercises it
// (internal/integration/record_test.go); TestReplayRecordedHistories
// replays the recorded profiled trial, and TestReplayDetectsProfilerTuning
// shows that history fails to replay under another tuning.
var trialProfiler = jpa.Config{WarmupIntervals: 2, Window: 20}

func newTrial(ctx workflow.Context, in TrialInput) (*trial, error) {
	cfg := trialProfiler
	prof, err := jpa.NewProfiler(&cfg)
	if err != nil {
		return nil, err
	}
	t := &trial{
		in:       in,
		wfID:     workflow.GetInfo(ctx).WorkflowExecution.ID,
		p:        TrialProgress{State: TrialPending},
		failures: map[int]int{},
		atZero:   true,
		profiler: prof,
		sent:     map[profileKey]float64{},
		wake:     workflow.NewBufferedChannel(ctx, 1),
	}
	if in.State != nil {
		t.p = *in.State
		t.p.Nodes = nil
		// A state carried from before ObjectiveSeen existed.
		_, reported := t.p.Metrics[in.ObjectiveMetric]
		t.p.ObjectiveSeen = t.p.ObjectiveSeen || reported || len(t.p.History) > 0
	}
	t.paused = in.Paused
	t.in.State, t.in.Paused = nil, false
	return t, nil
}

func (t *trial) status() TrialStatus {
	return TrialStatus{TrialID: t.in.TrialID, Params: t.in.Params, Stage: t.in.Stage, TrialProgress: t.p}
}

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
		if t.p.State.Terminal() || t.stopRequested {
			return fmt.Errorf("trial %s is %s: cannot %s", t.in.TrialID, t.p.State, verb)
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
	t.toldModel, t.toldBatch = reg.Model, reg.Batch
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
		if t.p.State.Terminal() {
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
	if t.p.State.Terminal() {
		return nil
	}
	if t.in.Budget > 0 && !t.atBudget && t.progress() >= t.in.Budget*(1-budgetSlack) {
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
	case t.p.Runs > 0 || t.p.Samples > 0:
		t.setState(ctx, TrialPaused) // preempted to 0 nodes
	default:
		t.setState(ctx, TrialPending)
	}
	return nil
}

// budgetSlack is the relative rounding allowed on a budget, as on ASHA's
// rungs: a budget computed as r·η^k may land an ulp above the whole
// number a trainer reports at.
const budgetSlack = 1e-9

// progress is the trial's progress in its budget unit.
func (t *trial) progress() float64 {
	switch t.in.BudgetUnit {
	case gleaner.BudgetSteps:
		return float64(t.p.Step)
	case gleaner.BudgetEpochs:
		return t.p.Epoch
	}
	return t.p.Samples
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
	t.p.Runs++
	if !t.atZero && !t.relaunch {
		t.p.Rescales++
	}
	t.relaunch = false
	actx, cancel := workflow.WithCancel(ctx)
	actx = workflow.WithActivityOptions(actx, runTrialOptions(t.in.MaxRestarts))
	nodes := slices.Clone(t.assigned)
	in := RunTrialInput{Trial: t.in, Run: t.p.Runs, Nodes: nodes, NodeType: t.assignedType, ResumeFrom: t.p.Checkpoint, Owner: t.owner(ctx),
		Hosts: slices.Clone(t.assignedHosts)}
	var future workflow.Future
	switch len(in.Hosts) {
	case 0:
		future = workflow.ExecuteActivity(actx, RunTrialActivityName, in)
	case 1:
		future = workflow.ExecuteActivity(workflow.WithTaskQueue(actx, in.Hosts[0].TaskQueue), RunTrialActivityName, in)
	default:
		future = runGroup(ctx, actx, in)
		if t.groupRuns == nil {
			t.groupRuns = map[int]bool{}
		}
		t.groupRuns[in.Run] = true
	}
	t.active = &activeRun{
		run:        t.p.Runs,
		nodes:      nodes,
		future:     future,
		cancel:     cancel,
		afterPause: t.atZero,
		hosts:      max(len(in.Hosts), 1),
		queues:     hostQueues(in.Hosts),
	}
	t.atZero = false
	t.p.Nodes = nodes
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
	if t.p.State.Terminal() {
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
	return cmp.Or(t.in.Model, t.p.Model), cmp.Or(t.in.Batch, t.p.Batch)
}

func (t *trial) onProgress(ctx workflow.Context, pr Progress) {
	if pr.Model != "" {
		t.p.Model = pr.Model
	}
	if pr.Batch > 0 {
		t.p.Batch = pr.Batch
	}
	t.countFailures(pr.Run, pr.Failures)
	t.absorb(pr.Samples, pr.Step, pr.Epoch, pr.Metrics, pr.Checkpoint)
	t.p.MalformedReports = max(t.p.MalformedReports, pr.Malformed)
	t.noteBadCheckpoints(pr.BadCheckpoints, pr.BadCheckpoint)
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
	t.profiler.Ingest(jpa.Report{
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

// countFailures adds the trainer failures of run not counted yet: the
// trial's restarts. Retries after a lost worker or server are not failures.
func (t *trial) countFailures(run, failures int) {
	if t.groupRuns[run] {
		return // a run on several hosts: groupFailed counts its failure
	}
	// A run relaunches after each failure up to max_restarts; the one past
	// it ends the trial and is no restart.
	failures = min(failures, t.in.MaxRestarts)
	if failures > t.failures[run] {
		t.p.Restarts += failures - t.failures[run]
		t.failures[run] = failures
	}
}

func (t *trial) noteBadCheckpoints(n int, last string) {
	if n > t.p.BadCheckpoints {
		t.p.BadCheckpoints, t.p.BadCheckpoint = n, last
	}
}

// absorb keeps the newest progress: samples never go backwards (a late
// signal from an older run is ignored), a checkpoint is kept once written.
func (t *trial) absorb(samples float64, step int64, epoch float64, metrics map[string]float64, checkpoint string) {
	if checkpoint != "" {
		t.p.Checkpoint = checkpoint
	}
	if samples < t.p.Samples {
		return
	}
	t.p.Samples, t.p.Step, t.p.Epoch = samples, step, epoch
	if len(metrics) > 0 {
		t.p.Metrics = metrics
		if _, ok := metrics[t.in.ObjectiveMetric]; ok {
			t.p.ObjectiveSeen = true
		}
		if v, ok := metrics[t.in.ObjectiveMetric]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			t.p.History = appendBounded(t.p.History, MetricPoint{Samples: samples, Value: v})
		}
		t.reportDirty = true
	}
}

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

// profileKey is a count and node type a profile was sent for: the pool
// keeps one per both.
type profileKey struct {
	nodes    int
	nodeType string
}

// sendProfile tells the pool what the trial measured at n nodes of its
// node type when the estimate is new or moved by more than profileChange.
func (t *trial) sendProfile(ctx workflow.Context, n int) {
	est, found := t.profiler.Estimate(t.wfID, n, t.assignedType)
	up, down := t.profiler.RescaleCosts(t.wfID)
	if !found || est.Throughput <= 0 {
		return
	}
	key := profileKey{n, t.assignedType}
	if workflow.GetVersion(ctx, "profile-sent-per-type", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		key.nodeType = "" // as recorded before: by count alone
	}
	old, had := t.sent[key]
	costsMoved := up.Seconds != t.sentUp || down.Seconds != t.sentDown
	model, batch := t.model()
	modelMoved := model != t.toldModel || batch != t.toldBatch
	if had && math.Abs(est.Throughput-old) <= profileChange*old && !costsMoved && !modelMoved {
		return
	}
	t.sent[key], t.sentUp, t.sentDown = est.Throughput, up.Seconds, down.Seconds
	t.toldModel, t.toldBatch = model, batch
	t.out.send(ctx, PoolWorkflowID(t.in.Pool), SignalProfile, ProfileReport{
		TrialID:         t.wfID,
		Nodes:           n,
		NodeType:        t.assignedType,
		Throughput:      est.Throughput,
		Spread:          est.Spread,
		RescaleUpCost:   up.Seconds,
		RescaleDownCost: down.Seconds,
		Model:           model,
		Batch:           batch,
	})
}

func (t *trial) onRunEnded(ctx workflow.Context, run *activeRun, f workflow.Future) {
	t.active = nil
	defer t.released(ctx)
	var res RunTrialResult
	err := f.Get(ctx, &res)
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		if res.Exit.Killed {
			t.p.Killed++
		}
		t.absorbResult(run.run, res)
		// On several hosts the trainers agree on a stop and exit 0 together,
		// so rank 0's trainer may exit 0 before its own stop reached it: a
		// run being stopped did not finish. (One that did finish finishes
		// again at once from its last checkpoint.)
		if res.Outcome == RunCompleted && !(run.hosts > 1 && run.stopping) {
			t.p.Nodes = nil
			t.setState(ctx, TrialCompleted)
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
			t.absorb(res.Samples, res.Step, res.Epoch, res.Metrics, res.Checkpoint)
		}
	case run.hosts > 1 && t.groupFailed(ctx, run, err):
		// A rank failed or a host was lost; the run starts again from the
		// newest checkpoint (groupFailed counted it).
	default:
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() && app.Details(&res) == nil {
			t.absorbResult(run.run, res)
		}
		t.p.Error = errorMessage(err)
		t.p.Nodes = nil
		t.setState(ctx, TrialFailed)
		return
	}
	// Stopped on purpose. A relaunch straight onto new nodes is a
	// rescale; a wait at 0 nodes first makes the next launch a start.
	t.p.Nodes = nil
	t.atZero = t.paused || t.stopRequested || t.continuing || len(t.assigned) < t.in.MinNodes
}

func isTimeout(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te)
}

// absorbResult folds a run's result (or a failed run's last state) in.
func (t *trial) absorbResult(run int, res RunTrialResult) {
	t.absorb(res.Samples, res.Step, res.Epoch, res.Metrics, res.Checkpoint)
	t.p.MalformedReports = max(t.p.MalformedReports, res.Malformed)
	t.countFailures(run, res.Failures)
	t.noteBadCheckpoints(res.BadCheckpoints, res.BadCheckpoint)
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

func (t *trial) setState(ctx workflow.Context, s TrialState) {
	if t.p.State == s {
		return
	}
	t.p.State = s
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
		GleanerStatus.ValueSet(string(t.p.State)),
	)
	workflow.SetCurrentDetails(ctx, t.details())
}

// details is the markdown the Temporal UI shows for the trial.
func (t *trial) details() string {
	s := fmt.Sprintf("**Trial %s** (%s) — %s\n\n| | |\n|---|---|\n| nodes | %d |\n| samples | %.0f |\n| step | %d |\n| restarts | %d |\n| rescales | %d |\n",
		t.in.TrialID, t.in.CampaignID, t.p.State, len(t.p.Nodes), t.p.Samples, t.p.Step, t.p.Restarts, t.p.Rescales)
	if v, ok := t.p.Metrics[t.in.ObjectiveMetric]; ok {
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
	if t.p.Checkpoint != "" {
		s += fmt.Sprintf("| checkpoint | `%s` |\n", t.p.Checkpoint)
	}
	if t.p.MalformedReports > 0 {
		s += fmt.Sprintf("| malformed report lines skipped | %d |\n", t.p.MalformedReports)
	}
	if t.p.Killed > 0 {
		s += fmt.Sprintf("| runs killed after ignoring SIGTERM | %d |\n", t.p.Killed)
	}
	if t.p.BadCheckpoints > 0 {
		s += fmt.Sprintf("| reported checkpoints rejected | %d (latest: %s) |\n", t.p.BadCheckpoints, escapeMarkdown(strings.Join(strings.Fields(t.p.BadCheckpoint), " ")))
	}
	if t.p.State.Terminal() && t.p.State != TrialFailed && !t.p.ObjectiveSeen {
		s += fmt.Sprintf("\n**Warning:** the trainer never reported the objective metric `%s`.\n", t.in.ObjectiveMetric)
	}
	if t.p.Error != "" {
		s += fmt.Sprintf("\nError: %s\n", t.p.Error)
	}
	return s
}

func (t *trial) report(ctx workflow.Context, final bool) TrialReport {
	r := TrialReport{
		TrialID:    t.in.TrialID,
		WorkflowID: t.wfID,
		Number:     t.in.Number,
		Params:     t.in.Params,
		State:      t.p.State,
		Final:      final,
		Metrics:    t.p.Metrics,
		Samples:    t.p.Samples,
		Step:       t.p.Step,
		Epoch:      t.p.Epoch,
		Restarts:   t.p.Restarts,
		Rescales:   t.p.Rescales,
		Error:      t.p.Error,
		Stage:      t.in.Stage,
		Segment:    t.in.Segment,

		ObjectiveMissing: final && t.p.State != TrialFailed && !t.p.ObjectiveSeen,
	}
	if final && t.p.State == TrialCompleted && t.in.Budget > 0 {
		r.Resume = &TrialResume{Owner: t.owner(ctx), Samples: t.p.Samples, Step: t.p.Step, Epoch: t.p.Epoch,
			Checkpoint: t.p.Checkpoint, Runs: t.p.Runs, Restarts: t.p.Restarts, Rescales: t.p.Rescales, Seen: t.p.ObjectiveSeen}
	}
	return r
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
		t.absorb(pr.Samples, pr.Step, pr.Epoch, pr.Metrics, pr.Checkpoint)
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
	st := t.p
	st.Nodes = nil
	next.State, next.Paused = &st, t.paused
	return workflow.NewContinueAsNewError(ctx, TrialWorkflowName, next)
}
