package workflows

import (
	"encoding/json"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

// Inline trials (spec trial.inline): each trial is one RunTrial activity
// of its campaign's workflow, not a workflow of its own. The campaign
// registers with its pool as one elastic job (its workflow id is the
// "trial" id the pool assigns nodes to; min_nodes is one trial's size,
// max_nodes that size times the trials it could run) and packs its trials
// onto the nodes it is given: a trial that ends frees its nodes for the
// next one at once, in the same workflow task, without asking the pool.
// The pool's decisions still hold: nodes it takes back stop the trials on
// them (graceful, at a checkpoint), which wait to resume from that
// checkpoint, and the campaign confirms the release (SignalReleased) once
// no trainer is left on them. See docs/workflows-campaign.md.

// InlineState is an inline campaign's trials and nodes, carried across
// continue-as-new in CampaignState.Inline.
type InlineState struct {
	// Epoch, Nodes, NodeType and Hosts are the pool's latest assignment
	// to the campaign (Hosts nil: the pool worker's own nodes).
	Epoch    int64       `json:"epoch,omitempty"`
	Nodes    []string    `json:"nodes,omitempty"`
	NodeType string      `json:"node_type,omitempty"`
	Hosts    []HostNodes `json:"hosts,omitempty"`
	// Told is the max_nodes the pool was last told; 0: not registered.
	Told int `json:"told,omitempty"`
	// Trials are the in-flight trials, in the order they get nodes.
	Trials []InlineTrial `json:"trials,omitempty"`
	// Records are ended trials not yet kept in a TrialRecords workflow;
	// Chunks counts those workflows.
	Records []TrialStatus `json:"records,omitempty"`
	Chunks  int           `json:"chunks,omitempty"`
	// RecordBytes is the size of Records as JSON (Tuning.RecordsBytes).
	RecordBytes int `json:"record_bytes,omitempty"`
}

// InlineTrial is one in-flight inline trial: how to launch it and how far
// it got.
type InlineTrial struct {
	// Key is its InFlightTrial.WorkflowID (no such workflow exists: the
	// id names the trial's segment, as for a trial workflow).
	Key      string        `json:"key"`
	Input    TrialInput    `json:"input"`
	Progress TrialProgress `json:"progress"`
	// Stop: the searcher stopped it; it ends stopped.
	Stop bool `json:"stop,omitempty"`
}

// MarshalJSON writes the trial's spans as a gleaner.TrialTimeline (a
// tenth of their size as objects): an inline campaign carries its whole
// window of trials across continue-as-new.
func (t InlineTrial) MarshalJSON() ([]byte, error) {
	w := inlineTrialJSON{inlineTrialFields: inlineTrialFields(t), Timeline: t.Progress.Spans}
	w.Progress.Spans = nil
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *InlineTrial) UnmarshalJSON(data []byte) error {
	var w inlineTrialJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*t = InlineTrial(w.inlineTrialFields)
	if w.Timeline != nil {
		t.Progress.Spans = w.Timeline
	}
	return nil
}

type inlineTrialJSON struct {
	inlineTrialFields
	Timeline gleaner.TrialTimeline `json:"timeline,omitempty"`
}

// inlineTrialFields is InlineTrial without its JSON methods.
type inlineTrialFields InlineTrial

// inlineRun is one running RunTrial of an inline trial.
type inlineRun struct {
	key      string
	run      int // the trial's run number
	nodes    []string
	nodeType string
	queue    string // the agent's task queue; "" for the worker's own nodes
	cancel   workflow.CancelFunc
	stopping bool
	// launched and from are when the run was launched and the samples it
	// started from: its throughput, once it ends (measure).
	launched time.Time
	from     float64
}

// inliner runs a campaign's inline trials.
type inliner struct {
	c       *campaign
	running map[string]*inlineRun
	// registering: a registration is on its way to the pool.
	registering bool
	// releaseDue: the pool took nodes; confirm once no trainer is on them.
	releaseDue bool
	draining   bool
	// prof measures the trials' throughput for the pool's JPA (measure);
	// clock lays their runs end to end for it.
	prof  *profileSender
	clock runClock
	// profAt is when a profile last went to the pool (profileDue).
	profAt time.Time
	// core: whether this run keeps the trials' books with the trial core
	// (withCore); spans: whether its records carry the trials' timelines
	// (recordsSpans); nil until asked.
	core  *bool
	spans *bool
	// pipe queues the next trial behind each run (campaign_pipeline.go);
	// nil: not pipelined.
	pipe *pipeline
	// at indexes InlineState.Trials by key for find, as they were when
	// trialsGen (bumped by start and finish) was atGen.
	at               map[string]int
	trialsGen, atGen int
}

// newInliner makes the inliner of c, with pipe its queue (nil: not
// pipelined).
func newInliner(c *campaign, pipe *pipeline) *inliner {
	if c.st.Inline == nil {
		c.st.Inline = &InlineState{}
	}
	x := &inliner{c: c, running: map[string]*inlineRun{}}
	x.pipe = pipe
	return x
}

func (x *inliner) st() *InlineState { return x.c.st.Inline }

// start puts a trial the campaign started in line for nodes.
func (x *inliner) start(ctx workflow.Context, key string, in TrialInput) {
	if in.Owner == "" {
		in.Owner = workflow.GetInfo(ctx).FirstRunID
	}
	b := newTrialCore(in, key)
	b.p.State = TrialPending
	b.begin(workflow.Now(ctx))
	b.p.State = b.waiting() // (a parked trial's next segment waits paused, as in a trial workflow)
	x.st().Trials = append(x.st().Trials, InlineTrial{Key: key, Input: b.in, Progress: b.p})
	x.trialsGen++
}

// update runs f on the trial's bookkeeping (the trial core a trial
// workflow holds too) and keeps the progress it leaves.
func (t *InlineTrial) update(f func(b *trialCore)) {
	b := &trialCore{in: t.Input, key: t.Key, p: t.Progress}
	f(b)
	t.Progress = b.p
}

// find is the index of the in-flight trial key in InlineState.Trials, or
// -1. The workflow asks it for every run in every task: with 150 trials in
// flight (50 pipelined two deep) a scan per call was most of the
// campaign's own work. Keys are unique (TrialSegmentWorkflowID), so the
// index finds what a scan from the front would.
func (x *inliner) find(key string) int {
	trials := x.st().Trials
	if i, ok := x.at[key]; ok && i < len(trials) && trials[i].Key == key {
		return i
	}
	if x.at != nil && x.atGen == x.trialsGen {
		return -1
	}
	x.at, x.atGen = make(map[string]int, len(trials)), x.trialsGen
	for i, t := range trials {
		x.at[t.Key] = i
	}
	if i, ok := x.at[key]; ok {
		return i
	}
	return -1
}

// demand is the nodes the campaign could use now.
func (x *inliner) demand() int {
	c := x.c
	if c.st.Paused {
		return 0
	}
	trials := min(len(x.st().Trials), c.spec.Budget.MaxConcurrent) // (pipelined: the queued ones besides)
	if !c.st.Stopping && !c.st.SearchDone {
		trials = c.spec.Budget.MaxConcurrent
	}
	return trials * c.spec.Resources.MinNodes
}

// step brings the trials' runs and the pool's view of the campaign in line
// with what the campaign should do now.
func (x *inliner) step(ctx workflow.Context) {
	c, st := x.c, x.st()
	want := x.demand()
	switch {
	case x.registering || x.draining:
		// (A run about to continue as new keeps its registration.)
	case want == 0 && st.Told > 0 && len(x.running) == 0:
		x.deregister(ctx)
	case want > 0 && (st.Told == 0 || (want < st.Told && len(st.Nodes) > want)):
		x.register(ctx, want)
	}
	// Runs on nodes the pool took back, or whose agent now serves them on
	// another queue, stop (and wait to resume).
	queues := x.nodeQueues()
	for _, key := range x.runKeys() {
		r := x.running[key]
		gone := slices.ContainsFunc(r.nodes, func(n string) bool { q, ok := queues[n]; return !ok || q != r.queue })
		if !r.stopping && (gone || x.shouldStop(key)) {
			r.stopping = true
			r.cancel()
		}
	}
	if x.releaseDue && !x.onTakenNodes() {
		x.releaseDue = false
		c.out.send(ctx, PoolWorkflowID(c.spec.Pool), SignalReleased, Released{TrialID: c.wfID, Epoch: st.Epoch})
	}
	// Waiting trials that are to end do so now.
	for i := 0; i < len(st.Trials); i++ {
		t := st.Trials[i]
		if x.running[t.Key] == nil && (c.st.Stopping || t.Stop) {
			x.finish(ctx, t.Key, TrialStopped, "")
			i--
		}
	}
	if c.st.Paused || c.st.Stopping || x.draining {
		return
	}
	free := x.freeNodes(queues)
	for _, t := range slices.Clone(st.Trials) {
		if x.running[t.Key] != nil {
			continue
		}
		nodes, queue, ok := pickNodes(free, c.spec.Resources.MinNodes)
		if !ok {
			break
		}
		x.launch(ctx, t.Key, nodes, queue)
	}
	if x.pipe != nil {
		x.queue(ctx)
		x.markQueued(ctx)
	}
}

// markQueued brings the timelines of pipelined trials in line with the
// states their queue gave them (queue moves a queued run's trial to
// pending, and to running once the run before it ended).
func (x *inliner) markQueued(ctx workflow.Context) {
	st := x.st()
	for i := range st.Trials {
		t := &st.Trials[i]
		if spans := t.Progress.Spans; len(spans) > 0 && spans[len(spans)-1].State == t.Progress.State &&
			spans[len(spans)-1].Nodes == len(t.Progress.Nodes) {
			continue
		}
		t.update(func(b *trialCore) { b.mark(workflow.Now(ctx), false, false) })
	}
}

// shouldStop reports whether a running trial is to stop: the campaign
// pauses, stops or continues as new, or the searcher stopped it.
func (x *inliner) shouldStop(key string) bool {
	c := x.c
	if c.st.Paused || c.st.Stopping || x.draining {
		return true
	}
	i := x.find(key)
	return i >= 0 && x.st().Trials[i].Stop
}

// runKeys lists the running trials in a deterministic order.
func (x *inliner) runKeys() []string {
	keys := make([]string, 0, len(x.running))
	for k := range x.running {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if x.pipe != nil {
		x.pipe.queuedFirst(keys)
	}
	return keys
}

// runTrialOptions are a trial's RunTrial activity options (a trial
// workflow's run and an inline trial's alike).
func runTrialOptions(maxRestarts int) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: TrialStartToClose,
		HeartbeatTimeout:    TrialHeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			// The activity ends the run for good once the trainer failed
			// max_restarts+1 times; the rest are lost workers and servers.
			MaximumAttempts:        int32(maxRestarts + 1 + TrialFaultRetries),
			NonRetryableErrorTypes: []string{ErrTypeInvalidTrial},
		},
	}
}

