package workflows

// The pool's log (gleaner.PoolEvent): node changes, allocations and
// registrations, pending in the pool's state and kept, a chunk at a
// time, in PoolRecords workflows, as an inline campaign keeps its ended
// trials (flushRecords). Logging is state only and changes no decision;
// the chunks' child workflows are versioned (pool-log).

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

// PoolRecordsWorkflow keeps a chunk of a pool's log: it returns its
// input, so the records are readable for the namespace's retention
// (client.PoolLog reads them).
func PoolRecordsWorkflow(ctx workflow.Context, in PoolRecords) (PoolRecords, error) {
	return in, nil
}

// changed marks an event that calls for an allocation, and why
// (gleaner.PoolTrigger values).
func (p *pool) changed(trigger string) {
	p.dirty = true
	p.note(trigger)
}

// note records a reason for the next allocation without calling for one.
func (p *pool) note(trigger string) {
	if p.why == nil {
		p.why = map[string]bool{}
	}
	p.why[trigger] = true
}

// trigger is what the allocation about to run answers, and forgets it.
func (p *pool) trigger() string {
	why := make([]string, 0, len(p.why))
	for w := range p.why {
		why = append(why, w)
	}
	sort.Strings(why)
	p.why = nil
	return strings.Join(why, ",")
}

// logEvent appends e, at workflow time now, to the pending log.
func (p *pool) logEvent(now time.Time, e PoolEvent) {
	e.At, e.Epoch, e.Measured = now, p.st.Epoch, p.measured()
	p.st.Log = append(p.st.Log, e)
	p.st.LogBytes += jsonSize(e)
}

// measured is the registered trials' measured throughput at the node
// counts they hold (of nodes still in the pool), summed.
func (p *pool) measured() float64 {
	have := make(map[string]bool, len(p.st.Nodes))
	for _, n := range p.st.Nodes {
		have[n.ID] = true
	}
	sum := 0.0
	for _, t := range p.st.Trials {
		k := 0
		for _, n := range t.Nodes {
			if have[n] {
				k++
			}
		}
		if k == 0 {
			continue
		}
		for _, pt := range t.Profile {
			if pt.Nodes == k && pt.NodeType == t.NodeType {
				sum += pt.Throughput
				break
			}
		}
	}
	return sum
}

// logNodes logs what changed from the nodes before to the pool's nodes
// now: nodes that joined or whose description changed, nodes that left.
func (p *pool) logNodes(now time.Time, before []gleaner.Node) {
	old := make(map[string]gleaner.Node, len(before))
	for _, n := range before {
		old[n.ID] = n
	}
	e := PoolEvent{Kind: gleaner.PoolEventNodes}
	for _, n := range p.st.Nodes {
		o, ok := old[n.ID]
		if !ok || !sameNodes([]gleaner.Node{o}, []gleaner.Node{n}) {
			e.Added = append(e.Added, n)
		}
		delete(old, n.ID)
	}
	for _, n := range before {
		if _, gone := old[n.ID]; gone {
			e.Removed = append(e.Removed, n.ID)
		}
	}
	if len(e.Added)+len(e.Removed) > 0 {
		p.logEvent(now, e)
	}
}

// snapshot is who holds what now: a chunk's start.
func (p *pool) snapshot(now time.Time) PoolSnapshot {
	s := PoolSnapshot{At: now, Nodes: append([]gleaner.Node{}, p.st.Nodes...)}
	for _, t := range p.st.Trials {
		id := t.Registration.TrialID
		if len(t.Nodes) > 0 {
			if s.Holders == nil {
				s.Holders = map[string][]string{}
			}
			s.Holders[id] = slices.Clone(t.Nodes)
		}
		if s.Campaigns == nil {
			s.Campaigns = map[string]string{}
		}
		s.Campaigns[id] = t.Registration.CampaignID
	}
	return s
}

// poolLog answers QueryPoolLog.
func (p *pool) poolLog() PoolLog {
	return PoolLog{Pool: p.in.Name, Chunks: p.st.LogChunks, Start: p.st.LogStart, Events: append([]PoolEvent{}, p.st.Log...)}
}

// logKept reports whether this run keeps its log in chunks: runs that
// began before the pool did replay as they ran, without the chunks'
// child workflows.
func (p *pool) logKept(ctx workflow.Context) bool {
	if p.logVersion == nil {
		v := workflow.GetVersion(ctx, "pool-log", workflow.DefaultVersion, 1) == 1
		p.logVersion = &v
	}
	return *p.logVersion
}

// flushLog keeps the pending log in a new PoolRecords workflow once it
// holds LogChunk entries or gleaner.PoolLogBytes of JSON; the next chunk
// starts from the state now.
func (p *pool) flushLog(ctx workflow.Context) {
	if len(p.st.Log) < p.in.LogChunk && p.st.LogBytes < gleaner.PoolLogBytes {
		return
	}
	now := workflow.Now(ctx)
	if !p.logKept(ctx) {
		// A run that keeps no chunk keeps its log bounded: past four
		// chunks' worth it starts again from the state now.
		if len(p.st.Log) >= 4*p.in.LogChunk || p.st.LogBytes >= 4*gleaner.PoolLogBytes {
			p.st.Log, p.st.LogBytes, p.st.LogStart = nil, 0, p.snapshot(now)
		}
		return
	}
	recs := PoolRecords{Pool: p.in.Name, Chunk: p.st.LogChunks, Start: p.st.LogStart, Events: p.st.Log}
	p.st.LogChunks++
	p.st.Log, p.st.LogBytes, p.st.LogStart = nil, 0, p.snapshot(now)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        PoolRecordsWorkflowID(workflow.GetInfo(ctx).WorkflowExecution.ID, recs.Chunk),
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		// A pool started again from nothing (terminated, its state lost)
		// numbers its chunks from 0 again: its chunk replaces the older
		// one of that id (the client reads the newest run of each).
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:         fmt.Sprintf("pool %s: log, chunk %d (%d entries)", p.in.Name, recs.Chunk, len(recs.Events)),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			GleanerKind.ValueSet(WorkflowKindPoolRecords), GleanerPool.ValueSet(p.in.Name)),
	})
	fut := workflow.ExecuteChildWorkflow(cctx, PoolRecordsWorkflowName, recs)
	p.pendingStarts++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { p.pendingStarts-- }()
		if err := fut.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("could not keep the pool's log in its records workflow", "pool", p.in.Name,
				"chunk", recs.Chunk, "entries", len(recs.Events), "error", err)
		}
	})
}
