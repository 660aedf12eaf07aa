package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
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

// TrialRecordsWorkflow keeps a chunk of ended inline trials: it returns
// its input, so the records are readable for the namespace's retention
// (client.Trials reads them).
func TrialRecordsWorkflow(ctx workflow.Context, in TrialRecords) (TrialRecords, error) {
	return in, nil
}

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
	// core: whether this run keeps the trials' books with the trial core
	// (withCore); nil until asked.
	core *bool
	// pipe queues the next trial behind each run (campaign_pipeline.go);
	// nil: not pipelined.
	pipe *pipeline
}

func newInliner(c *campaign, pipelined bool) *inliner {
	if c.st.Inline == nil {
		c.st.Inline = &InlineState{}
	}
	x := &inliner{c: c, running: map[string]*inlineRun{}}
	if pipelined {
		x.pipe = &pipeline{behind: map[string]string{}}
	}
	return x
}

func (x *inliner) st() *InlineState { return x.c.st.Inline }

// listen handles the pool's assignments to the campaign.
func (x *inliner) listen(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalAssignment)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var a Assignment
			ch.Receive(ctx, &a)
			x.onAssignment(a)
		}
	})
	x.c.assignments = ch
}

func (x *inliner) onAssignment(a Assignment) {
	st := x.st()
	// (While the registration is on its way the pool may answer first: in
	// one workflow task the signal can be handled before the activity's
	// completion is.)
	if a.Epoch <= st.Epoch || (st.Told == 0 && !x.registering) {
		return // stale, or sent before the campaign left the pool
	}
	if slices.ContainsFunc(st.Nodes, func(n string) bool { return !slices.Contains(a.Nodes, n) }) {
		x.releaseDue = true
	}
	st.Epoch, st.Nodes, st.NodeType, st.Hosts = a.Epoch, slices.Clone(a.Nodes), a.NodeType, slices.Clone(a.Hosts)
	x.c.dirty = true
}

// start puts a trial the campaign started in line for nodes.
func (x *inliner) start(ctx workflow.Context, key string, in TrialInput) {
	if in.Owner == "" {
		in.Owner = workflow.GetInfo(ctx).FirstRunID
	}
	b := newTrialCore(in, key)
	b.p.State = TrialPending
	x.st().Trials = append(x.st().Trials, InlineTrial{Key: key, Input: b.in, Progress: b.p})
}

// update runs f on the trial's bookkeeping (the trial core a trial
// workflow holds too) and keeps the progress it leaves.
func (t *InlineTrial) update(f func(b *trialCore)) {
	b := &trialCore{in: t.Input, key: t.Key, p: t.Progress}
	f(b)
	t.Progress = b.p
}

func (x *inliner) find(key string) int {
	return slices.IndexFunc(x.st().Trials, func(t InlineTrial) bool { return t.Key == key })
}

