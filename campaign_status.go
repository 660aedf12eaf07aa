package gleaner

import (
	"time"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A campaign as a client sees it: what it is started with, what its
// status query and its updates answer, what it returns.

// CampaignInput starts a CampaignWorkflow: what a client submits. The
// workflow's own input (workflows.CampaignInput) adds the state it
// carries across continue-as-new; without that state, both encode to the
// same JSON.
type CampaignInput struct {
	Spec CampaignSpec `json:"spec"`
	// HistoryThreshold is the history length that triggers continue-as-new
	// (0: the workflow's default); the server's suggestion triggers it too.
	HistoryThreshold int `json:"history_threshold,omitempty"`
}

// LeaderboardSize is how many entries a campaign keeps.
const LeaderboardSize = 100

// CampaignPhase is where a campaign is in its life; it is also the value of
// GleanerStatus on the campaign.
type CampaignPhase string

const (
	CampaignRunning   CampaignPhase = "running"
	CampaignPaused    CampaignPhase = "paused"   // creates no trials; its trials are paused
	CampaignStopping  CampaignPhase = "stopping" // waits for its stopped trials' final reports
	CampaignCompleted CampaignPhase = "completed"
	CampaignStopped   CampaignPhase = "stopped" // by a person
	CampaignFailed    CampaignPhase = "failed"  // budget.max_failures reached
)

// CampaignCounts counts a campaign's trials.
type CampaignCounts struct {
	Created   int `json:"created"`
	Completed int `json:"completed"`
	Stopped   int `json:"stopped"`
	Failed    int `json:"failed"`
	// Continued counts segments started by a searcher's Continue (a trial
	// continued counts once in Completed, Stopped or Failed, by its latest
	// segment).
	Continued int `json:"continued,omitempty"`
	// ObjectiveMissing counts the completed and stopped trials (a subset
	// of Completed + Stopped) that never reported objective.metric.
	ObjectiveMissing int `json:"objective_missing,omitempty"`
}

// Ended is how many trials have ended, whichever way.
func (c CampaignCounts) Ended() int { return c.Completed + c.Stopped + c.Failed }

// LeaderboardEntry is one trial's best objective value. The leaderboard
// holds running, completed and stopped trials that reported the objective,
// best first (ties: lower number first); failed trials leave it.
type LeaderboardEntry struct {
	TrialID string     `json:"trial_id"`
	Number  int        `json:"number"`
	Params  hpo.Params `json:"params"`
	// Score is the best value of the objective the trial reported;
	// Latest its latest one.
	Score  float64 `json:"score"`
	Latest float64 `json:"latest"`
	// State is the trial's state as the campaign classifies it
	// (ClassifyTrial): running, pending, paused, parked,
	// stopped-at-rung, completed or stopped.
	State    TrialState `json:"state"`
	Samples  float64    `json:"samples"`
	Restarts int        `json:"restarts,omitempty"`
	// Stage is the searcher's label for the trial's latest segment (a
	// rung, a generation); empty for searchers without stages.
	Stage string `json:"stage,omitempty"`
	// Values, Constraints, Infeasible and Rank are set in a campaign of
	// several objectives or with constraints (CampaignSpec.MultiObjective;
	// pareto_view.go), whose Score and Latest are then Values[0].
	// Values are the trial's objectives' values in the campaign's order;
	// Constraints its constrained metrics' values from the same report
	// (a metric it did not report is absent); Infeasible that one of
	// them breaks its bound or is absent; Rank its non-dominated rank
	// among the trials the leaderboard holds (1: no other dominates it).
	Values      []float64          `json:"values,omitempty"`
	Constraints map[string]float64 `json:"constraints,omitempty"`
	Infeasible  bool               `json:"infeasible,omitempty"`
	Rank        int                `json:"rank,omitempty"`
}

// CampaignStatus answers QueryStatus on a CampaignWorkflow and is what the
// pause, resume and stop updates return.
type CampaignStatus struct {
	Campaign string        `json:"campaign"`
	State    CampaignPhase `json:"state"`
	Reason   string        `json:"reason,omitempty"`
	CampaignCounts
	// Running, Waiting and Paused split the trials in flight (started,
	// not ended): a trainer runs, it waits for nodes, or it is paused
	// with its campaign.
	Running int `json:"running"`
	Waiting int `json:"waiting"`
	Paused  int `json:"paused"`
	// Pending counts creates and continues waiting for a slot or for
	// resume.
	Pending int `json:"pending"`
	// Parked counts trials that reached their budget and wait, holding no
	// nodes, for their searcher to continue them; AtRung those its
	// searcher will not continue (stopped at their rung).
	Parked        int `json:"parked,omitempty"`
	AtRung        int `json:"stopped_at_rung,omitempty"`
	MaxTrials     int `json:"max_trials"`
	MaxConcurrent int `json:"max_concurrent"`
	MaxFailures   int `json:"max_failures"`
	// TrialMode is how the campaign runs its trials: "workflow" (a
	// workflow each), "inline" (activities of the campaign), or "inline,
	// pipelined" with the runs queued behind each training one, e.g.
	// "inline, pipelined 2 deep"; "" from campaigns before it was kept.
	TrialMode string            `json:"trial_mode,omitempty"`
	Progress  float64           `json:"progress"` // the searcher's, in [0, 1]
	Objective string            `json:"objective"`
	Mode      string            `json:"mode"`
	Best      *LeaderboardEntry `json:"best,omitempty"`
	// Objectives and Constraints are a campaign's objectives and
	// constraints when it has several objectives or any constraint
	// (Objective and Mode are then the first objective's); its best is
	// then Pareto, and Best is nil.
	Objectives  []hpo.Objective  `json:"objectives,omitempty"`
	Constraints []hpo.Constraint `json:"constraints,omitempty"`
	Pareto      *ParetoFront     `json:"pareto,omitempty"`
	// Runs counts continue-as-new.
	Runs int `json:"runs"`
	// WarmStarted counts the earlier campaigns' trials the searcher
	// started from (search.warm_start).
	WarmStarted int `json:"warm_started,omitempty"`
	// Warnings are problems a person should act on, from the first
	// finished trial that never reported objective.metric on (see
	// ObjectiveMissing in the counts); empty when there are none.
	Warnings []string `json:"warnings,omitempty"`
	// Trials are the trials in flight and those parked or stopped at
	// their rung, as the campaign classifies them (the states `trials`
	// shows for them), by trial id.
	Trials []TrialBrief `json:"trials,omitempty"`
	// AsOf is set on a status read from an inline campaign's memo
	// (CampaignSnapshot) rather than asked of the campaign: the time the
	// campaign wrote it.
	AsOf time.Time `json:"as_of,omitzero"`
}

// CampaignResult is what a campaign returns. A campaign that reaches
// budget.max_failures fails with a non-retryable ApplicationError of type
// workflows.ErrTypeMaxFailures whose details are its CampaignResult.
type CampaignResult struct {
	Campaign string        `json:"campaign"`
	State    CampaignPhase `json:"state"`
	Reason   string        `json:"reason,omitempty"`
	CampaignCounts
	Best *LeaderboardEntry `json:"best,omitempty"`
	// Pareto is the front of a campaign of several objectives or with
	// constraints (CampaignStatus.Pareto).
	Pareto *ParetoFront `json:"pareto,omitempty"`
	// Leaderboard is the top 10.
	Leaderboard []LeaderboardEntry `json:"leaderboard"`
	// Warnings are CampaignStatus.Warnings at the end.
	Warnings []string `json:"warnings,omitempty"`
}

// ControlRequest is the argument of the pause, resume and stop updates.
type ControlRequest struct {
	Reason string `json:"reason,omitempty"`
}

// CampaignSnapshot is an inline campaign's status and the top of its
// leaderboard, in its memo, refreshed with its search attributes (at
// most every InlineCountsEvery): a busy campaign answers queries only
// between its workflow tasks, and a client that cannot wait reads this
// instead (client.Status, client.Leaderboard).
type CampaignSnapshot struct {
	Status      CampaignStatus     `json:"status"`
	Leaderboard []LeaderboardEntry `json:"leaderboard,omitempty"`
}
