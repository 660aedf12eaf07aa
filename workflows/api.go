package workflows

import (
	"fmt"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// Activity names.
const (
	RunTrialActivityName  = "gleaner.RunTrial"
	AllocateActivityName  = "gleaner.Allocate"
	PollNodesActivityName = "gleaner.PollNodes"
	// RegisterTrialActivityName signals the pool with a registration,
	// starting the pool workflow if it is not running (SignalWithStart).
	RegisterTrialActivityName = "gleaner.RegisterTrial"
	// AgentLeaseActivityName runs on an agent's task queue for as long as
	// the pool counts the agent live: it heartbeats, so the pool learns of
	// an agent that died (AgentLeaseHeartbeat) and returns when the agent
	// leaves.
	AgentLeaseActivityName = "gleaner.AgentLease"
	// WarmStartActivityName reads earlier campaigns' finished trials for a
	// campaign's search.warm_start.
	WarmStartActivityName = "gleaner.WarmStart"
)

// WarmStartInput names the earlier campaigns whose finished trials seed a
// new campaign's searcher, its objective metric and its space.
type WarmStartInput struct {
	Campaigns []string  `json:"campaigns"`
	Metric    string    `json:"metric"`
	Space     hpo.Space `json:"space"`
}

// WarmStartResult is what the earlier campaigns taught: every finished
// (completed or stopped) trial with the metric and parameters in the
// space, and per campaign how many were taken and left out.
type WarmStartResult struct {
	Observations []hpo.Observation `json:"observations,omitempty"`
	Taken        map[string]int    `json:"taken"`
	Skipped      map[string]int    `json:"skipped"`
}

// Signals.
const (
	// SignalRegisterTrial (TrialWorkflow → PoolWorkflow): RegisterTrial.
	SignalRegisterTrial = "gleaner.register-trial"
	// SignalDeregisterTrial (TrialWorkflow → PoolWorkflow): DeregisterTrial.
	SignalDeregisterTrial = "gleaner.deregister-trial"
	// SignalProfile (TrialWorkflow → PoolWorkflow): ThroughputProfile.
	SignalProfile = "gleaner.profile"
	// SignalPollNow (anyone → PoolWorkflow): poll the node source now; no payload.
	SignalPollNow = "gleaner.poll-now"
	// SignalReleased (TrialWorkflow → PoolWorkflow): Released.
	SignalReleased = "gleaner.released"
	// SignalAssignment (PoolWorkflow → TrialWorkflow): Assignment.
	SignalAssignment = "gleaner.assignment"
	// SignalProgress (RunTrial activity → TrialWorkflow): Progress.
	SignalProgress = "gleaner.progress"
	// SignalTrialReport (TrialWorkflow → CampaignWorkflow): TrialReport.
	SignalTrialReport = "gleaner.trial-report"
	// SignalAgentJoin (agent → PoolWorkflow): AgentJoin.
	SignalAgentJoin = "gleaner.agent-join"
	// SignalAgentLeave (agent → PoolWorkflow): AgentLeave.
	SignalAgentLeave = "gleaner.agent-leave"
	// SignalIdleEstimates (a batch-scheduler source → PoolWorkflow):
	// IdleEstimates.
	SignalIdleEstimates = "gleaner.idle-estimates"
)

// TrialInput starts a TrialWorkflow.
type TrialInput struct {
	TrialID            string // unique within the campaign, e.g. "t00042"
	Number             int
	CampaignID         string // the campaign's name
	CampaignWorkflowID string // where reports go ("" for a stand-alone trial)
	Pool               string
	Params             hpo.Params
	Command            []string
	WorkDir            string
	Env                map[string]string
	MinNodes, MaxNodes int
	NodeType           string
	// ObjectiveMetric is the metric reported as the trial's score.
	ObjectiveMetric string
	GracePeriod     time.Duration
	MaxRestarts     int
	// RescaleUpCost and RescaleDownCost are priors until measured.
	RescaleUpCost, RescaleDownCost time.Duration
	// State is set when the workflow continues as new, and when a
	// searcher's Continue starts the trial's next segment.
	State *TrialProgress `json:",omitempty"`
	// Paused carries a pause across continue-as-new.
	Paused bool `json:",omitempty"`
	// Budget, when > 0, is the progress in BudgetUnit (samples, steps or
	// epochs) at which the trial ends, completed at a checkpoint: the
	// trainer reads it as GLEANER_BUDGET, and one that trains past it is
	// stopped gracefully once its reports cross it.
	Budget     float64 `json:",omitempty"`
	BudgetUnit string  `json:",omitempty"`
	// Stage labels the trial for people (a rung, a generation).
	Stage string `json:",omitempty"`
	// Weight is the campaign's share of the pool (resources.weight; 0:
	// 1), told to the pool at registration, as Model and Batch
	// (resources.model, .batch) are.
	Weight float64 `json:",omitempty"`
	Model  string  `json:",omitempty"`
	Batch  int     `json:",omitempty"`
	// ArchParam names the architecture parameter of Params (a NAS
	// campaign's; "" for none): the pool learns the architecture
	// (RegisterTrial.Arch).
	ArchParam string `json:",omitempty"`
	// Segment numbers the trial's workflows: 1 (or 0) for its first, k
	// for the one its searcher's (k−1)-th Continue started.
	Segment int `json:",omitempty"`
	// From names the trial of the same campaign whose checkpoint this
	// trial starts from (a searcher's Create with From: PBT's exploit):
	// the one sealed at From's budget end FromProgress (in BudgetUnit),
	// whatever From has trained since. FromProgress 0 (a trial started
	// before it existed): From's latest sealed checkpoint.
	From         string  `json:",omitempty"`
	FromProgress float64 `json:",omitempty"`
	// Owner, when set, is the trial's owner on disk (the first run id of
	// its first segment), so that every segment resumes in one trial
	// directory; empty: this workflow chain's first run id.
	Owner string `json:",omitempty"`
	// ReportInterval bounds how often the running trial reports its
	// metrics to its campaign (0: 10 s; Tuning.ReportInterval).
	ReportInterval time.Duration `json:",omitempty"`
}

// Assignment is the pool's decision for one trial: its nodes (empty:
// preempted to 0 nodes). Epoch increases with every decision, so a trial
// ignores stale ones.
type Assignment struct {
	Epoch    int64    `json:"epoch"`
	Nodes    []string `json:"nodes"`
	NodeType string   `json:"node_type,omitempty"`
	// Reason says why a trial got no nodes (an allocator.Reason).
	Reason string `json:"reason,omitempty"`
	// Hosts places Nodes on the agents that hold them, rank 0 first; nil
	// when every node is the pool worker's own (a one-host source), and
	// the trial's run then goes to the pool's task queue as before.
	Hosts []HostNodes `json:"hosts,omitempty"`
	// NoReleaseAwaited: when the pool sent this, it was waiting for no
	// node of the trial's to be released (no Releasing entry of it), so a
	// trial that runs nothing need not confirm the assignment. Pools of
	// earlier builds leave it false: confirm.
	NoReleaseAwaited bool `json:"no_release_awaited,omitempty"`
	// Predicted are the metrics the pool's worker predicts for the
	// trial's architecture on NodeType, calibrated as of the allocation
	// (TrialAssignment.PredictedMetrics): a run on an agent host, which
	// has no throughput model, reports these. Nil for a trial without an
	// architecture, or from pools of earlier builds.
	PredictedMetrics map[string]float64 `json:"predicted_metrics,omitempty"`
}

// HostNodes are the nodes of one assignment held by one agent.
type HostNodes struct {
	Agent     string   `json:"agent"`
	TaskQueue string   `json:"task_queue"`
	Addr      string   `json:"addr,omitempty"`
	Nodes     []string `json:"nodes"`
}

// AgentLeave takes an agent's nodes out of the pool at once (SIGTERM:
// its trainers are checkpointing).
type AgentLeave struct {
	Agent       string `json:"agent"`
	Incarnation string `json:"incarnation"`
	Reason      string `json:"reason,omitempty"`
}

// AgentLeaseInput starts an agent's lease.
type AgentLeaseInput struct {
	Pool        string `json:"pool"`
	Agent       string `json:"agent"`
	Incarnation string `json:"incarnation"`
	// Refused, when set, tells the agent why the pool did not let it join
	// (a data directory not shared with the pool's other agents, a node id
	// another agent holds); the agent exits with it.
	Refused string `json:"refused,omitempty"`
}

// Released tells the pool that the trial's trainer no longer runs on any
// node outside the assignment of Epoch: nodes taken from it by that
// decision or an earlier one may go to other trials.
type Released struct {
	TrialID string `json:"trial_id"` // the trial's workflow id
	Epoch   int64  `json:"epoch"`
}

// DeregisterTrial releases a trial's nodes for good.
type DeregisterTrial struct {
	TrialID string `json:"trial_id"` // the trial's workflow id
}

// ThroughputProfile is what a trial has measured of its own throughput.
type ThroughputProfile struct {
	TrialID  string `json:"trial_id"` // the trial's workflow id
	Nodes    int    `json:"nodes"`
	NodeType string `json:"node_type,omitempty"`
	// Throughput is the robust samples/s estimate at Nodes.
	Throughput float64 `json:"throughput"`
	// Spread is the estimate's robust standard deviation.
	Spread float64 `json:"spread,omitempty"`
	// RescaleUpCost and RescaleDownCost are measured seconds of progress
	// lost per rescale, 0 when not measured yet.
	RescaleUpCost   float64 `json:"rescale_up_s,omitempty"`
	RescaleDownCost float64 `json:"rescale_down_s,omitempty"`
	// Model and Batch are what the trial trains as far as it knows now
	// (RegisterTrial.Model, .Batch: the campaign's, else its trainer's
	// reports); "" and 0: unknown. The pool keeps the newest it heard.
	Model string `json:"model,omitempty"`
	Batch int    `json:"batch,omitempty"`
}

// Progress is what the RunTrial activity forwards from the trainer's
// reports, at most every few seconds.
type Progress struct {
	Run int `json:"run"` // launch number of this trial
	// Attempt is the activity attempt (1 + restarts after failures).
	Attempt int `json:"attempt"`
	// Time is when the activity read the report (the worker's clock).
	Time       time.Time          `json:"time"`
	Nodes      int                `json:"nodes"`
	Samples    float64            `json:"samples"`
	Step       int64              `json:"step,omitempty"`
	Epoch      float64            `json:"epoch,omitempty"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Checkpoint string             `json:"checkpoint,omitempty"`
	Malformed  int                `json:"malformed,omitempty"`
	// Failures counts the trainer's failures in this run so far (a retry
	// after a lost worker or server is not one).
	Failures int `json:"failures,omitempty"`
	// BadCheckpoints counts the trial's reported checkpoints that were
	// rejected; BadCheckpoint names the latest and why.
	BadCheckpoints int    `json:"bad_checkpoints,omitempty"`
	BadCheckpoint  string `json:"bad_checkpoint,omitempty"`
	// Model and Batch are what the trainer's reports say it trains (the
	// latest it said; "" and 0 when it did not): the trial tells the pool,
	// unless the campaign's resources.model and .batch say it.
	Model string `json:"model,omitempty"`
	Batch int    `json:"batch,omitempty"`
}

// RunTrialInput runs one launch of a trial's trainer on its nodes.
type RunTrialInput struct {
	Trial      TrialInput `json:"trial"`
	Run        int        `json:"run"`
	Nodes      []string   `json:"nodes"`
	NodeType   string     `json:"node_type,omitempty"`
	ResumeFrom string     `json:"resume_from,omitempty"`
	// Owner identifies the trial's workflow chain (its first run id): a
	// trial directory left by an earlier campaign of the same name is
	// not taken for this trial's.
	Owner string `json:"owner,omitempty"`
	// Hosts places the run's nodes on agents, rank 0 first (nil: the
	// worker's own nodes); this activity runs the part on Hosts[Rank].
	Hosts []HostNodes `json:"hosts,omitempty"`
	Rank  int         `json:"rank,omitempty"`
	// Quiet: send no progress signals (an inline trial's campaign hears
	// only the result; the heartbeat still carries liveness).
	Quiet bool `json:"quiet,omitempty"`
	// After is the run this one is queued behind on its nodes (a
	// pipelined campaign; its RunRef): the worker starts this run's
	// trainer only once that run has had the nodes, even where the server
	// hands this run to the worker first.
	After string `json:"after,omitempty"`
	// Predicted are the metrics the pool's worker predicted for the
	// trial with this run's nodes (Assignment.PredictedMetrics): its
	// reports carry them where the worker running it has no throughput
	// model of its own (an agent host).
	PredictedMetrics map[string]float64 `json:"predicted_metrics,omitempty"`
}

// RunRef names one run of one trial among every run a worker sees:
// campaign, trial and run number.
func RunRef(t TrialInput, run int) string {
	return fmt.Sprintf("%s/%s/%s#%d", t.CampaignID, t.CampaignWorkflowID, t.TrialID, run)
}

// RegisterTrialInput is the RegisterTrial activity's input.
type RegisterTrialInput struct {
	Pool         string        `json:"pool"`
	Registration RegisterTrial `json:"registration"`
}

// RunOutcome is how one launch ended.
type RunOutcome string

const (
	RunCompleted RunOutcome = "completed" // the trainer exited 0 by itself
	RunStopped   RunOutcome = "stopped"   // stopped on cancellation (resize, preemption, stop)
)

// RunTrialResult is what RunTrial returns; a failing trainer is an error.
type RunTrialResult struct {
	Outcome    RunOutcome         `json:"outcome"`
	Samples    float64            `json:"samples"`
	Step       int64              `json:"step,omitempty"`
	Epoch      float64            `json:"epoch,omitempty"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Checkpoint string             `json:"checkpoint,omitempty"`
	Exit       gleaner.ExitStatus `json:"exit"`
	Attempt    int                `json:"attempt"`
	Malformed  int                `json:"malformed,omitempty"`
	// Failures, BadCheckpoints and BadCheckpoint are as in Progress.
	Failures       int    `json:"failures,omitempty"`
	BadCheckpoints int    `json:"bad_checkpoints,omitempty"`
	BadCheckpoint  string `json:"bad_checkpoint,omitempty"`
}

// Arch is the trial's architecture: the value of its ArchParam, or "".
func (in TrialInput) Arch() string {
	if v, ok := in.Params[in.ArchParam]; ok && in.ArchParam != "" && v.IsStr {
		return v.Str
	}
	return ""
}