// demand is the nodes the campaign could use now.
func (x *inliner) demand() int {
	c := x.c
	if c.st.Paused {
		return 0
	}
	trials := min(len(x.st().Trials), c.spec.Budget.MaxConcurrent) // (pipelined: twice as many in flight)
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

// nodeQueues maps each assigned node to the task queue of the agent
// holding it ("" for the worker's own).
func (x *inliner) nodeQueues() map[string]string {
	st := x.st()
	q := make(map[string]string, len(st.Nodes))
	for _, n := range st.Nodes {
		q[n] = ""
	}
	for _, h := range st.Hosts {
		for _, n := range h.Nodes {
			q[n] = h.TaskQueue
		}
	}
	return q
}

// onTakenNodes reports whether a run is still on a node the campaign no
// longer holds.
func (x *inliner) onTakenNodes() bool {
	st := x.st()
	for _, r := range x.running {
		if slices.ContainsFunc(r.nodes, func(n string) bool { return !slices.Contains(st.Nodes, n) }) {
			return true
		}
	}
	return false
}

// freeNodes are the assigned nodes no run is on, grouped by task queue in
// the order of the assignment.
type queueNodes struct {
	queue string
	nodes []string
}

func (x *inliner) freeNodes(queues map[string]string) []queueNodes {
	used := map[string]bool{}
	for _, r := range x.running {
		for _, n := range r.nodes {
			used[n] = true
		}
	}
	var out []queueNodes
	for _, n := range x.st().Nodes {
		if used[n] {
			continue
		}
		q := queues[n]
		i := slices.IndexFunc(out, func(g queueNodes) bool { return g.queue == q })
		if i < 0 {
			out = append(out, queueNodes{queue: q})
			i = len(out) - 1
		}
		out[i].nodes = append(out[i].nodes, n)
	}
	return out
}

// pickNodes takes size nodes of one host from free.
func pickNodes(free []queueNodes, size int) ([]string, string, bool) {
	for i := range free {
		if len(free[i].nodes) >= size {
			nodes := slices.Clone(free[i].nodes[:size])
			free[i].nodes = free[i].nodes[size:]
			return nodes, free[i].queue, true
		}
	}
	return nil, "", false
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
	st := x.st()
	i := x.find(key)
	t := &st.Trials[i]
	from := t.Progress.Samples
	var run int
	t.update(func(b *trialCore) {
		// A relaunch (after the pool took the nodes) waited at 0 nodes:
		// a start, not a rescale.
		run = b.launched(nodes, false)
		b.p.State = TrialRunning
	})
	in := RunTrialInput{Trial: t.Input, Run: run, Nodes: nodes, NodeType: st.NodeType,
		ResumeFrom: t.Progress.Checkpoint, Owner: t.Input.Owner, Quiet: true}
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

// ended folds a run's end into its trial: finished, failed, or stopped
// on purpose (then it waits for nodes again, or ends stopped).
func (x *inliner) ended(ctx workflow.Context, r *inlineRun, res RunTrialResult, err error) {
	delete(x.running, r.key)
	i := x.find(r.key)
	if i < 0 {
		return
	}
	t := &x.st().Trials[i]
	t.Progress.Nodes = nil
	t.Progress.State = TrialPending
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		x.absorb(ctx, t, r.run, res)
		x.measure(ctx, r, res.Samples)
		if res.Outcome == RunCompleted {
			x.finish(ctx, r.key, TrialCompleted, "")
			return
		}
	case errors.As(err, &canceled):
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
	byType := func() bool { return true }
	if p, due := x.prof.next(c.wfID, len(r.nodes), r.nodeType, c.spec.Resources.Model, c.spec.Resources.Batch, byType); due {
		c.out.send(ctx, PoolWorkflowID(c.spec.Pool), SignalProfile, p)
	}
}

// finish ends an in-flight inline trial: its record is kept and the
// campaign handles its final report.
func (x *inliner) finish(ctx workflow.Context, key string, state TrialState, errMsg string) {
	st := x.st()
	i := x.find(key)
	t := st.Trials[i]
	st.Trials = slices.Delete(st.Trials, i, i+1)
	if len(st.Trials) == 0 {
		st.Trials = nil
	}
	var rep TrialReport
	var rec TrialStatus
	t.update(func(b *trialCore) {
		b.end(state, errMsg)
		rep, rec = b.report(t.Input.Owner, true), b.status()
	})
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

// stopTrial stops one trial (the searcher's Stop).
func (x *inliner) stopTrial(key string) {
	if i := x.find(key); i >= 0 {
		x.st().Trials[i].Stop = true
		x.c.dirty = true
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
			GleanerCampaign.ValueSet(c.spec.Name), GleanerKind.ValueSet(KindRecords), GleanerPool.ValueSet(c.spec.Pool)),
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

// register tells the pool the campaign wants up to maxNodes nodes.
func (x *inliner) register(ctx workflow.Context, maxNodes int) {
	c, st := x.c, x.st()
	s := c.spec
	reg := RegisterTrial{
		TrialID: c.wfID, CampaignID: s.Name, MinNodes: s.Resources.MinNodes, MaxNodes: maxNodes,
		NodeType: s.Resources.NodeType, RescaleUpCost: s.Trial.RescaleUpCost.Std(), RescaleDownCost: s.Trial.RescaleDownCost.Std(),
		GracePeriod: s.Trial.GracePeriod.Std(), Weight: s.Resources.Weight, Model: s.Resources.Model, Batch: s.Resources.Batch,
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	x.registering = true
	f := workflow.ExecuteActivity(actx, RegisterTrialActivityName, RegisterTrialInput{Pool: s.Pool, Registration: reg})
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { x.registering = false; c.dirty = true }()
		if err := f.Get(ctx, nil); err != nil {
			c.logger.Warn("registering with the pool failed", "pool", s.Pool, "error", err)
			return
		}
		st.Told = maxNodes
	})
}

// deregister gives the campaign's nodes back to the pool.
func (x *inliner) deregister(ctx workflow.Context) {
	c, st := x.c, x.st()
	st.Told, st.Nodes, st.Hosts, st.NodeType = 0, nil, nil, ""
	x.releaseDue = false
	c.out.send(ctx, PoolWorkflowID(c.spec.Pool), SignalDeregisterTrial, DeregisterTrial{TrialID: c.wfID})
}

// drain stops launching, lets running trials finish for up to
// Tuning.DrainWait, stops the rest at a checkpoint and waits for them.
func (x *inliner) drain(ctx workflow.Context) error {
	x.draining = true
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

// trials answers QueryTrials.
func (x *inliner) trials() []TrialStatus {
	st := x.st()
	out := make([]TrialStatus, 0, len(st.Trials)+len(st.Records))
	for _, t := range st.Trials {
		t.update(func(b *trialCore) { out = append(out, b.status()) })
	}
	return append(out, st.Records...)
}
