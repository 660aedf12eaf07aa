package workflows

import (
	"encoding/json"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// SignalControl (CampaignWorkflow → TrialWorkflow) carries a Control.
//
// Workflows cannot send updates to other workflows, so the campaign passes
// its pause, resume and stop on to its in-flight trials with this signal.
// The trial's side of the contract:
//   - pause: release its nodes gracefully (checkpoint) and wait at 0 nodes
//     in TrialPaused until resume or stop; no final report;
//   - resume: go back to waiting for nodes and running;
//   - stop: stop gracefully (checkpoint), then send its final TrialReport
//     with State TrialStopped (or TrialCompleted / TrialFailed if it ended
//     otherwise first) and end.
//
// Controls are idempotent: a trial may get the same one twice, or a pause
// after its trainer already finished, and must then do nothing. Every trial
// sends exactly one TrialReport with Final set, to CampaignWorkflowID, waits
// for that signal to be delivered, and only then ends; the campaign counts a
// trial as in flight until that report arrives, and counts one whose
// workflow closed without it as failed.
const SignalControl = "gleaner.control"

// ControlAction is what a Control asks of a trial.
type ControlAction string

const (
	ControlPause  ControlAction = "pause"
	ControlResume ControlAction = "resume"
	ControlStop   ControlAction = "stop"
)

// Control is the payload of SignalControl.
type Control struct {
	Action ControlAction `json:"action"`
	Reason string        `json:"reason,omitempty"`
}

// DefaultCampaignHistoryThreshold is the history length at which a campaign
// continues as new unless CampaignInput says otherwise: a fifth of
// Temporal's 51,200-event limit, leaving room for a burst of signals while
// it drains.
const DefaultCampaignHistoryThreshold = 10_000

// CampaignInput starts a CampaignWorkflow.
type CampaignInput struct {
	Spec gleaner.CampaignSpec `json:"spec"`
	// State is set when the workflow continues as new.
	State *CampaignState `json:"state,omitempty"`
	// HistoryThreshold is the history length that triggers continue-as-new
	// (default DefaultCampaignHistoryThreshold); the server's suggestion
	// triggers it too.
	HistoryThreshold int `json:"history_threshold,omitempty"`
	// Tuning shrinks the campaign's workflow tuning (tests); nil: the
	// defaults.
	Tuning *Tuning `json:"tuning,omitempty"`
}

// CampaignState is what a campaign carries across continue-as-new. It is
// bounded: in-flight trials ≤ max_concurrent, pending creates ≤
// max_concurrent, leaderboard ≤ LeaderboardSize, whatever the trial count.
type CampaignState struct {
	// Searcher is the searcher's snapshot (hpo.Searcher.Snapshot).
	Searcher json.RawMessage `json:"searcher"`
	// NextNumber is the number of the next trial (from 1).
	NextNumber int `json:"next_number"`
	// InFlight are the trials started and not yet reported final.
	InFlight []InFlightTrial `json:"in_flight,omitempty"`
	// Pending are creates and continues the searcher asked for that wait
	// for a slot or for the campaign to resume.
	Pending     []PendingTrial     `json:"pending,omitempty"`
	Counts      CampaignCounts     `json:"counts"`
	Leaderboard []LeaderboardEntry `json:"leaderboard,omitempty"`
	Paused      bool               `json:"paused,omitempty"`
	// Stopping is set once the campaign has asked its trials to stop; it
	// then ends as End when the last one has reported.
	Stopping bool          `json:"stopping,omitempty"`
	End      CampaignPhase `json:"end,omitempty"`
	// Reason says why the campaign is paused, stopping or ended.
	Reason string `json:"reason,omitempty"`
	// SearchDone is set when the searcher has shut down.
	SearchDone bool `json:"search_done,omitempty"`
	// SearchRevision is the revision of the searchers' rules the campaign
	// was created under (hpo.Revision); every later run keeps it.
	SearchRevision int `json:"search_revision,omitempty"`
	// Runs counts continue-as-new.
	Runs int `json:"runs,omitempty"`
	// Missed describes the trials counted in Counts.ObjectiveMissing.
	Missed *MissedObjective `json:"missed_objective,omitempty"`
	// WarmStarted counts the earlier campaigns' trials the searcher
	// started from (search.warm_start).
	WarmStarted int `json:"warm_started,omitempty"`
	// Parked are trials that reached their budget and may be continued
	// (at most MaxParked: beyond, the worst-scoring is forgotten).
	Parked []ParkedTrial `json:"parked,omitempty"`
	// Inline is a trial.inline campaign's trials and nodes.
	Inline *InlineState `json:"inline,omitempty"`
	// Best is the best objective value any trial has reported: it never
	// gets worse, also when that trial later reports worse or fails.
	Best *LeaderboardEntry `json:"best,omitempty"`
	// TopBudget is the largest budget the searcher gave a segment: a
	// trial parked at it has finished its search, one parked below it is
	// stopped at its rung once the searcher will not continue it.
	TopBudget float64 `json:"top_budget,omitempty"`
	// Front is the Pareto front of a campaign of several objectives or
	// with constraints (campaign_pareto.go), at most
	// gleaner.MaxParetoFront entries; FrontThinned counts those dropped
	// beyond, the most crowded first.
	Front        []LeaderboardEntry `json:"front,omitempty"`
	FrontThinned int                `json:"front_thinned,omitempty"`
}

// MaxParked bounds the trials a campaign keeps ready to continue (a
// searcher's Continue): each is a few hundred bytes of CampaignState.
// Promotion-based ASHA and PBT continue good trials, so the worst-scoring
// one is forgotten first; a Continue naming a forgotten trial comes back
// to the searcher as TrialFailed.
const MaxParked = 512

// PendingTrial is a trial waiting to start: a new one (hpo.Create), or
// the next segment of a parked one (Continue set).
type PendingTrial struct {
	hpo.Create
	Continue *ParkedTrial `json:"continue,omitempty"`
}

// ParkedTrial is a trial that reached its budget: it holds no nodes, and
// its checkpoint waits on disk for a Continue.
type ParkedTrial struct {
	TrialID string      `json:"trial_id"`
	Number  int         `json:"number"`
	Params  hpo.Params  `json:"params"`
	Segment int         `json:"segment,omitempty"`
	Score   float64     `json:"score"`
	Scored  bool        `json:"scored,omitempty"`
	Resume  TrialResume `json:"resume"`
	// Stage and Budget are the searcher's label and budget of the
	// segment that parked (a rung and its budget).
	Stage  string  `json:"stage,omitempty"`
	Budget float64 `json:"budget,omitempty"`
}

// Bounds of MissedObjective, so that CampaignState stays bounded.
const (
	missedTrialsKept  = 5
	missedMetricsKept = 20
)

// MissedObjective is what a campaign remembers of its trials that finished
// (completed or stopped) without ever reporting objective.metric: enough to
// tell a person why its leaderboard is empty, whatever the trial count.
type MissedObjective struct {
	// Trials are the ids of the first such trials (at most missedTrialsKept).
	Trials []string `json:"trials,omitempty"`
	// Metrics are the metric names such trials reported last, sorted (at
	// most missedMetricsKept; MetricsCut says that some were left out).
	Metrics    []string `json:"metrics,omitempty"`
	MetricsCut bool     `json:"metrics_cut,omitempty"`
	// Silent counts such trials that reported no metrics at all.
	Silent int `json:"silent,omitempty"`
}

// InFlightTrial is a trial the campaign has started and not yet heard the
// end of.
type InFlightTrial struct {
	TrialID    string     `json:"trial_id"`
	Number     int        `json:"number"`
	WorkflowID string     `json:"workflow_id"`
	Params     hpo.Params `json:"params"`
	Samples    float64    `json:"samples,omitempty"`
	Restarts   int        `json:"restarts,omitempty"`
	// Started is set once its child workflow has started (always, across
	// continue-as-new).
	Started bool `json:"started,omitempty"`
	// Stage and Segment are the searcher's label and the trial's segment
	// (TrialInput.Stage, Segment); Budget is the segment's budget.
	Stage   string  `json:"stage,omitempty"`
	Segment int     `json:"segment,omitempty"`
	Budget  float64 `json:"budget,omitempty"`
	// State is the trial's own state as it last told the campaign
	// (pending until it does); TrialBrief says what a person is shown.
	State TrialState `json:"state,omitempty"`
	// Values and Constraints are the latest complete result it reported
	// in a campaign of several objectives or with constraints.
	Values      []float64          `json:"values,omitempty"`
	Constraints map[string]float64 `json:"constraints,omitempty"`
}

// Application error types of CampaignWorkflow.
const (
	ErrTypeInvalidSpec = "InvalidCampaignSpec"
	ErrTypeBadState    = "InvalidCampaignState"
	ErrTypeMaxFailures = "MaxFailuresReached"
)

// Leaderboard entries in CampaignResult and in the UI details.
const (
	resultLeaderboardN  = 10
	detailsLeaderboardN = 10
)
