package workflows

import (
	"encoding/json"
	"testing"

	"github.com/gleaner-hpc/gleaner"
)

// A client starts the campaign with gleaner.CampaignInput; the workflow
// reads it as its own CampaignInput (which adds the state it carries
// across continue-as-new): both must encode to the same JSON.
func TestPublicCampaignInputIsTheWorkflowsInput(t *testing.T) {
	spec := testSpec(5, 2)
	for _, threshold := range []int{0, 400} {
		public, err := json.Marshal(gleaner.CampaignInput{Spec: spec, HistoryThreshold: threshold})
		if err != nil {
			t.Fatal(err)
		}
		own, err := json.Marshal(CampaignInput{Spec: spec, HistoryThreshold: threshold})
		if err != nil {
			t.Fatal(err)
		}
		if string(public) != string(own) {
			t.Errorf("threshold %d:\npublic   %s\nworkflow %s", threshold, public, own)
		}
	}
}
