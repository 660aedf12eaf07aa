package workflows

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

// ErrTypeStaleLease ends a lease an agent got for another of its starts.
const ErrTypeStaleLease = "StaleLease"

// Agents own the nodes of the hosts they run on (docs/cluster.md). An
// agent joins with its nodes (SignalAgentJoin) and the pool starts its
// lease, an activity on the agent's task queue that heartbeats for as
// long as the agent lives. The agent leaves with SignalAgentLeave, or dies:
// its lease then times out (AgentTimeout) and the pool counts its nodes
// preempted. Either way the next allocation runs at once.

// validJoin names what is wrong with a join, or returns nil.
func (p *pool) validJoin(j AgentJoin) error {
	switch {
	case j.Agent == "":
		return errors.New("agent: empty")
	case j.TaskQueue == "":
		return errors.New("task_queue: empty")
	case j.Incarnation == "":
		return errors.New("incarnation: empty")
	}
	ids := map[string]bool{}
	for _, n := range j.Nodes {
		if n.ID == "" || ids[n.ID] {
			return fmt.Errorf("nodes: id %q empty or repeated", n.ID)
		}
		ids[n.ID] = true
	}
	for _, n := range p.st.Local {
		if ids[n.ID] {
			return fmt.Errorf("nodes: %q is already a node of the worker's own source", n.ID)
		}
	}
	for _, ag := range p.st.Agents {
		if ag.Agent == j.Agent {
			if ag.Incarnation != j.Incarnation && ag.Addr != j.Addr {
				// A restart comes back at its address; another host
				// with the same prefix would take its ranks.
				return fmt.Errorf("agent %s is already live at %s: node prefixes must be unique in the pool (--node-prefix)", j.Agent, ag.Addr)
			}
			continue
		}
		if ag.StorageID != "" && j.StorageID != "" && ag.StorageID != j.StorageID {
			return fmt.Errorf("data directory %s (storage id %s) is not the one agent %s uses (%s, storage id %s): "+
				"every agent of pool %s must mount the same shared data directory", j.DataDir, j.StorageID, ag.Agent, ag.DataDir, ag.StorageID, p.in.Name)
		}
		for _, n := range ag.Nodes {
			if ids[n.ID] {
				return fmt.Errorf("nodes: %q is already agent %s's", n.ID, ag.Agent)
			}
		}
	}
	return nil
}

func (p *pool) agent(id string) (int, bool) {
	i := sort.Search(len(p.st.Agents), func(i int) bool { return p.st.Agents[i].Agent >= id })
	return i, i < len(p.st.Agents) && p.st.Agents[i].Agent == id
}

// join adds an agent, or replaces what the pool knew of it (a restart).
func (p *pool) join(ctx workflow.Context, j AgentJoin) {
	logger := workflow.GetLogger(ctx)
	if err := p.validJoin(j); err != nil {
		logger.Error("agent join refused", "pool", p.in.Name, "agent", j.Agent, "error", err)
		if j.TaskQueue != "" {
			// Its lease tells the agent why; it exits with the reason.
			p.refuse(ctx, j, fmt.Sprintf("pool %s refused agent %s: %v", p.in.Name, j.Agent, err))
		}
		return
	}
	j.Nodes = slices.Clone(j.Nodes)
	sort.Slice(j.Nodes, func(a, b int) bool { return j.Nodes[a].ID < j.Nodes[b].ID })
	for i := range j.Nodes {
		j.Nodes[i].Host = j.Agent
	}
	ag := PoolAgent{AgentJoin: j, Since: workflow.Now(ctx)}
	i, found := p.agent(j.Agent)
	if found {
		if p.st.Agents[i].Incarnation == j.Incarnation {
			// The same start announcing itself again: keep its lease.
			ag.Since = p.st.Agents[i].Since
			p.st.Agents[i] = ag
			p.setNodes(workflow.Now(ctx), gleaner.PoolTriggerAgent)
			return
		}
		p.endLease(j.Agent)
		p.st.Agents[i] = ag
		// A restart: the same nodes on a new task queue. Trials placed on
		// them hear their assignment again, with the new queue.
		for _, t := range p.st.Trials {
			if slices.ContainsFunc(t.Sent, func(n string) bool {
				return slices.ContainsFunc(j.Nodes, func(x gleaner.Node) bool { return x.ID == n })
			}) {
				p.resend[t.Registration.TrialID] = true
				p.changed(gleaner.PoolTriggerAgent)
			}
		}
	} else {
		p.st.Agents = slices.Insert(p.st.Agents, i, ag)
	}
	logger.Info("agent joined", "pool", p.in.Name, "agent", j.Agent, "nodes", len(j.Nodes), "task_queue", j.TaskQueue)
	p.startLease(ctx, j)
	p.setNodes(workflow.Now(ctx), gleaner.PoolTriggerAgent)
}

// leave takes an agent out at once.
func (p *pool) leave(ctx workflow.Context, l AgentLeave) {
	i, found := p.agent(l.Agent)
	if !found || (l.Incarnation != "" && p.st.Agents[i].Incarnation != l.Incarnation) {
		return
	}
	workflow.GetLogger(ctx).Info("agent left", "pool", p.in.Name, "agent", l.Agent, "reason", l.Reason)
	p.remove(workflow.Now(ctx), i)
}

