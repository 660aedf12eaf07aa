package workflows

import (
	"slices"
	"sort"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

// PollNodesInput asks the worker's node source of a pool for idle nodes.
type PollNodesInput struct {
	Pool string `json:"pool"`
}

// AllocateInput is the Allocate activity's input: a snapshot of the pool.
type AllocateInput struct {
	Pool        string         `json:"pool"`
	Nodes       []gleaner.Node `json:"nodes"`
	Trials      []PoolTrial    `json:"trials"`
	Lookahead   time.Duration  `json:"lookahead"`
	Formulation string         `json:"formulation,omitempty"`
	// Library is the pool's learned curves (PoolState.Library), profiled
	// models the JPA knows besides the worker's own.
	Library []LearnedCurve `json:"library,omitempty"`
}

// TrialAssignment is the Allocate activity's decision for one trial.
type TrialAssignment struct {
	TrialID  string   `json:"trial_id"`
	Nodes    []string `json:"nodes"`
	NodeType string   `json:"node_type,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	// Predicted is the JPA's prediction the allocator used for the trial:
	// at most MaxPredicted counts spread over [min_nodes, max_nodes], the
	// count given among them (the pool keeps it: PoolTrial.Predicted).
	// Empty when it is the one the trial's AllocateInput entry carried:
	// the pool keeps that.
	Predicted []PredictedThroughput `json:"predicted,omitempty"`
	// PredictedMetrics are the metrics predicted for the trial's
	// architecture on NodeType (gleaner.MetricPredictedThroughput and
	// gleaner.MetricPredictedLatency, calibrated on the pool's
	// measurements as of this allocation, 4 significant digits); nil
	// without nodes, an architecture or a throughput model, and when
	// they are the ones the trial's AllocateInput entry carried (the
	// pool keeps those). The pool sends them with the trial's assignment
	// and answers QueryPredicted with them.
	PredictedMetrics map[string]float64 `json:"predicted_metrics,omitempty"`
}

// MaxPredicted bounds TrialAssignment.Predicted.
const MaxPredicted = 16

// AllocateResult is the Allocate activity's output.
type AllocateResult struct {
	Assignments []TrialAssignment `json:"assignments"`
	Summary     SolveSummary      `json:"summary"`
}

func localActivity(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: defaultLocalActivityDeadline,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
	})
}

// poll asks the node source which nodes are idle; a change is an event.
func (p *pool) poll(ctx workflow.Context) error {
	var nodes []gleaner.Node
	err := workflow.ExecuteLocalActivity(localActivity(ctx), PollNodesActivityName, PollNodesInput{Pool: p.in.Name}).Get(ctx, &nodes)
	if err != nil {
		// A node source that fails keeps the last known nodes; the next
		// poll tries again.
		workflow.GetLogger(ctx).Warn("polling nodes failed", "pool", p.in.Name, "error", err)
		return nil
	}
	p.st.Local = nodes
	p.setNodes(workflow.Now(ctx), gleaner.PoolTriggerNodes)
	return nil
}

// setNodes makes Nodes the union of Local and the agents' nodes; a
// change is an event (trigger says whose), and logged.
func (p *pool) setNodes(now time.Time, trigger string) {
	nodes := slices.Clone(p.st.Local)
	for _, ag := range p.st.Agents {
		for _, n := range ag.Nodes {
			if t, ok := p.st.IdleUntil[n.ID]; ok {
				n.IdleUntil = t
			}
			nodes = append(nodes, n)
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	if !sameNodes(nodes, p.st.Nodes) {
		before := p.st.Nodes
		p.st.Nodes = nodes
		p.changed(trigger)
		p.logNodes(now, before)
	}
}

func sameNodes(a, b []gleaner.Node) bool {
	return slices.EqualFunc(a, b, func(x, y gleaner.Node) bool {
		return x.ID == y.ID && x.Type == y.Type && x.IdleUntil.Equal(y.IdleUntil) && x.Host == y.Host
	})
}

// allocate runs the allocator and tells every trial whose nodes changed.
func (p *pool) allocate(ctx workflow.Context) error {
	p.dirty = false
	trigger := p.trigger()
	if len(p.st.Trials) == 0 {
		return nil
	}
	in := AllocateInput{Pool: p.in.Name, Nodes: p.st.Nodes, Trials: p.st.Trials, Lookahead: p.in.Lookahead, Formulation: p.in.Formulation,
		Library: p.st.Library}
	var res AllocateResult
	if err := workflow.ExecuteLocalActivity(localActivity(ctx), AllocateActivityName, in).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Error("allocation failed; keeping the current one", "pool", p.in.Name, "error", err)
		return nil
	}
	p.st.Epoch++
	p.st.Solves++
	now := workflow.Now(ctx)
	changed := 0
	var changes []NodeChange
	for _, a := range res.Assignments {
		i, found := p.trial(a.TrialID)
		if !found {
			continue // deregistered while the allocator ran
		}
		t := &p.st.Trials[i]
		t.Reason = a.Reason
		if len(a.Predicted) > 0 {
			t.Predicted = a.Predicted
		}
		if a.PredictedMetrics != nil {
			t.PredictedMetrics = a.PredictedMetrics
		}
		if !slices.Equal(t.Nodes, a.Nodes) {
			changed++
			if c := gleaner.ClassifyNodeChange(t.Nodes, a.Nodes, t.Held); c != "" {
				changes = append(changes, NodeChange{Trial: a.TrialID, Campaign: t.Registration.CampaignID,
					Nodes: append([]string{}, a.Nodes...), Before: slices.Clone(t.Nodes), NodeType: a.NodeType, Reason: a.Reason, Change: c})
			}
		}
		t.Held = t.Held || len(t.Nodes) > 0 || len(a.Nodes) > 0
		// Nodes the trial was told to use and now loses: its trainer may
		// still run there until it confirms.
		for _, n := range t.Sent {
			if !slices.Contains(a.Nodes, n) {
				p.st.Releasing = append(p.st.Releasing, Releasing{Node: n, TrialID: t.Registration.TrialID, Epoch: p.st.Epoch,
					Since: now, Until: now.Add(p.in.releaseHold(t.Registration))})
			}
		}
		t.Nodes, t.NodeType = a.Nodes, a.NodeType
	}
	p.flush(ctx, true)
	res.Summary.Changed = changed
	p.st.Last = res.Summary
	summary := res.Summary
	p.logEvent(now, PoolEvent{Kind: gleaner.PoolEventSolve, Trigger: trigger, Solve: &summary, Changes: changes})
	workflow.SetCurrentDetails(ctx, p.details(workflow.Now(ctx)))
	return nil
}

// flush tells every trial whose decided nodes differ from what it was last
// told — unless a node it is to get is still being vacated by another
// trial, in which case it hears once that node is released. Shrinks and
// preemptions always go at once. withResend also re-sends to trials that
// registered again (only right after an allocation, so the epoch is new).
func (p *pool) flush(ctx workflow.Context, withResend bool) {
	held := map[string]string{}
	awaited := map[string]bool{} // trials whose release the pool waits for
	for _, r := range p.st.Releasing {
		held[r.Node] = r.TrialID
		awaited[r.TrialID] = true
	}
	holder := p.nodeAgents()
	// Nodes gone since the allocation (an agent left) are not sent; the
	// allocation they made dirty follows. (Versioned: pools running since
	// before it replay as they ran.)
	var have map[string]bool
	if workflow.GetVersion(ctx, "flush-skips-gone-nodes", workflow.DefaultVersion, 1) == 1 {
		have = make(map[string]bool, len(p.st.Nodes))
		for _, n := range p.st.Nodes {
			have[n.ID] = true
		}
	}
	for i := range p.st.Trials {
		t := &p.st.Trials[i]
		id := t.Registration.TrialID
		resend := withResend && p.resend[id]
		if slices.Equal(t.Sent, t.Nodes) && !resend {
			continue
		}
		blocked := slices.ContainsFunc(t.Nodes, func(n string) bool {
			owner, ok := held[n]
			return (ok && owner != id) || (have != nil && !have[n])
		})
		if blocked {
			continue
		}
		t.Sent = slices.Clone(t.Nodes)
		delete(p.resend, id)
		p.out.send(ctx, id, SignalAssignment, Assignment{
			Epoch: p.st.Epoch, Nodes: t.Nodes, NodeType: t.NodeType, Reason: t.Reason,
			Hosts: p.placement(t.Nodes, holder), NoReleaseAwaited: !awaited[id], PredictedMetrics: t.PredictedMetrics,
		})
	}
}