func (x *inliner) launch(ctx workflow.Context, key string, nodes []string, queue string) {
	x.launchAfter(ctx, key, nodes, queue, "")
}

// launchAfter launches a trial's run queued behind the run after (a
// RunRef; "" for none) on the same nodes.
func (x *inliner) launchAfter(ctx workflow.Context, key string, nodes []string, queue, after string) {
	st := x.st()
	i := x.find(key)
	t := &st.Trials[i]
	from := t.Progress.Samples
	var run int
	t.update(func(b *trialCore) {
		// A relaunch (after the pool took the nodes) waited at 0 nodes:
		// a start, not a rescale.
		run = b.launched(workflow.Now(ctx), nodes, false, false)
	})
	in := RunTrialInput{Trial: t.Input, Run: run, Nodes: nodes, NodeType: st.NodeType,
		ResumeFrom: t.Progress.Checkpoint, Owner: t.Input.Owner, Quiet: true, After: after}
	actx, cancel := workflow.WithCancel(ctx)
	actx = workflow.WithActivityOptions(actx, runTrialOptions(t.Input.MaxRestarts))
	if queue != "" {
		h := st.Hosts[slices.IndexFunc(st.Hosts, func(h HostNodes) bool { return h.TaskQueue == queue })]
		in.Hosts = []HostNodes{{Agent: h.Agent, TaskQueue: h.TaskQueue, Addr: h.Addr, Nodes: nodes}}
		actx = workflow.WithTaskQueue(actx, queue)
	}
	f := workflow.ExecuteActivity(actx, RunTrialActivityName, in)
	r := &inlineRun{key: key, run: run, nodes: nodes, nodeType: st.NodeType, queue: queue, cancel: cancel,
		launched: workflow.Now(ctx), from: from}
	x.running[key] = r
	workflow.Go(ctx, func(ctx workflow.Context) {
		var res RunTrialResult
		err := f.Get(ctx, &res)
		x.ended(ctx, r, res, err)
		x.c.dirty = true
	})
}

