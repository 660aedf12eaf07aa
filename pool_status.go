package gleaner

import (
	"time"

	"github.com/gleaner-hpc/gleaner/curve"
)

// A pool as a client sees it: what its status and library queries answer,
// and the registrations and agents they list.

// PoolState is everything the pool knows, compact enough to carry across
// continue-as-new.
type PoolState struct {
	// Nodes are the pool's idle nodes: Local and every live agent's,
	// sorted by id.
	Nodes []Node `json:"nodes"`
	// Local are the nodes of the worker's own node source (workflows.PollNodesActivityName).
	Local []Node `json:"local,omitempty"`
	// Agents are the live agents, sorted by id.
	Agents []PoolAgent  `json:"agents,omitempty"`
	Trials []PoolTrial  `json:"trials"` // sorted by TrialID
	Epoch  int64        `json:"epoch"`
	Solves int64        `json:"solves"`
	Last   SolveSummary `json:"last"`
	// Resend lists trials that registered again and must hear their
	// assignment again at the next allocation.
	Resend []string `json:"resend,omitempty"`
	// Releasing are nodes taken from a trial whose trainer may still run
	// on them: no other trial is told to use them until the trial confirms
	// (workflows.Released) or its hold expires (Releasing.Until).
	Releasing []Releasing `json:"releasing,omitempty"`
	// IdleUntil are a batch-scheduler source's estimates of when each of
	// its nodes is taken back (workflows.SignalIdleEstimates), by node id; they
	// override what the agents reported.
	IdleUntil map[string]time.Time `json:"idle_until,omitempty"`
	// Library is what trials measured before they left the pool, one
	// curve per trial and node type, bounded (workflows.LibraryMaxCurves): the JPA predicts
	// later trials from it (workflows.AllocateInput.Library). QueryStatus leaves it
	// out (LibraryCurves counts it); QueryLibrary answers it.
	Library []LearnedCurve `json:"library,omitempty"`
	// Log are the pool's log entries not yet kept in a chunk
	// (PoolRecords), from LogStart; LogChunks chunks were kept before
	// them, and LogBytes is their size as JSON. QueryStatus leaves the
	// log out; QueryPoolLog answers it (PoolLog).
	Log       []PoolEvent  `json:"log,omitempty"`
	LogStart  PoolSnapshot `json:"log_start,omitzero"`
	LogChunks int          `json:"log_chunks,omitempty"`
	LogBytes  int          `json:"log_bytes,omitempty"`
	// Departed are trials that held nodes and left the pool (paused,
	// or ended), newest last, at most workflows.DepartedMax: one that
	// registers again resumes (NodeChangeResume) rather than starts.
	// QueryStatus leaves them out.
	Departed []string `json:"departed,omitempty"`
}

// PoolAgent is a live agent as the pool knows it.
type PoolAgent struct {
	AgentJoin
	Since time.Time `json:"since"`
}

// Releasing is a node being vacated by a trial.
type Releasing struct {
	Node    string    `json:"node"`
	TrialID string    `json:"trial_id"`
	Epoch   int64     `json:"epoch"` // the decision that took it
	Since   time.Time `json:"since"`
	// Until is when the node is handed on without confirmation: Since +
	// max(workflows.PoolInput.ReleaseTimeout, the trial's grace period +
	// workflows.ReleaseMargin).
	// Zero in a state from before it existed: Since + ReleaseTimeout.
	Until time.Time `json:"until,omitempty"`
}

