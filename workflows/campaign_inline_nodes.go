package workflows

// An inline campaign's nodes: the pool's assignments to it, which of them
// are free, and its registration with the pool.

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

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