// stopTrial stops one trial (the searcher's Stop).
func (x *inliner) stopTrial(key string) {
	if i := x.find(key); i >= 0 {
		x.st().Trials[i].Stop = true
		x.c.dirty = true
	}
}

// drain stops launching, lets running trials finish for up to
// Tuning.DrainWait, stops the rest at a checkpoint and waits for them.
func (x *inliner) drain(ctx workflow.Context) error {
	x.draining = true
	if x.pipe != nil && x.pipe.drainCancels {
		x.pipe.cancelQueued(x)
	}
	timedOut := false
	timer := workflow.NewTimer(ctx, x.c.in.Tuning.drainWait())
	workflow.Go(ctx, func(ctx workflow.Context) {
		_ = timer.Get(ctx, nil)
		timedOut = true
	})
	if err := workflow.Await(ctx, func() bool { return len(x.running) == 0 || timedOut }); err != nil {
		return err
	}
	for _, key := range x.runKeys() {
		if r := x.running[key]; !r.stopping {
			r.stopping = true
			r.cancel()
		}
	}
	return workflow.Await(ctx, func() bool { return len(x.running) == 0 && !x.registering })
}

// close ends an inline campaign: its last records are kept and its nodes
// go back to the pool.
func (x *inliner) close(ctx workflow.Context) {
	x.flushRecords(ctx)
	if x.st().Told > 0 || x.registering {
		_ = workflow.Await(ctx, func() bool { return !x.registering })
		x.deregister(ctx)
	}
}
