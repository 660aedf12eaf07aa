package gleaner

import (
	"cmp"
	"slices"
	"time"
)

// A pool's log: what its node source changed, every allocation and the
// trials it changed, registrations. The pool keeps the entries not yet
// kept (QueryPoolLog) and, every PoolLogChunk entries or PoolLogBytes of
// JSON, keeps them in a PoolRecords workflow (a chunk), readable for the
// namespace's retention: the durable, bounded history of who held which
// node when. NodeSpans reads it.

// PoolEvent is one entry of a pool's log.
type PoolEvent struct {
	At    time.Time     `json:"at"`    // workflow time
	Epoch int64         `json:"epoch"` // the pool's epoch after the event
	Kind  PoolEventKind `json:"kind"`
	// Added and Removed (PoolEventNodes) are what the node source (the
	// worker's own poll, agents joining, leaving or lost, idle-time
	// estimates) changed: nodes that joined, or whose description (type,
	// host, idle-until) changed, with their new description; ids of nodes
	// that left. A node that leaves while a trial holds it is in Removed
	// here, and the trial's shrink or preemption in the next solve.
	Added   []Node   `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// Trigger, Solve and Changes (PoolEventSolve) are what started the
	// allocation (PoolTrigger values, comma-joined, sorted), its summary,
	// and every trial whose nodes it changed.
	Trigger string        `json:"trigger,omitempty"`
	Solve   *SolveSummary `json:"solve,omitempty"`
	Changes []NodeChange  `json:"changes,omitempty"`
	// Measured is the sum over registered trials of their measured
	// throughput (samples/s, PoolTrial.Profile) at the node count they
	// hold after this event (nodes still in the pool; 0 for a trial not
	// measured at that count): samples/s over time.
	Measured float64 `json:"measured,omitempty"`
	// Trial and Campaign (PoolEventRegister, PoolEventDeregister) name
	// the registration.
	Trial    string `json:"trial,omitempty"`
	Campaign string `json:"campaign,omitempty"`
}

// PoolEventKind is what a PoolEvent records.
type PoolEventKind string

// The kinds of PoolEvent.
const (
	PoolEventNodes      PoolEventKind = "nodes"
	PoolEventSolve      PoolEventKind = "solve"
	PoolEventRegister   PoolEventKind = "register"
	PoolEventDeregister PoolEventKind = "deregister"
)

// What starts an allocation (PoolEvent.Trigger).
const (
	PoolTriggerNodes         = "nodes"          // the worker's own node source changed
	PoolTriggerRegister      = "register"       // a trial registered (or registered again)
	PoolTriggerDeregister    = "deregister"     // a trial left
	PoolTriggerProfile       = "profile"        // measurements arrived since the last allocation
	PoolTriggerPeriod        = "period"         // AllocatePeriod passed
	PoolTriggerAgent         = "agent"          // an agent joined, left, was lost or restarted
	PoolTriggerIdleEstimates = "idle-estimates" // a batch scheduler's idle-time estimates changed
)

// NodeChange is a trial whose nodes an allocation changed.
type NodeChange struct {
	Trial    string   `json:"trial"`
	Campaign string   `json:"campaign"`
	Nodes    []string `json:"nodes"`            // held after
	Before   []string `json:"before,omitempty"` // held before
	NodeType string   `json:"node_type,omitempty"`
	Reason   string   `json:"reason,omitempty"` // the allocator's reason
	Change   string   `json:"change"`           // one of the NodeChange* values
}

// Values of NodeChange.Change.
const (
	NodeChangeStart   = "start"   // 0 → n, the first time since the trial registered
	NodeChangeResume  = "resume"  // 0 → n again
	NodeChangeGrow    = "grow"    // more nodes
	NodeChangeShrink  = "shrink"  // fewer nodes, not none
	NodeChangePreempt = "preempt" // n → 0
	NodeChangeMove    = "move"    // as many nodes, others
)

// ClassifyNodeChange names the change of a trial's nodes from before to
// after; held says the trial held nodes before, since it registered
// (start or resume). "" when nothing changed.
func ClassifyNodeChange(before, after []string, held bool) string {
	switch b, a := len(before), len(after); {
	case b == 0 && a == 0:
		return ""
	case b == 0 && held:
		return NodeChangeResume
	case b == 0:
		return NodeChangeStart
	case a == 0:
		return NodeChangePreempt
	case a > b:
		return NodeChangeGrow
	case a < b:
		return NodeChangeShrink
	}
	for _, n := range after {
		if !slices.Contains(before, n) {
			return NodeChangeMove
		}
	}
	return ""
}

// PoolSnapshot is who held what when a chunk begins, so a chunk is
// readable on its own.
type PoolSnapshot struct {
	At    time.Time `json:"at"`
	Nodes []Node    `json:"nodes"`
	// Holders are the registered trials' nodes (trial id → nodes), the
	// trials with none left out. A node a trial holds that left the pool
	// stays listed until the next solve takes it from the trial.
	Holders map[string][]string `json:"holders,omitempty"`
	// Campaigns are every registered trial's campaign (trial id →
	// campaign id).
	Campaigns map[string]string `json:"campaigns,omitempty"`
}

// PoolRecords is a chunk of a pool's log (a records workflow's input
// and result, workflows.PoolRecordsWorkflowName). Chunks are numbered
// from 0; a chunk's Start is the state its first event applies to (the
// previous chunk's Start with its events applied).
type PoolRecords struct {
	Pool   string       `json:"pool"`
	Chunk  int          `json:"chunk"`
	Start  PoolSnapshot `json:"start"`
	Events []PoolEvent  `json:"events"`
}

// PoolLog answers QueryPoolLog: the chunk count (chunks 0 … Chunks−1
// were kept) and the entries not yet kept in a chunk, with the snapshot
// they start from.
type PoolLog struct {
	Pool   string       `json:"pool"`
	Chunks int          `json:"chunks"`
	Start  PoolSnapshot `json:"start"`
	Events []PoolEvent  `json:"events"`
}

// PoolLogChunk is how many entries a pool keeps pending at most before it
// keeps them in a chunk (workflows.PoolInput.LogChunk's default);
// PoolLogBytes is the most JSON they may take.
const (
	PoolLogChunk = 256
	PoolLogBytes = 64 << 10
)

// PredictedThroughput is one point of the JPA's prediction the
// allocator used for a trial (TrialAssignment.Predicted,
// PoolTrial.Predicted): samples/s at Nodes on the node type the trial was
// given (its first usable type when it has none), rounded to 4
// significant digits.
type PredictedThroughput struct {
	Nodes      int     `json:"nodes"`
	Throughput float64 `json:"throughput"`
	// Sigma is the JPA's standard deviation of its prediction at Nodes
	// (samples/s); 0 at a measured count and where the curve is the prior.
	// Throughput is what the allocator used: optimistic where the count
	// is uncertain (jpa.Explore), so it may lie above the median by up to
	// the exploration bonus.
	Sigma float64 `json:"sigma,omitempty"`
	// Measured: the trial's own measurement at Nodes (PoolTrial.Profile).
	Measured bool `json:"measured,omitempty"`
}

// NodeSpan is a period of one node in its pool: held by a trial, or idle
// in the pool (Trial ""). A node's time outside the pool (its batch
// scheduler had it) is in no span.
type NodeSpan struct {
	Node string `json:"node"`
	Type string `json:"type,omitempty"`
	// From and To bound the span; a zero To: still open at the log's end.
	From time.Time `json:"from"`
	To   time.Time `json:"to,omitzero"`
	// Trial and Campaign hold the node; "" when idle.
	Trial    string `json:"trial,omitempty"`
	Campaign string `json:"campaign,omitempty"`
}

// NodeSpans reads a pool's log (its chunks, in any order, and the live
// log QueryPoolLog answers) as every node's spans, sorted by node then
// start. A span is cut where the node's holder or type changes or it
// leaves, never at a chunk's boundary; a chunk missing (past the
// namespace's retention, or not read) is bridged by the next one's
// snapshot. The decision counts: a node taken from one trial is the
// next's from that solve, though the first may take a moment to leave it.
func NodeSpans(chunks []PoolRecords, live PoolLog) []NodeSpan {
	segs := slices.Clone(chunks)
	slices.SortStableFunc(segs, func(a, b PoolRecords) int { return cmp.Compare(a.Chunk, b.Chunk) })
	if !live.Start.At.IsZero() || len(live.Events) > 0 {
		segs = append(segs, PoolRecords{Pool: live.Pool, Chunk: live.Chunks, Start: live.Start, Events: live.Events})
	}
	r := spanReader{open: map[string]int{}}
	for _, s := range segs {
		r.reset(s.Start)
		for _, e := range s.Events {
			r.apply(e)
		}
	}
	out := slices.DeleteFunc(r.spans, func(s NodeSpan) bool { return s.Node == "" })
	slices.SortStableFunc(out, func(a, b NodeSpan) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), a.From.Compare(b.From))
	})
	return out
}

// spanReader replays a pool's log: the nodes present, who holds each,
// and the span open for each present node.
type spanReader struct {
	nodes     map[string]Node
	holder    map[string]string   // node → trial
	holders   map[string][]string // trial → nodes
	campaigns map[string]string
	spans     []NodeSpan
	open      map[string]int // node → index in spans
}

// reset makes the state the snapshot's, cutting only the spans it
// contradicts.
func (r *spanReader) reset(s PoolSnapshot) {
	r.nodes = map[string]Node{}
	for _, n := range s.Nodes {
		r.nodes[n.ID] = n
	}
	r.holders, r.holder = map[string][]string{}, map[string]string{}
	for _, t := range sortedKeys(s.Holders) {
		r.hold(t, s.Holders[t])
	}
	r.campaigns = map[string]string{}
	for t, c := range s.Campaigns {
		r.campaigns[t] = c
	}
	for _, id := range sortedKeys(r.open) {
		if _, ok := r.nodes[id]; !ok {
			r.close(id, s.At)
		}
	}
	for _, n := range s.Nodes {
		r.settle(n.ID, s.At)
	}
}

func (r *spanReader) hold(trial string, nodes []string) {
	for _, n := range r.holders[trial] {
		if r.holder[n] == trial {
			delete(r.holder, n)
		}
	}
	if len(nodes) == 0 {
		delete(r.holders, trial)
		return
	}
	r.holders[trial] = slices.Clone(nodes)
	for _, n := range nodes {
		r.holder[n] = trial
	}
}

func (r *spanReader) apply(e PoolEvent) {
	switch e.Kind {
	case PoolEventNodes:
		for _, id := range e.Removed {
			delete(r.nodes, id)
			r.close(id, e.At)
		}
		for _, n := range e.Added {
			r.nodes[n.ID] = n
			r.settle(n.ID, e.At)
		}
	case PoolEventSolve:
		var touched []string
		for _, c := range e.Changes {
			touched = append(append(touched, c.Before...), r.holders[c.Trial]...)
			r.hold(c.Trial, nil)
		}
		for _, c := range e.Changes {
			r.hold(c.Trial, c.Nodes)
			r.campaigns[c.Trial] = cmp.Or(c.Campaign, r.campaigns[c.Trial])
			touched = append(touched, c.Nodes...)
		}
		slices.Sort(touched)
		for _, id := range slices.Compact(touched) {
			r.settle(id, e.At)
		}
	case PoolEventRegister:
		r.campaigns[e.Trial] = e.Campaign
	case PoolEventDeregister:
		held := r.holders[e.Trial]
		r.hold(e.Trial, nil)
		for _, id := range held {
			r.settle(id, e.At)
		}
		delete(r.campaigns, e.Trial)
	}
}

// settle makes node id's open span say what the state says of it at:
// none when it is not in the pool, else its holder (or idle) and type.
func (r *spanReader) settle(id string, at time.Time) {
	n, present := r.nodes[id]
	if !present {
		r.close(id, at)
		return
	}
	trial := r.holder[id]
	if i, ok := r.open[id]; ok {
		s := r.spans[i]
		if s.Trial == trial && s.Type == n.Type {
			return
		}
		r.close(id, at)
	}
	r.open[id] = len(r.spans)
	r.spans = append(r.spans, NodeSpan{Node: id, Type: n.Type, From: at, Trial: trial, Campaign: r.campaigns[trial]})
}

// close ends node id's open span at at; a span of no time is dropped.
func (r *spanReader) close(id string, at time.Time) {
	i, ok := r.open[id]
	if !ok {
		return
	}
	delete(r.open, id)
	if !at.After(r.spans[i].From) {
		r.spans[i].Node = "" // dropped by NodeSpans
		return
	}
	r.spans[i].To = at
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
