package gleaner

import "fmt"

// The one view of a trial's state that every command and the UI show.
// A trial's own state (TrialState, as its workflow or inline run keeps
// it) does not know what its campaign knows: that the campaign is paused,
// that a trial which reached its budget waits for its searcher, or that
// the searcher will never continue it. ClassifyTrial combines the two;
// CampaignStatus counts and lists trials by it, and client.Trials shows
// the same states, so `status`, `trials`, `leaderboard`, `--watch`, the
// UI's details and `gleaner dev` agree at every moment.

// States a trial has only in its campaign's view (TrialBrief.State).
const (
	// TrialParked: the trial reached its budget and holds no nodes; its
	// checkpoint waits for its searcher to continue it (a promotion).
	TrialParked TrialState = "parked"
	// TrialAtRung: the trial reached its budget below the search's top
	// budget and its searcher will not continue it: stopped at its rung
	// (TrialBrief.Stage).
	TrialAtRung TrialState = "stopped-at-rung"
)

// TrialBrief is one trial as its campaign classifies it.
type TrialBrief struct {
	TrialID string `json:"trial_id"`
	// WorkflowID is the workflow id of its latest segment (an inline
	// trial's key).
	WorkflowID string     `json:"workflow_id,omitempty"`
	State      TrialState `json:"state"`
	// Stage is the searcher's label of its latest segment (a rung).
	Stage string `json:"stage,omitempty"`
}

// TrialFacts are what a campaign knows of a trial besides its own state.
type TrialFacts struct {
	// Campaign is the campaign's phase.
	Campaign CampaignPhase
	// InFlight: the campaign has started the trial and not heard its end.
	InFlight bool
	// Parked: the trial reached its budget and is kept for a Continue.
	Parked bool
	// Final: its budget was the search's top budget (nothing to continue).
	Final bool
	// SearchDone: the searcher has shut down (it continues nothing more).
	SearchDone bool
}

// ClassifyTrial is the state a person is shown for a trial whose own
// state is own:
//   - in flight: paused while its campaign is paused; pending while it
//     waits for nodes (also when the pool preempted it to 0 nodes);
//     running while a trainer runs;
//   - parked at its budget: parked while its searcher may continue it;
//     once the campaign ended or its searcher shut down, completed at the
//     top budget and stopped-at-rung below it;
//   - otherwise its own end: completed, stopped or failed.
func ClassifyTrial(own TrialState, f TrialFacts) TrialState {
	ended := f.Campaign == CampaignCompleted || f.Campaign == CampaignStopped || f.Campaign == CampaignFailed
	switch {
	case f.Parked && !ended && !f.SearchDone && f.Campaign != CampaignStopping:
		return TrialParked
	case f.Parked && f.Final:
		return TrialCompleted
	case f.Parked:
		return TrialAtRung
	case !f.InFlight || own.Terminal():
		return own
	case f.Campaign == CampaignPaused:
		return TrialPaused
	case own == TrialRunning:
		return TrialRunning
	}
	return TrialPending
}

// InFlight is how many trials the campaign has started and not heard
// the end of: running, waiting for nodes or paused.
func (s CampaignStatus) InFlight() int { return s.Running + s.Waiting + s.Paused }

// Census is the trials not ended, by classified state, for people:
// "2 running", "1 pending (waiting for nodes)", "3 paused", "4 parked at
// their budget", "5 stopped at their rung", "1 pending (queued to start)"; running always,
// the others when there are any. Every command and the UI's details say
// it in these words.
func (s CampaignStatus) Census() []string {
	out := []string{fmt.Sprintf("%d running", s.Running)}
	for _, c := range []struct {
		n    int
		what string
	}{
		{s.Waiting, "pending (waiting for nodes)"},
		{s.Paused, "paused"},
		{s.Parked, "parked at their budget"},
		{s.AtRung, "stopped at their rung"},
		{s.Pending, "pending (queued to start)"},
	} {
		if c.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return out
}
