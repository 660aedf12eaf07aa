package workflows

import (
	"strings"
	"testing"
	"time"
)

// The pool's UI details list each trial with its campaign and weight.
func TestPoolDetailsShowWeights(t *testing.T) {
	p := &pool{in: PoolInput{Name: "p"}}
	p.st.Trials = []PoolTrial{
		{Registration: RegisterTrial{TrialID: "wf-a", CampaignID: "a", Weight: 3}, Nodes: []string{"n1", "n2"}},
		{Registration: RegisterTrial{TrialID: "wf-b", CampaignID: "b"}},
	}
	p.st.Library = Learn(nil, LearnedCurve{Trial: "wf-z", Campaign: "z", Model: "m", Points: []CurvePoint{{Nodes: 1, Throughput: 1}}})
	d := p.details(time.Unix(0, 0))
	for _, want := range []string{"2 trials, 1 learned curves", "| trial | campaign | weight | nodes | reason |", "| wf-a | a | 3 | 2 |  |", "| wf-b | b | 1 | 0 |  |"} {
		if !strings.Contains(d, want) {
			t.Errorf("details lack %q:\n%s", want, d)
		}
	}
}
