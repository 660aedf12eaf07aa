package workflows

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

// Trial tuning (what a test needs smaller travels in the trial's input:
// TrialInput.ReportInterval).
const (
	// TrialHistoryThreshold is the history length at which a trial stops
	// its trainer gracefully and continues as new (a long trial sends a
	// progress signal every few seconds).
	TrialHistoryThreshold = 20_000
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
	// assignedPredicted are the assignment's predicted metrics, for runs
	// on agent hosts (Assignment.PredictedMetrics).
	assignedPredicted map[string]float64
	reason            string // why the pool gives none

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
	t.core.begin(workflow.Now(ctx))
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
			wait := reportInterval(t.in) - workflow.Now(ctx).Sub(t.lastReport)
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
	default:
		t.setState(ctx, t.core.waiting()) // pending, or paused: preempted to 0 nodes
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
