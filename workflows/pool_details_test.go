package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
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
	for _, want := range []string{"2 trials registered; 1 learned curves", "| trial | campaign | weight | nodes | reason |", "| wf-a | a | 3 | 2 |  |", "| wf-b | b | 1 | 0 |  |"} {
		if !strings.Contains(d, want) {
			t.Errorf("details lack %q:\n%s", want, d)
		}
	}
}

// Nodes in use never exceed the pool's nodes (seen: `nodes 5/4`): a
// node counts once, and one the pool no longer has (a trial still
// vacates it) is not in use of the pool's; an inline campaign's
// registration is told from a trial's.
func TestPoolNodeUseNeverExceedsItsNodes(t *testing.T) {
	p := &pool{in: PoolInput{Name: "p"}}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		p.st.Nodes = append(p.st.Nodes, gleaner.Node{ID: n})
	}
	p.st.Trials = []PoolTrial{
		{Registration: RegisterTrial{TrialID: TrialWorkflowID(CampaignWorkflowID("a"), 1), CampaignID: "a"}, Nodes: []string{"n1", "n2", "n5"}},
		{Registration: RegisterTrial{TrialID: CampaignWorkflowID("b"), CampaignID: "b"}, Nodes: []string{"n2", "n3"}},
	}
	inUse, total := p.st.NodeUse()
	if inUse != 3 || total != 4 {
		t.Errorf("NodeUse = %d/%d, want 3/4", inUse, total)
	}
	trials, inline := p.st.Registrations()
	if trials != 1 || inline != 1 {
		t.Errorf("Registrations = %d trials, %d inline campaigns; want 1, 1", trials, inline)
	}
	d := p.details(time.Unix(0, 0))
	for _, want := range []string{"4 nodes, 3 in use", "1 trials registered, 1 inline campaign (its trials share its nodes)"} {
		if !strings.Contains(d, want) {
			t.Errorf("details lack %q:\n%s", want, d)
		}
	}
}
