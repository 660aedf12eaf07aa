package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

func agentPool(agents ...AgentJoin) *pool {
	p := &pool{in: PoolInput{Name: "p"}}
	for _, j := range agents {
		p.st.Agents = append(p.st.Agents, PoolAgent{AgentJoin: j})
	}
	p.setNodes(time.Time{}, gleaner.PoolTriggerAgent)
	return p
}

func join(id, storage string, nodes ...string) AgentJoin {
	j := AgentJoin{Agent: id, TaskQueue: "q-" + id, Addr: "10.0.0." + id, Incarnation: "1", StorageID: storage, DataDir: "/d/" + id}
	for _, n := range nodes {
		j.Nodes = append(j.Nodes, gleaner.Node{ID: n, Type: "cpu"})
	}
	return j
}

func TestPlacementGroupsNodesByAgentRankZeroFirst(t *testing.T) {
	p := agentPool(join("a", "s", "a/0", "a/1"), join("b", "s", "b/0"))
	p.st.Local = []gleaner.Node{{ID: "local-0"}}
	holder := p.nodeAgents()

	got := p.placement([]string{"b/0", "a/1", "a/0"}, holder)
	if len(got) != 2 || got[0].Agent != "b" || got[1].Agent != "a" || strings.Join(got[1].Nodes, ",") != "a/1,a/0" || got[0].TaskQueue != "q-b" || got[0].Addr != "10.0.0.b" {
		t.Errorf("placement = %+v, want b's node (rank 0) then a's two", got)
	}
	if got := p.placement([]string{"local-0"}, holder); got != nil {
		t.Errorf("the worker's own nodes: placement %+v, want nil (the pool's task queue)", got)
	}
	if got := p.placement([]string{"a/0", "local-0"}, holder); len(got) != 2 || got[1].TaskQueue != "" {
		t.Errorf("mixed: %+v, want a, then the worker's own", got)
	}
}

func TestJoinRefusals(t *testing.T) {
	p := agentPool(join("a", "s1", "a/0"))
	p.st.Local = []gleaner.Node{{ID: "local-0"}}
	for _, tc := range []struct {
		j    AgentJoin
		want string
	}{
		{join("", "s1", "x/0"), "agent: empty"},
		{AgentJoin{Agent: "b", Incarnation: "1"}, "task_queue: empty"},
		{AgentJoin{Agent: "b", TaskQueue: "q"}, "incarnation: empty"},
		{join("b", "s1", "b/0", "b/0"), `"b/0" empty or repeated`},
		{join("b", "s1", "a/0"), `"a/0" is already agent a's`},
		{join("b", "s1", "local-0"), "worker's own source"},
		{join("b", "s2", "b/0"), "data directory /d/b (storage id s2) is not the one agent a uses (/d/a, storage id s1)"},
		{AgentJoin{Agent: "a", TaskQueue: "q-a", Addr: "10.9.9.9", Incarnation: "2", Nodes: []gleaner.Node{{ID: "a/0"}}}, "agent a is already live at 10.0.0.a"},
	} {
		err := p.validJoin(tc.j)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("join %+v: %v, want %q", tc.j, err, tc.want)
		}
	}
	if err := p.validJoin(join("b", "s1", "b/0")); err != nil {
		t.Errorf("a good join: %v", err)
	}
	// The same agent joining again (a restart) may keep its node ids and
	// is checked against the others only.
	if err := p.validJoin(join("a", "s1", "a/0")); err != nil {
		t.Errorf("agent a again: %v", err)
	}
	restarted := join("a", "s1", "a/0")
	restarted.Incarnation = "2"
	if err := p.validJoin(restarted); err != nil {
		t.Errorf("agent a restarted at its address: %v", err)
	}
}

func TestPoolNodesAreTheUnionOfLocalAndAgents(t *testing.T) {
	p := agentPool(join("b", "s", "b/0"), join("a", "s", "a/1", "a/0"))
	p.st.Local = []gleaner.Node{{ID: "local-0"}}
	p.dirty = false
	p.setNodes(time.Time{}, gleaner.PoolTriggerAgent)
	var ids []string
	for _, n := range p.st.Nodes {
		ids = append(ids, n.ID)
	}
	if got := strings.Join(ids, ","); got != "a/0,a/1,b/0,local-0" || !p.dirty {
		t.Errorf("nodes %s (dirty %v), want a/0,a/1,b/0,local-0 and an event", got, p.dirty)
	}
	p.dirty = false
	p.setNodes(time.Time{}, gleaner.PoolTriggerAgent)
	if p.dirty {
		t.Error("the same nodes again made an event")
	}
}
