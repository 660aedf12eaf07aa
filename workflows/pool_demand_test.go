package workflows

import (
	"reflect"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

func TestPoolDemandIsWhatTheTrialsCouldStillUse(t *testing.T) {
	st := PoolState{Nodes: []gleaner.Node{{ID: "g1"}, {ID: "g2"}, {ID: "g3"}}}
	ids := []string{"g1", "g2", "g3"}
	if d := st.Demand(); !reflect.DeepEqual(d, PoolDemand{Nodes: 3, NodeIDs: ids}) {
		t.Errorf("no trials: %+v, want nothing wanted", d)
	}
	st.Trials = []PoolTrial{
		{Registration: RegisterTrial{TrialID: "a", MinNodes: 1, MaxNodes: 4, GracePeriod: 30 * time.Second}},
		{Registration: RegisterTrial{TrialID: "b", MinNodes: 2, MaxNodes: 2, GracePeriod: time.Minute}},
		{Registration: RegisterTrial{TrialID: "c"}}, // no sizes: one node
	}
	if d := st.Demand(); !reflect.DeepEqual(d, PoolDemand{Trials: 3, Nodes: 3, Wanted: 4, MaxGrace: time.Minute, NodeIDs: ids}) {
		t.Errorf("demand = %+v, want 7 wanted less 3 held, grace 1m", d)
	}
	st.Nodes = make([]gleaner.Node, 10)
	if d := st.Demand(); d.Wanted != 0 {
		t.Errorf("more nodes than wanted: Wanted %d, want 0", d.Wanted)
	}
}

func TestIdleEstimatesOverrideAgentsNodes(t *testing.T) {
	p := agentPool(join("g1", "s", "g1"), join("g2", "s", "g2"))
	p.dirty = false
	until := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	p.idleEstimates(time.Time{}, IdleEstimates{IdleUntil: map[string]time.Time{"g2": until, "gone": until}})
	if !p.dirty || !p.st.Nodes[1].IdleUntil.Equal(until) || !p.st.Nodes[0].IdleUntil.IsZero() {
		t.Errorf("nodes %+v (dirty %v), want g2 idle until %v, g1 unknown, an event", p.st.Nodes, p.dirty, until)
	}
	p.dirty = false
	p.idleEstimates(time.Time{}, IdleEstimates{IdleUntil: map[string]time.Time{"g2": until, "gone": until}})
	if p.dirty {
		t.Error("the same estimates again made an event")
	}
	p.idleEstimates(time.Time{}, IdleEstimates{})
	if !p.dirty || !p.st.Nodes[1].IdleUntil.IsZero() || p.st.IdleUntil != nil {
		t.Errorf("estimates withdrawn: nodes %+v, state %v", p.st.Nodes, p.st.IdleUntil)
	}
}
