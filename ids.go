package gleaner

import (
	"fmt"
	"time"
)

// The names a client needs to find and talk to Gleaner's workflows: task
// queue, workflow types and ids, queries, updates, search attributes and
// memo keys. The workflows package implements them; these are the wire
// contract, so a program that only submits and watches campaigns needs
// neither Temporal's workflow code nor the allocator.

// TaskQueue is the default task queue of Gleaner's workers.
const TaskQueue = "gleaner"

// Workflow type names.
const (
	CampaignWorkflowName = "gleaner.Campaign"
	TrialWorkflowName    = "gleaner.Trial"
	PoolWorkflowName     = "gleaner.Pool"
	// TrialRecordsWorkflowName keeps a chunk of an inline campaign's ended
	// trials: its input and result are the records (TrialRecords).
	TrialRecordsWorkflowName = "gleaner.TrialRecords"
	// PoolRecordsWorkflowName keeps a chunk of a pool's log: its input
	// and result are the records (PoolRecords).
	PoolRecordsWorkflowName = "gleaner.PoolRecords"
)

// CampaignWorkflowID is the workflow id of campaign name.
func CampaignWorkflowID(name string) string { return "gleaner-campaign-" + name }

// TrialWorkflowID is the workflow id of a campaign's n-th trial.
func TrialWorkflowID(campaignWorkflowID string, n int) string {
	return fmt.Sprintf("%s-trial-%05d", campaignWorkflowID, n)
}

// TrialSegmentWorkflowID is the workflow id of segment seg of trial
// number n (a trial's k-th segment is the one its searcher's (k−1)-th
// Continue started): the first keeps TrialWorkflowID.
func TrialSegmentWorkflowID(campaignWorkflowID string, n, seg int) string {
	if seg <= 1 {
		return TrialWorkflowID(campaignWorkflowID, n)
	}
	return fmt.Sprintf("%s.%d", TrialWorkflowID(campaignWorkflowID, n), seg)
}

// TrialRecordsWorkflowID is the workflow id of a campaign's chunk n (from 1).
func TrialRecordsWorkflowID(campaignWorkflowID string, n int) string {
	return fmt.Sprintf("%s-records-%05d", campaignWorkflowID, n)
}

// PoolWorkflowID is the workflow id of pool name.
func PoolWorkflowID(pool string) string { return "gleaner-pool-" + pool }

// PoolRecordsWorkflowID is the workflow id of chunk n (from 0) of the log
// of the pool whose workflow id is poolWorkflowID.
func PoolRecordsWorkflowID(poolWorkflowID string, n int) string {
	return fmt.Sprintf("%s-log-%05d", poolWorkflowID, n)
}

// Queries.
const (
	// QueryStatus returns CampaignStatus, TrialStatus or PoolStatus.
	QueryStatus = "gleaner.status"
	// QueryLeaderboard (CampaignWorkflow) returns []LeaderboardEntry.
	QueryLeaderboard = "gleaner.leaderboard"
	// QueryDemand (PoolWorkflow) returns PoolDemand.
	QueryDemand = "gleaner.demand"
	// QueryPredicted (PoolWorkflow), given a registered trial's id,
	// returns its PoolTrial.PredictedMetrics (nil for none): a run on an
	// agent host reads its calibrated prediction as of the pool's latest
	// allocation when it ends.
	QueryPredicted = "gleaner.predicted"
	// QueryLibrary (PoolWorkflow) returns PoolLibrary: the curves the
	// pool learned from trials that left it.
	QueryLibrary = "gleaner.library"
	// QueryTrials (CampaignWorkflow) returns []TrialStatus: an inline
	// campaign's in-flight trials and the ended ones not yet in a
	// TrialRecords workflow.
	QueryTrials = "gleaner.trials"
	// QueryPoolLog (PoolWorkflow) returns PoolLog: the pool's log
	// entries not yet kept in a PoolRecords chunk.
	QueryPoolLog = "gleaner.pool-log"
)