// PoolTrial is one registered trial as the pool sees it.
type PoolTrial struct {
	Registration RegisterTrial `json:"registration"`
	Nodes        []string      `json:"nodes,omitempty"` // assigned now
	NodeType     string        `json:"node_type,omitempty"`
	// Sent is the assignment the trial was last told; it lags Nodes while
	// nodes it is to get are still being vacated by another trial.
	Sent    []string       `json:"sent,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	Profile []ProfilePoint `json:"profile,omitempty"`
	// RescaleUpCost and RescaleDownCost are measured seconds, 0 until
	// measured (the registration's priors are used then).
	RescaleUpCost   float64 `json:"rescale_up_s,omitempty"`
	RescaleDownCost float64 `json:"rescale_down_s,omitempty"`
	// Predicted is the JPA's prediction the last allocation used for the
	// trial (workflows.TrialAssignment.Predicted): at most 16 counts over
	// [min_nodes, max_nodes], the count it was given among them.
	Predicted []PredictedThroughput `json:"predicted,omitempty"`
	// PredictedMetrics are the metrics the worker predicts for the
	// trial's architecture (a NAS trial's) on NodeType, calibrated as of
	// the last allocation that gave it nodes: its assignment carries them
	// to runs on agent hosts (workflows.Assignment.PredictedMetrics).
	PredictedMetrics map[string]float64 `json:"predicted_metrics,omitempty"`
	// Held says the trial has held nodes since it registered: its next
	// start is a resume (NodeChangeResume).
	Held bool `json:"held,omitempty"`
}

// ProfilePoint is a measured throughput of a trial.
type ProfilePoint struct {
	Nodes      int     `json:"nodes"`
	NodeType   string  `json:"node_type,omitempty"`
	Throughput float64 `json:"throughput"`
	Spread     float64 `json:"spread,omitempty"`
}

// SolveSummary describes one allocation.
type SolveSummary struct {
	At          time.Time `json:"at"`
	Formulation string    `json:"formulation"`
	Status      string    `json:"status"`
	Objective   float64   `json:"objective"`
	SolveMillis float64   `json:"solve_ms"`
	Trials      int       `json:"trials"`
	Nodes       int       `json:"nodes"`
	NodesUsed   int       `json:"nodes_used"`
	Changed     int       `json:"changed"` // trials whose nodes changed
	// Lookahead is the T_fwd the allocation used, in seconds: derived from
	// the nodes' idle-time estimates where they have them.
	Lookahead float64 `json:"lookahead_s,omitempty"`
}

// PoolStatus answers QueryStatus on a PoolWorkflow.
type PoolStatus struct {
	Name string `json:"name"`
	PoolState
	// LibraryCurves is how many curves the pool's library holds
	// (QueryLibrary lists them).
	LibraryCurves int `json:"library_curves,omitempty"`
}

// NodeUse is how many of the pool's nodes (PoolState.Nodes) are assigned
// to a trial now, and how many it has: a node counts once however many
// registrations name it, and a node the pool no longer has (its source
// took it back while the trial vacates it) is not in use of the pool's.
// `pool status`, `status --watch`, `gleaner dev` and the pool's details
// all count by it.
func (s PoolState) NodeUse() (inUse, total int) {
	have := make(map[string]bool, len(s.Nodes))
	for _, n := range s.Nodes {
		have[n.ID] = true
	}
	used := map[string]bool{}
	for _, t := range s.Trials {
		for _, n := range t.Nodes {
			if have[n] {
				used[n] = true
			}
		}
	}
	return len(used), len(s.Nodes)
}

// Registrations counts the pool's registrations by kind: trials (one
// per trial workflow) and inline campaigns (one per campaign, which runs
// several trials on the nodes it is given).
func (s PoolState) Registrations() (trials, inlineCampaigns int) {
	for _, t := range s.Trials {
		if t.Registration.TrialID == CampaignWorkflowID(t.Registration.CampaignID) {
			inlineCampaigns++
		} else {
			trials++
		}
	}
	return trials, inlineCampaigns
}

// PoolDemand answers QueryDemand: how many more nodes a pool's trials
// could use. A batch-scheduler source (Slurm pilots) reads it to decide
// how many pilot jobs to keep waiting.
type PoolDemand struct {
	// Trials are the registered trials.
	Trials int `json:"trials"`
	// Nodes are the pool's nodes now.
	Nodes int `json:"nodes"`
	// Wanted is the sum of the trials' max_nodes less Nodes (≥ 0).
	Wanted int `json:"wanted"`
	// MaxGrace is the longest grace period among the trials.
	MaxGrace time.Duration `json:"max_grace"`
	// NodeIDs are the ids of the pool's nodes now, sorted: a pilot
	// scheduler counts a running pilot whose node is not among them as a
	// node on its way (its agent has not joined yet).
	NodeIDs []string `json:"node_ids"`
}

// Demand is how many more nodes the pool's trials could use.
func (st PoolState) Demand() PoolDemand {
	d := PoolDemand{Trials: len(st.Trials), Nodes: len(st.Nodes), NodeIDs: make([]string, 0, len(st.Nodes))}
	for _, n := range st.Nodes {
		d.NodeIDs = append(d.NodeIDs, n.ID)
	}
	want := 0
	for _, t := range st.Trials {
		want += max(t.Registration.MaxNodes, t.Registration.MinNodes, 1)
		d.MaxGrace = max(d.MaxGrace, t.Registration.GracePeriod)
	}
	d.Wanted = max(want-len(st.Nodes), 0)
	return d
}

// LearnedCurve is a trial's measured throughput on one node type, kept in
// its pool's library after it left the pool.
type LearnedCurve struct {
	// Trial is the trial's workflow id; Campaign its campaign (the curve's
	// jpa.PriorCurve.Group).
	Trial    string `json:"trial"`
	Campaign string `json:"campaign"`
	// Model and Batch are what it trained (RegisterTrial.Model, .Batch);
	// "" and 0 when unknown.
	Model    string `json:"model,omitempty"`
	Batch    int    `json:"batch,omitempty"`
	NodeType string `json:"node_type,omitempty"`
	// Points are sorted by strictly increasing Nodes, throughputs > 0.
	Points []CurvePoint `json:"points"`
	// At is when the trial left the pool (workflow time).
	At time.Time `json:"at"`
}

// CurvePoint is a measured throughput, samples/s at Nodes: the curve
// package's point (a leaf package without cgo).
type CurvePoint = curve.Point

// Name is the curve's name in the JPA's library: the trial's own
// measurements are named so (jpa.Advisor.Curves), so a trial that
// registers again is never its own neighbour (jpa.Query.Self).
func (c LearnedCurve) Name() string { return c.Trial + "@" + c.NodeType }

// PoolLibrary answers QueryLibrary on a PoolWorkflow.
type PoolLibrary struct {
	Name   string         `json:"name"`
	Curves []LearnedCurve `json:"curves"`
}

// AgentJoin announces an agent and its nodes to a pool. Sent again by an
// agent that restarts, it replaces what the pool knew of it.
type AgentJoin struct {
	Agent string `json:"agent"` // unique in the pool: the node id prefix
	// TaskQueue is the agent's own: the ranks of trials on its nodes and
	// its lease run there.
	TaskQueue string `json:"task_queue"`
	// Addr is the address peers reach the agent's host at (rendezvous).
	Addr  string `json:"addr,omitempty"`
	Nodes []Node `json:"nodes"`
	// Incarnation tells apart two starts of the same agent: a lease that
	// ends for an older incarnation does not remove the newer.
	Incarnation string `json:"incarnation"`
	// StorageID is the id in the agent's data directory (a marker file
	// the first agent writes): agents whose ids differ do not share it.
	StorageID string `json:"storage_id,omitempty"`
	DataDir   string `json:"data_dir,omitempty"` // as the agent sees it, for messages
}

// RegisterTrial asks the pool for nodes.
type RegisterTrial struct {
	TrialID         string        `json:"trial_id"` // the trial's workflow id
	CampaignID      string        `json:"campaign_id"`
	MinNodes        int           `json:"min_nodes"`
	MaxNodes        int           `json:"max_nodes"`
	NodeType        string        `json:"node_type,omitempty"`
	RescaleUpCost   time.Duration `json:"rescale_up_cost"`
	RescaleDownCost time.Duration `json:"rescale_down_cost"`
	Weight          float64       `json:"weight,omitempty"`
	// Arch is the trial's architecture (its architecture parameter's
	// canonical JSON; a NAS campaign's), from which a worker with a
	// throughput model predicts the trial's curve before it runs.
	Arch string `json:"arch,omitempty"`
	// Model and Batch name what the trial trains: the campaign's
	// resources.model and .batch, each where set, else what its trainer
	// reported (workflows.Progress.Model, .Batch). The JPA's profiled curves and
	// speeds of that model apply to the trial, and its measured curve
	// joins the pool's library under that name when it leaves.
	Model string `json:"model,omitempty"`
	Batch int    `json:"batch,omitempty"`
	// GracePeriod is how long the trial's trainer may take to leave its
	// nodes once stopped: the pool holds a node taken from the trial that
	// long (plus a margin) before another trial may use it.
	GracePeriod time.Duration `json:"grace_period,omitempty"`
}
