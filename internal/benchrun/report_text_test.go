package benchrun

import (
	"strings"
	"testing"
)

// An inline campaign has no trial workflows: its report prints no
// start→close line of zeros for them; a campaign of trial workflows does.
func TestCampaignReportTextLeavesOutTrialWorkflowsOfAnInlineCampaign(t *testing.T) {
	for _, tc := range []struct {
		r    CampaignReport
		want bool
	}{
		{CampaignReport{Inline: true, Completed: 2}, false},
		{CampaignReport{Completed: 2, TrialWallSeconds: Stats{N: 2, Mean: 1.2, P50: 1.2, P95: 1.3, Max: 1.3}}, true},
	} {
		var b strings.Builder
		if err := tc.r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "start→close"); got != tc.want {
			t.Errorf("inline %v: start→close line printed %v, want %v:\n%s", tc.r.Inline, got, tc.want, b.String())
		}
	}
}
