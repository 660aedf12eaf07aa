package workflows

import "github.com/gleaner-hpc/gleaner"

// The view and wire types a client reads live in the root package
// gleaner, so that a program which only submits and watches campaigns
// imports neither this package nor what it imports (the allocator and
// its cgo solver). They are re-declared here under their old names:
// workflow code, the CLI and the recorded histories use them unchanged.

// Names (see the root package).
const (
	TaskQueue                = gleaner.TaskQueue
	CampaignWorkflowName     = gleaner.CampaignWorkflowName
	TrialWorkflowName        = gleaner.TrialWorkflowName
	PoolWorkflowName         = gleaner.PoolWorkflowName
	TrialRecordsWorkflowName = gleaner.TrialRecordsWorkflowName
	PoolRecordsWorkflowName  = gleaner.PoolRecordsWorkflowName

	QueryStatus      = gleaner.QueryStatus
	QueryLeaderboard = gleaner.QueryLeaderboard
	QueryDemand      = gleaner.QueryDemand
	QueryPredicted   = gleaner.QueryPredicted
	QueryLibrary     = gleaner.QueryLibrary
	QueryTrials      = gleaner.QueryTrials
	QueryPoolLog     = gleaner.QueryPoolLog

	UpdatePause  = gleaner.UpdatePause
	UpdateResume = gleaner.UpdateResume
	UpdateStop   = gleaner.UpdateStop

	WorkflowKindCampaign = gleaner.WorkflowKindCampaign
	WorkflowKindTrial    = gleaner.WorkflowKindTrial
	WorkflowKindPool     = gleaner.WorkflowKindPool
	WorkflowKindRecords  = gleaner.WorkflowKindRecords

	WorkflowKindPoolRecords = gleaner.WorkflowKindPoolRecords

	MemoSnapshot       = gleaner.MemoSnapshot
	InlineCountsEvery  = gleaner.InlineCountsEvery
	ErrTypeTrialFailed = gleaner.ErrTypeTrialFailed
	ErrTypeRunCanceled = gleaner.ErrTypeRunCanceled
	LeaderboardSize    = gleaner.LeaderboardSize
)

// CampaignWorkflowID is gleaner.CampaignWorkflowID.
func CampaignWorkflowID(name string) string { return gleaner.CampaignWorkflowID(name) }

// TrialWorkflowID is gleaner.TrialWorkflowID.
func TrialWorkflowID(campaignWorkflowID string, n int) string {
	return gleaner.TrialWorkflowID(campaignWorkflowID, n)
}

// TrialSegmentWorkflowID is gleaner.TrialSegmentWorkflowID.
func TrialSegmentWorkflowID(campaignWorkflowID string, n, seg int) string {
	return gleaner.TrialSegmentWorkflowID(campaignWorkflowID, n, seg)
}

// TrialRecordsWorkflowID is gleaner.TrialRecordsWorkflowID.
func TrialRecordsWorkflowID(campaignWorkflowID string, n int) string {
	return gleaner.TrialRecordsWorkflowID(campaignWorkflowID, n)
}

// PoolWorkflowID is gleaner.PoolWorkflowID.
func PoolWorkflowID(pool string) string { return gleaner.PoolWorkflowID(pool) }

// PoolRecordsWorkflowID is gleaner.PoolRecordsWorkflowID.
func PoolRecordsWorkflowID(poolWorkflowID string, n int) string {
	return gleaner.PoolRecordsWorkflowID(poolWorkflowID, n)
}

// FailedTrialReport is gleaner.FailedTrialReport.
func FailedTrialReport(err error) (TrialReport, bool) { return gleaner.FailedTrialReport(err) }

// ClassifyTrial is gleaner.ClassifyTrial.
func ClassifyTrial(own TrialState, f TrialFacts) TrialState { return gleaner.ClassifyTrial(own, f) }

// Trials.
type (
	TrialState    = gleaner.TrialState
	TrialProgress = gleaner.TrialProgress
	MetricPoint   = gleaner.MetricPoint
	TrialStatus   = gleaner.TrialStatus
	TrialReport   = gleaner.TrialReport
	TrialResume   = gleaner.TrialResume
	TrialRecords  = gleaner.TrialRecords
	TrialBrief    = gleaner.TrialBrief
	TrialFacts    = gleaner.TrialFacts
)

const (
	TrialPending   = gleaner.TrialPending
	TrialRunning   = gleaner.TrialRunning
	TrialPaused    = gleaner.TrialPaused
	TrialCompleted = gleaner.TrialCompleted
	TrialStopped   = gleaner.TrialStopped
	TrialFailed    = gleaner.TrialFailed
	TrialParked    = gleaner.TrialParked
	TrialAtRung    = gleaner.TrialAtRung
)

// Campaigns.
type (
	CampaignPhase    = gleaner.CampaignPhase
	CampaignCounts   = gleaner.CampaignCounts
	CampaignStatus   = gleaner.CampaignStatus
	CampaignResult   = gleaner.CampaignResult
	CampaignSnapshot = gleaner.CampaignSnapshot
	LeaderboardEntry = gleaner.LeaderboardEntry
	ControlRequest   = gleaner.ControlRequest
)

const (
	CampaignRunning   = gleaner.CampaignRunning
	CampaignPaused    = gleaner.CampaignPaused
	CampaignStopping  = gleaner.CampaignStopping
	CampaignCompleted = gleaner.CampaignCompleted
	CampaignStopped   = gleaner.CampaignStopped
	CampaignFailed    = gleaner.CampaignFailed
)

// Pools.
type (
	PoolStatus    = gleaner.PoolStatus
	PoolState     = gleaner.PoolState
	PoolAgent     = gleaner.PoolAgent
	PoolTrial     = gleaner.PoolTrial
	PoolDemand    = gleaner.PoolDemand
	PoolLibrary   = gleaner.PoolLibrary
	ProfilePoint  = gleaner.ProfilePoint
	SolveSummary  = gleaner.SolveSummary
	Releasing     = gleaner.Releasing
	LearnedCurve  = gleaner.LearnedCurve
	CurvePoint    = gleaner.CurvePoint
	AgentJoin     = gleaner.AgentJoin
	RegisterTrial = gleaner.RegisterTrial

	PoolEvent           = gleaner.PoolEvent
	PoolEventKind       = gleaner.PoolEventKind
	NodeChange          = gleaner.NodeChange
	PoolSnapshot        = gleaner.PoolSnapshot
	PoolRecords         = gleaner.PoolRecords
	PoolLog             = gleaner.PoolLog
	PredictedThroughput = gleaner.PredictedThroughput
)

const (
	PoolEventNodes      = gleaner.PoolEventNodes
	PoolEventSolve      = gleaner.PoolEventSolve
	PoolEventRegister   = gleaner.PoolEventRegister
	PoolEventDeregister = gleaner.PoolEventDeregister
)
