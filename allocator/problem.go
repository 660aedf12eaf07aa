package allocator

import (
	"errors"
	"time"
)

// DefaultNodeType is the type of a node whose Type is empty.
const DefaultNodeType = ""

// Node is one idle node of the pool.
type Node struct {
	ID string `json:"id"`
	// Type is the node's kind (GPU model, partition); empty is the default type.
	Type string `json:"type,omitempty"`
	// IdleUntil is when the batch scheduler is expected to take the node
	// back; the zero time means unknown, which counts as later than any
	// known time (nothing has been announced for the node).
	IdleUntil time.Time `json:"idle_until,omitzero"`
	// Host groups nodes that share a machine (an agent's): a trial's
	// nodes are packed onto as few hosts as its count allows, since
	// ranks on one host talk through memory, not the network. Empty: one
	// host for all.
	Host string `json:"host,omitempty"`
}

// Trial is one active trial as the allocator sees it.
type Trial struct {
	ID string `json:"id"`
	// Nodes are the ids of the nodes the trial holds now. Ids no longer in
	// Problem.Nodes have departed and are dropped before solving.
	Nodes    []string `json:"nodes,omitempty"`
	MinNodes int      `json:"min_nodes"`
	MaxNodes int      `json:"max_nodes"`
	// Curve is the throughput on nodes of any type.
	Curve Curve `json:"curve,omitempty"`
	// CurvesByType, when set, restricts the trial to these node types with
	// a curve each (one type per trial); it then replaces Curve.
	CurvesByType map[string]Curve `json:"curves_by_type,omitempty"`
	// RescaleUpCost and RescaleDownCost are seconds of progress lost when
	// the trial grows or shrinks (including being preempted to 0).
	RescaleUpCost   float64 `json:"rescale_up_s"`
	RescaleDownCost float64 `json:"rescale_down_s"`
	// Weight scales the trial's value under ObjectiveWeighted and
	// ObjectiveEfficiency (its campaign's share of the pool); 0 means 1.
	Weight float64 `json:"weight,omitempty"`
}

// Objective selects what the allocation maximises.
type Objective string

const (
	// ObjectiveThroughput maximises total samples/s (all weights 1).
	ObjectiveThroughput Objective = "throughput"
	// ObjectiveEfficiency maximises total speedup: each trial's throughput
	// is divided by its per-node throughput at MinNodes on its reference
	// type (of its curves, the one where that is lowest), so the objective
	// counts node-equivalents of useful work, trials of very different
	// speeds compete on scaling efficiency, not raw samples/s, and a node
	// type that runs a trial k× faster is worth k× to it; each also
	// multiplied by the trial's Weight.
	ObjectiveEfficiency Objective = "efficiency"
	// ObjectiveWeighted maximises Σ Weight_j × throughput_j.
	ObjectiveWeighted Objective = "weighted"
)

// Problem is one allocation decision. It is read, never modified.
type Problem struct {
	Nodes  []Node  `json:"nodes"`
	Trials []Trial `json:"trials"`
	// Lookahead is T_fwd: how long the new allocation is expected to last.
	Lookahead time.Duration `json:"lookahead"`
	// Objective; empty means ObjectiveThroughput.
	Objective Objective `json:"objective,omitempty"`
}

// Formulation selects the solver.
type Formulation string

const (
	FormulationCompact Formulation = "compact"
	FormulationPaper   Formulation = "paper"
	FormulationGreedy  Formulation = "greedy"
	FormulationEqual   Formulation = "equal"
)

// Formulations lists every formulation, the default first.
var Formulations = []Formulation{FormulationCompact, FormulationPaper, FormulationGreedy, FormulationEqual}

// Settings tunes a solve. The zero value (or a nil *Settings) means: the
// compact formulation, a 10 s time limit, and a proven optimum (relative
// gap 1e-9; compact on several node types: 1e-6, docs/allocator.md).
type Settings struct {
	Formulation Formulation
	TimeLimit   time.Duration
	// RelGap is the relative gap to the proven bound within which a
	// solution counts as optimal (and HiGHS may stop).
	RelGap float64
}

// Status says how good a Result is.
type Status string

const (
	StatusOptimal   Status = "optimal"   // proven optimal (within RelGap)
	StatusFeasible  Status = "feasible"  // a MILP stopped at its time limit with a solution
	StatusHeuristic Status = "heuristic" // a baseline: feasible, no optimality claim
)

// Reason says why a trial got no nodes.
type Reason string

const (
	// ReasonNone: the trial got nodes.
	ReasonNone Reason = ""
	// ReasonOutcompeted: nodes exist, but other trials use them better.
	ReasonOutcompeted Reason = "outcompeted"
	// ReasonPoolTooSmall: fewer idle nodes of any usable type than MinNodes.
	ReasonPoolTooSmall Reason = "pool-too-small"
	// ReasonNoNodeOfType: no idle node of any type the trial has a curve for.
	ReasonNoNodeOfType Reason = "no-node-of-type"
	// ReasonNoGain: no allowed count has positive value (zero throughput,
	// or a rescale cost larger than what the look-ahead would gain).
	ReasonNoGain Reason = "no-gain"
)

// Allocation is what one trial gets.
type Allocation struct {
	TrialID string   `json:"trial_id"`
	Nodes   []string `json:"nodes"`
	Count   int      `json:"count"`
	// NodeType is the type of the nodes given (empty when Count is 0).
	NodeType string `json:"node_type,omitempty"`
	// Reason is set when Count is 0.
	Reason Reason `json:"reason,omitempty"`
}

// Result is the allocator's decision.
type Result struct {
	// Allocations has one entry per trial, in Problem.Trials order.
	Allocations []Allocation `json:"allocations"`
	// Objective is the value of the allocation under Problem.Objective
	// (computed by Evaluate, the same for every formulation).
	Objective   float64       `json:"objective"`
	Status      Status        `json:"status"`
	Formulation Formulation   `json:"formulation"`
	SolveTime   time.Duration `json:"solve_time"`
}

// Counts returns the node count of every trial, in Problem.Trials order.
func (r *Result) Counts() []int {
	out := make([]int, len(r.Allocations))
	for i, a := range r.Allocations {
		out[i] = a.Count
	}
	return out
}

var (
	// ErrInvalidProblem wraps every validation failure.
	ErrInvalidProblem = errors.New("invalid allocation problem")
	// ErrUnsupported: the formulation cannot express this problem.
	ErrUnsupported = errors.New("formulation does not support this problem")
	// ErrSolver: HiGHS failed or stopped without a usable solution.
	ErrSolver = errors.New("solver failed")
)
