package gleaner

import "fmt"

// Trial modes (TrialPolicy.Mode): how a campaign runs its trials.
const (
	// TrialModeAuto, the default, picks inline trials for a campaign of
	// many trials of a fixed size and a workflow per trial otherwise
	// (PickTrialMode).
	TrialModeAuto = "auto"
	// TrialModeInline runs each trial as an activity of the campaign's
	// workflow (as TrialPolicy.Inline).
	TrialModeInline = "inline"
	// TrialModeWorkflow runs each trial as a workflow of its own.
	TrialModeWorkflow = "workflow"
)

// TrialModes are the values trial.mode takes ("" is auto).
var TrialModes = []string{TrialModeAuto, TrialModeInline, TrialModeWorkflow}

// AutoInlineTrials is how many trials (budget.max_trials) of a fixed size
// make trial.mode auto run them inline. Below it a workflow per trial
// costs the server little in all (about half a second of CPU per trial)
// and gives each trial its own history, pause and stop; from it on, the
// campaign's trials are many and, as a rule, short, and that cost is what
// limits how many a second the server can run (docs/benchmarks.md,
// "Orchestration at the limit").
const AutoInlineTrials = 500

// PickTrialMode is whether a campaign of this spec (after WithDefaults)
// runs its trials inline, and why, in words for the person who submits
// it. trial.inline: true and trial.mode inline or workflow decide; trial.mode
// auto (or unset) picks inline for at least AutoInlineTrials trials of a
// fixed size (min_nodes = max_nodes: inline trials are not rescaled),
// except in a NAS campaign that searches on a predicted metric: the pool
// registers an inline campaign as one job, without its trials'
// architectures, so it can neither price nor calibrate them (and a trial
// on an agent host, which has no throughput model, would carry none).
func (s CampaignSpec) PickTrialMode() (inline bool, reason string) {
	switch {
	case s.Trial.Inline:
		return true, "trial.inline: true"
	case s.Trial.Mode == TrialModeInline:
		return true, "trial.mode: inline"
	case s.Trial.Mode == TrialModeWorkflow:
		return false, "trial.mode: workflow"
	case s.Kind == "nas" && s.searchesPredicted():
		field, metric := s.predictedField()
		return false, fmt.Sprintf("trial.mode auto: %s searches on %s, which the pool's worker predicts for each trial's architecture and calibrates on what the pool measured of it: only a trial that is a workflow of its own is priced so, wherever it runs",
			field, metric)
	case s.Resources.MinNodes != s.Resources.MaxNodes:
		return false, fmt.Sprintf("trial.mode auto: trials rescale between %d and %d nodes, which takes a workflow each",
			s.Resources.MinNodes, s.Resources.MaxNodes)
	case s.Budget.MaxTrials < AutoInlineTrials:
		return false, fmt.Sprintf("trial.mode auto: %d trials (under %d), each with its own workflow, history, pause and stop; trial.mode: inline to run them inside the campaign",
			s.Budget.MaxTrials, AutoInlineTrials)
	}
	return true, fmt.Sprintf("trial.mode auto: %d trials of a fixed size (%d node(s) each) run inside the campaign, a twentieth of the server's work per trial; trial.mode: workflow for a workflow each",
		s.Budget.MaxTrials, s.Resources.MinNodes)
}

// WithTrialMode returns the spec with Inline set as PickTrialMode decides.
// Submission applies it once; the campaign's workflow reads only Inline,
// so a campaign keeps the mode it was submitted with.
func (s CampaignSpec) WithTrialMode() CampaignSpec {
	s.Trial.Inline, _ = s.PickTrialMode()
	return s
}
