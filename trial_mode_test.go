package gleaner

import (
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func TestPickTrialMode(t *testing.T) {
	spec := func(trials, minNodes, maxNodes int, inline bool, mode string) CampaignSpec {
		s := CampaignSpec{Name: "c", Command: []string{"train"}, Objective: ObjectiveSpec{Metric: "loss"},
			Budget: Budget{MaxTrials: trials}, Resources: Resources{MinNodes: minNodes, MaxNodes: maxNodes},
			Trial: TrialPolicy{Inline: inline, Mode: mode}}
		return s.WithDefaults()
	}
	for _, tc := range []struct {
		name   string
		spec   CampaignSpec
		inline bool
		reason string
	}{
		{"many trials of a fixed size", spec(1000, 1, 1, false, ""), true, "trial.mode auto: 1000 trials of a fixed size"},
		{"auto said", spec(500, 2, 2, false, TrialModeAuto), true, "(2 node(s) each)"},
		{"few trials", spec(499, 1, 1, false, ""), false, "499 trials (under 500)"},
		{"elastic trials", spec(1000, 1, 4, false, ""), false, "rescale between 1 and 4 nodes"},
		{"inline asked", spec(10, 1, 1, true, ""), true, "trial.inline: true"},
		{"mode inline", spec(10, 1, 1, false, TrialModeInline), true, "trial.mode: inline"},
		{"mode workflow", spec(100000, 1, 1, false, TrialModeWorkflow), false, "trial.mode: workflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.spec.Validate(); err != nil {
				t.Fatalf("spec does not validate: %v", err)
			}
			inline, reason := tc.spec.PickTrialMode()
			if inline != tc.inline || !strings.Contains(reason, tc.reason) {
				t.Errorf("PickTrialMode() = %v, %q; want %v, a reason with %q", inline, reason, tc.inline, tc.reason)
			}
			if got := tc.spec.WithTrialMode().Trial.Inline; got != tc.inline {
				t.Errorf("WithTrialMode().Trial.Inline = %v, want %v", got, tc.inline)
			}
		})
	}
}

func TestTrialModeValidation(t *testing.T) {
	base := CampaignSpec{Name: "c", Command: []string{"train"}, Objective: ObjectiveSpec{Metric: "loss"}, Budget: Budget{MaxTrials: 10}}
	for _, tc := range []struct {
		trial     TrialPolicy
		resources Resources
		want      string
	}{
		{TrialPolicy{Mode: "fast"}, Resources{}, `trial.mode: "fast" is not one of auto, inline, workflow`},
		{TrialPolicy{Mode: TrialModeWorkflow, Inline: true}, Resources{}, "trial.mode: workflow, but trial.inline: true"},
		{TrialPolicy{Mode: TrialModeInline}, Resources{MinNodes: 1, MaxNodes: 2}, "inline trials have a fixed size"},
	} {
		s := base
		s.Trial, s.Resources = tc.trial, tc.resources
		err := s.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate() = %v, want an error with %q", tc.trial, err, tc.want)
		}
	}
}

// A NAS campaign of many fixed-size trials runs them inline, unless it
// searches on a predicted metric: the pool prices and calibrates only
// trials that are workflows of their own.
func TestPickTrialModeForHardwareAwareNAS(t *testing.T) {
	minSpeed := 100.0
	s := CampaignSpec{Name: "c", Kind: "nas", Command: []string{"train"},
		Space:     hpo.Space{{Name: "arch", Type: hpo.ParamArch, Architecture: &hpo.ArchSpec{Cell: &hpo.CellSpace{}}}},
		Objective: ObjectiveSpec{Metric: "val_accuracy", Mode: "max"},
		Budget:    Budget{MaxTrials: 1000}, Resources: Resources{MinNodes: 1, MaxNodes: 1}}
	for _, tc := range []struct {
		name        string
		objectives  []ObjectiveSpec
		constraints []hpo.Constraint
		inline      bool
		reason      string
	}{
		{"accuracy alone", nil, nil, true, "1000 trials of a fixed size"},
		{"predicted objective", []ObjectiveSpec{{Metric: "val_accuracy", Mode: "max"}, {Metric: MetricPredictedLatency, Mode: "min"}}, nil, false,
			"objectives[1] searches on predicted_ms_per_sample"},
		{"predicted constraint", nil, []hpo.Constraint{{Metric: MetricPredictedThroughput, Min: &minSpeed}}, false,
			"constraints[0] searches on predicted_samples_per_second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			s.Objectives, s.Constraints = tc.objectives, tc.constraints
			if tc.objectives != nil {
				s.Objective = ObjectiveSpec{}
			}
			s = s.WithDefaults()
			if err := s.Validate(); err != nil {
				t.Fatalf("spec does not validate: %v", err)
			}
			inline, reason := s.PickTrialMode()
			if inline != tc.inline || !strings.Contains(reason, tc.reason) {
				t.Errorf("PickTrialMode() = %v, %q; want %v, a reason with %q", inline, reason, tc.inline, tc.reason)
			}
		})
	}
}
