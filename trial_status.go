package gleaner

import (
	"errors"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A trial's state as its workflow (or its inline campaign) keeps it and
// reports it: what QueryStatus on a trial answers, what a trial tells its
// campaign, and what an inline campaign keeps of its ended trials.

// TrialState is where a trial is in its life.
type TrialState string

const (
	TrialPending   TrialState = "pending"   // registered, waiting for nodes
	TrialRunning   TrialState = "running"   // a trainer runs on its nodes
	TrialPaused    TrialState = "paused"    // by a person, or preempted to 0 nodes
	TrialCompleted TrialState = "completed" // the trainer finished (exit 0)
	TrialStopped   TrialState = "stopped"   // stopped by a person or its campaign
	TrialFailed    TrialState = "failed"    // the trainer kept failing
)

// Terminal reports whether the state is final.
func (s TrialState) Terminal() bool {
	return s == TrialCompleted || s == TrialStopped || s == TrialFailed
}

// TrialProgress is the durable part of a trial's state.
type TrialProgress struct {
	State      TrialState         `json:"state"`
	Samples    float64            `json:"samples"`
	Step       int64              `json:"step"`
	Epoch      float64            `json:"epoch"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Checkpoint string             `json:"checkpoint,omitempty"`
	Nodes      []string           `json:"nodes,omitempty"`
	// Restarts counts relaunches after failures; Rescales counts relaunches
	// for a new assignment (resize, preemption, resume).
	Restarts int `json:"restarts"`
	Rescales int `json:"rescales"`
	// History is a bounded window of the objective metric over samples.
	History []MetricPoint `json:"history,omitempty"`
	// MalformedReports counts report lines skipped.
	MalformedReports int `json:"malformed_reports,omitempty"`
	// Killed counts runs that ignored SIGTERM for the whole grace period
	// and were SIGKILLed (they resumed from their last periodic checkpoint).
	Killed int    `json:"killed,omitempty"`
	Error  string `json:"error,omitempty"`
	// Runs counts the trainer's launches over the trial's whole life (it
	// survives continue-as-new, so run directories are never reused).
	Runs int `json:"runs,omitempty"`
	// BadCheckpoints counts reported checkpoints that were rejected
	// (missing, or outside the checkpoint directory) and never became a
	// resume point; BadCheckpoint names the latest and why.
	BadCheckpoints int    `json:"bad_checkpoints,omitempty"`
	BadCheckpoint  string `json:"bad_checkpoint,omitempty"`
	// ObjectiveSeen is set once a report carried the objective metric.
	ObjectiveSeen bool `json:"objective_seen,omitempty"`
	// Model and Batch are what the trainer's reports said it trains
	// (workflows.Progress.Model, .Batch), kept across continue-as-new.
	Model string `json:"model,omitempty"`
	Batch int    `json:"batch,omitempty"`
}

// MetricPoint is one sample of the objective metric.
type MetricPoint struct {
	Samples float64 `json:"samples"`
	Value   float64 `json:"value"`
}

// TrialStatus answers QueryStatus on a TrialWorkflow.
type TrialStatus struct {
	TrialID string     `json:"trial_id"`
	Params  hpo.Params `json:"params"`
	// Stage is the searcher's label of the trial's latest segment (a
	// rung, a generation); empty for searchers without stages.
	Stage string `json:"stage,omitempty"`
	TrialProgress
}

// TrialReport is what a trial tells its campaign: its latest metrics while
// it runs (rate-limited) and its outcome when it ends.
type TrialReport struct {
	TrialID    string             `json:"trial_id"`
	WorkflowID string             `json:"workflow_id"`
	Number     int                `json:"number"`
	Params     hpo.Params         `json:"params"`
	State      TrialState         `json:"state"`
	Final      bool               `json:"final"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Samples    float64            `json:"samples"`
	Step       int64              `json:"step,omitempty"`
	Epoch      float64            `json:"epoch,omitempty"`
	Restarts   int                `json:"restarts"`
	Rescales   int                `json:"rescales"`
	Error      string             `json:"error,omitempty"`
	// Stage and Segment are the trial's workflows.TrialInput.Stage and Segment.
	Stage   string `json:"stage,omitempty"`
	Segment int    `json:"segment,omitempty"`
	// Resume is set on the final report of a trial that reached its
	// budget (workflows.TrialInput.Budget): what its next segment starts from.
	Resume *TrialResume `json:"resume,omitempty"`
	// ObjectiveMissing marks a final report of a trial that ended without
	// ever reporting the campaign's objective metric (Metrics holds the
	// names it did report, if any).
	ObjectiveMissing bool `json:"objective_missing,omitempty"`
}

// TrialResume is what a trial's next segment needs of the one that
// reached its budget.
type TrialResume struct {
	Owner      string  `json:"owner"`
	Samples    float64 `json:"samples"`
	Step       int64   `json:"step,omitempty"`
	Epoch      float64 `json:"epoch,omitempty"`
	Checkpoint string  `json:"checkpoint,omitempty"`
	Runs       int     `json:"runs"`
	Restarts   int     `json:"restarts,omitempty"`
	Rescales   int     `json:"rescales,omitempty"`
	Seen       bool    `json:"objective_seen,omitempty"`
}

// Progress is the TrialProgress a segment started from r begins with.
func (r TrialResume) Progress() TrialProgress {
	return TrialProgress{State: TrialPending, Samples: r.Samples, Step: r.Step, Epoch: r.Epoch,
		Checkpoint: r.Checkpoint, Runs: r.Runs, Restarts: r.Restarts, Rescales: r.Rescales, ObjectiveSeen: r.Seen}
}

// TrialRecords is a chunk of an inline campaign's ended trials.
type TrialRecords struct {
	Campaign string        `json:"campaign"`
	Chunk    int           `json:"chunk"`
	Trials   []TrialStatus `json:"trials"`
}

// FailedTrialReport is the final report a failed trial's workflow carries
// in its error (an application error of type ErrTypeTrialFailed): Get on
// a failed trial's workflow returns that error, not a result.
func FailedTrialReport(err error) (TrialReport, bool) {
	// Temporal's *ApplicationError, named by its methods so that this
	// package needs no Temporal import.
	var app interface {
		Type() string
		HasDetails() bool
		Details(d ...any) error
	}
	var r TrialReport
	if errors.As(err, &app) && app.Type() == ErrTypeTrialFailed && app.HasDetails() && app.Details(&r) == nil && r.Final {
		return r, true
	}
	return TrialReport{}, false
}