// Updates (CampaignWorkflow and TrialWorkflow); their argument is
// ControlRequest and they return the status after the change.
const (
	UpdatePause  = "gleaner.pause"
	UpdateResume = "gleaner.resume"
	UpdateStop   = "gleaner.stop"
)

// Names of the typed search attributes Gleaner's workflows set. Every one
// must be registered with the namespace before a workflow sets it
// (`gleaner setup`); the Temporal UI and `temporal workflow list --query`
// then filter on them, e.g. `GleanerKind = "trial" AND GleanerCampaign =
// "mnist"`. The workflows package holds them as typed keys
// (workflows.SearchAttributes).
const (
	// SearchAttrCampaign (Keyword) is the campaign's name, on the campaign
	// and its trials.
	SearchAttrCampaign = "GleanerCampaign"
	// SearchAttrKind (Keyword) is one of the WorkflowKind values.
	SearchAttrKind = "GleanerKind"
	// SearchAttrStatus (Keyword) is the workflow's state: a CampaignPhase
	// on campaigns, a TrialState on trials.
	SearchAttrStatus = "GleanerStatus"
	// SearchAttrBestScore (Double) is the campaign's best objective value
	// so far.
	SearchAttrBestScore = "GleanerBestScore"
	// SearchAttrHypervolume (Double) is the hypervolume of the Pareto
	// front of a campaign of several objectives or with constraints
	// (ParetoFront.Hypervolume), which sets it instead of
	// SearchAttrBestScore.
	SearchAttrHypervolume = "GleanerHypervolume"
	// SearchAttrTrialsDone (Int) counts the campaign's trials that have
	// ended (completed, stopped or failed).
	SearchAttrTrialsDone = "GleanerTrialsDone"
	// SearchAttrTrialsRunning (Int) counts the campaign's trials in flight.
	SearchAttrTrialsRunning = "GleanerTrialsRunning"
	// SearchAttrTrial (Keyword) is a trial's id within its campaign, e.g.
	// "t00042".
	SearchAttrTrial = "GleanerTrial"
	// SearchAttrPool (Keyword) is the pool a trial runs in, or a pool's
	// own name.
	SearchAttrPool = "GleanerPool"
)

// Values of SearchAttrKind: the kind of workflow (not CampaignSpec.Kind, hpo or nas).
const (
	WorkflowKindCampaign = "campaign"
	WorkflowKindTrial    = "trial"
	WorkflowKindPool     = "pool"
	// WorkflowKindRecords marks a chunk of an inline campaign's ended trials.
	WorkflowKindRecords = "records"
	// WorkflowKindPoolRecords marks a chunk of a pool's log (PoolRecords).
	WorkflowKindPoolRecords = "pool-records"
)

// MemoSnapshot is the memo key of an inline campaign's CampaignSnapshot.
const MemoSnapshot = "gleaner.snapshot"

// InlineCountsEvery bounds how often an inline campaign upserts its trial
// counts (SearchAttrTrialsDone, SearchAttrTrialsRunning) and its memo
// snapshot (MemoSnapshot).
const InlineCountsEvery = 5 * time.Second

// InlineRecordsChunk is how many ended trials one TrialRecords workflow
// of an inline campaign keeps at most (about 0.5 KB a trial).
const InlineRecordsChunk = 500

// ErrTypeTrialFailed is the type of the application error a failed
// trial's workflow ends with; its details are the trial's final
// TrialReport (FailedTrialReport).
const ErrTypeTrialFailed = "TrialFailed"

// ErrTypeRunCanceled is the type of the error a RunTrial returns when its
// run was stopped before its trainer started: nothing ran. Its context
// was cancelled either because the server asked (the run's cancellation
// is then reported as one) or because the worker could not deliver a
// heartbeat (the SDK cancels the run then, and the error is reported as
// a failure): either way the trial waits for nodes and runs again.
const ErrTypeRunCanceled = "Canceled"