func (p *pool) remove(now time.Time, i int) {
	// Its nodes are gone: nothing waits for them to be released.
	gone := map[string]bool{}
	for _, n := range p.st.Agents[i].Nodes {
		gone[n.ID] = true
	}
	p.st.Releasing = slices.DeleteFunc(p.st.Releasing, func(r Releasing) bool { return gone[r.Node] })
	p.endLease(p.st.Agents[i].Agent)
	p.st.Agents = slices.Delete(p.st.Agents, i, i+1)
	p.setNodes(now, gleaner.PoolTriggerAgent)
}

func (p *pool) leaseOptions(ctx workflow.Context, j AgentJoin) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              j.TaskQueue,
		ScheduleToStartTimeout: p.in.AgentTimeout,
		StartToCloseTimeout:    AgentLeaseRenew + p.in.AgentTimeout,
		HeartbeatTimeout:       p.in.AgentTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

func (p *pool) startLease(ctx workflow.Context, j AgentJoin) {
	lctx, cancel := workflow.WithCancel(ctx)
	f := workflow.ExecuteActivity(p.leaseOptions(lctx, j), AgentLeaseActivityName, AgentLeaseInput{Pool: p.in.Name, Agent: j.Agent, Incarnation: j.Incarnation})
	p.leases[j.Agent] = &lease{incarnation: j.Incarnation, future: f, cancel: cancel}
}

// refuse sends a refused agent its reason, as a lease that ends at once.
func (p *pool) refuse(ctx workflow.Context, j AgentJoin, reason string) {
	workflow.ExecuteActivity(p.leaseOptions(ctx, j), AgentLeaseActivityName,
		AgentLeaseInput{Pool: p.in.Name, Agent: j.Agent, Incarnation: j.Incarnation, Refused: reason})
}

func (p *pool) endLease(agent string) {
	if l := p.leases[agent]; l != nil {
		l.cancel()
		delete(p.leases, agent)
	}
}

// leaseEnded handles the end of an agent's lease: renewed, or the agent
// is gone (it left, or it stopped heartbeating: lost).
func (p *pool) leaseEnded(ctx workflow.Context, agent string, l *lease, f workflow.Future) {
	if p.leases[agent] == l {
		delete(p.leases, agent)
	}
	i, found := p.agent(agent)
	if !found || p.st.Agents[i].Incarnation != l.incarnation {
		return // replaced or removed meanwhile
	}
	var res AgentLeaseResult
	err := f.Get(ctx, &res)
	var timeout *temporal.TimeoutError
	var app *temporal.ApplicationError
	stale := errors.As(err, &app) && app.Type() == ErrTypeStaleLease
	if (err == nil && res.Renew) || (err != nil && !errors.As(err, &timeout) && !stale) {
		// Renewed, or ended by an error the agent itself reported (a
		// heartbeat the server was too slow to take cancels the lease on
		// the agent's side): it answered, so it lives. Only a timeout —
		// no heartbeat for AgentTimeout — is a lost agent.
		p.startLease(ctx, p.st.Agents[i].AgentJoin)
		return
	}
	logger := workflow.GetLogger(ctx)
	if err != nil {
		logger.Warn("agent lost; its nodes count as preempted", "pool", p.in.Name, "agent", agent,
			"nodes", len(p.st.Agents[i].Nodes), "error", err)
	} else {
		logger.Info("agent ended its lease", "pool", p.in.Name, "agent", agent)
	}
	p.remove(workflow.Now(ctx), i)
}

// nodeAgents maps every agent node to its agent's index in Agents.
func (p *pool) nodeAgents() map[string]int {
	m := map[string]int{}
	for i, ag := range p.st.Agents {
		for _, n := range ag.Nodes {
			m[n.ID] = i
		}
	}
	return m
}

// placement groups nodes by the agent holding them, in the order of each
// agent's first node; nil when no node is an agent's.
func (p *pool) placement(nodes []string, holder map[string]int) []HostNodes {
	var hosts []HostNodes
	at := map[int]int{}
	for _, n := range nodes {
		i, ok := holder[n]
		if !ok {
			i = -1 // the worker's own nodes (flush sends only nodes the pool has)
		}
		k, seen := at[i]
		if !seen {
			k = len(hosts)
			at[i] = k
			h := HostNodes{}
			if i >= 0 {
				ag := p.st.Agents[i]
				h = HostNodes{Agent: ag.Agent, TaskQueue: ag.TaskQueue, Addr: ag.Addr}
			}
			hosts = append(hosts, h)
		}
		hosts[k].Nodes = append(hosts[k].Nodes, n)
	}
	if len(hosts) == 1 && hosts[0].TaskQueue == "" {
		return nil
	}
	return hosts
}

// agentSummary is a line per agent for the pool's details.
func (p *pool) agentSummary(b *strings.Builder, now time.Time) {
	if len(p.st.Agents) == 0 {
		return
	}
	b.WriteString("\n| agent | nodes | address | joined |\n|---|---|---|---|\n")
	for i, ag := range p.st.Agents {
		if i == 50 {
			fmt.Fprintf(b, "| … %d more | | | |\n", len(p.st.Agents)-50)
			break
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s ago |\n", escapeMarkdown(ag.Agent), len(ag.Nodes), escapeMarkdown(ag.Addr), now.Sub(ag.Since).Round(time.Second))
	}
}
