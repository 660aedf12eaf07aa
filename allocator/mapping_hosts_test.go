package allocator

import (
	"slices"
	"strings"
	"testing"
)

func hostNodes(spec ...string) []Node {
	var out []Node
	for _, s := range spec { // "host:n"
		h, n, _ := strings.Cut(s, ":")
		for i := 0; i < int(n[0]-'0'); i++ {
			out = append(out, Node{ID: h + "/" + string(rune('0'+i)), Host: h})
		}
	}
	return out
}

func hostsOf(nodes []Node, ids []string) []string {
	var hs []string
	for _, id := range ids {
		for _, n := range nodes {
			if n.ID == id && !slices.Contains(hs, n.Host) {
				hs = append(hs, n.Host)
			}
		}
	}
	slices.Sort(hs)
	return hs
}

func TestPackHosts(t *testing.T) {
	nodes := hostNodes("a:3", "b:2", "c:4")
	idx := map[string]int{}
	var free []int
	for i, n := range nodes {
		idx[n.ID] = i
		free = append(free, i)
	}
	ids := func(is []int) []string {
		var out []string
		for _, i := range is {
			out = append(out, nodes[i].ID)
		}
		return out
	}
	for _, tc := range []struct {
		need  int
		has   []string
		hosts []string
	}{
		{2, nil, []string{"b"}},                    // the tightest host that covers it
		{3, nil, []string{"a"}},                    // a (3) fits exactly; c (4) is looser
		{4, nil, []string{"c"}},                    // only c covers it
		{6, nil, []string{"b", "c"}},               // c (the largest), then b covers the rest exactly
		{1, []string{"c/0"}, []string{"c"}},        // where it already is
		{2, []string{"b/0", "b/1"}, []string{"a"}}, // b's nodes are its own, not free: see below
	} {
		f := free
		if tc.has != nil && tc.has[0] == "b/0" {
			f = slices.DeleteFunc(slices.Clone(free), func(i int) bool { return nodes[i].Host == "b" })
		}
		picked, rest := packHosts(nodes, f, tc.need, tc.has, idx)
		if len(picked) != tc.need || len(picked)+len(rest) != len(f) {
			t.Errorf("need %d: picked %v, rest %v", tc.need, ids(picked), ids(rest))
			continue
		}
		if got := hostsOf(nodes, ids(picked)); !slices.Equal(got, tc.hosts) {
			t.Errorf("need %d (has %v): hosts %v (%v), want %v", tc.need, tc.has, got, ids(picked), tc.hosts)
		}
	}
	// Without hosts: the first need, in idle order, as before.
	plain := []Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}
	if picked, rest := packHosts(plain, []int{2, 0, 1}, 2, nil, nil); !slices.Equal(picked, []int{2, 0}) || !slices.Equal(rest, []int{1}) {
		t.Errorf("without hosts: picked %v rest %v", picked, rest)
	}
}

// A solve over hosts: two trials of two nodes on hosts of two nodes each
// each get one whole host.
func TestSolvePacksTrialsOntoHosts(t *testing.T) {
	nodes := hostNodes("a:2", "b:2")
	// Interleave the ids so that idle order alone would split trials.
	p := &Problem{Lookahead: 60e9, Nodes: []Node{nodes[0], nodes[2], nodes[1], nodes[3]}}
	for _, id := range []string{"x", "y"} {
		p.Trials = append(p.Trials, Trial{ID: id, MinNodes: 2, MaxNodes: 2, Weight: 1,
			Curve: Curve{{Nodes: 1, Throughput: 1}, {Nodes: 2, Throughput: 2}}})
	}
	res, err := Solve(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Allocations {
		if hs := hostsOf(nodes, a.Nodes); len(a.Nodes) != 2 || len(hs) != 1 {
			t.Errorf("trial %s: nodes %v on hosts %v, want one host", a.TrialID, a.Nodes, hs)
		}
	}
}

// A trial keeping its nodes gets them back in the order it holds them,
// whatever their hosts and idle times: the pool and the trial compare the
// lists, and a new order would relaunch its trainer for nothing.
func TestKeptNodesKeepTheirOrder(t *testing.T) {
	nodes := hostNodes("a:3", "b:2")
	held := []string{"b/1", "a/2", "b/0", "a/0"}
	p := &Problem{Lookahead: 60e9, Nodes: nodes, Trials: []Trial{{ID: "x", Nodes: held, MinNodes: 4, MaxNodes: 4, Weight: 1,
		Curve: Curve{{Nodes: 4, Throughput: 4}}, RescaleUpCost: 10, RescaleDownCost: 10}}}
	for range 3 {
		res, err := Solve(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Allocations[0].Nodes
		if !slices.Equal(got, held) {
			t.Fatalf("nodes %v, want the held order %v", got, held)
		}
		p.Trials[0].Nodes = got
	}
}

// packHosts takes need nodes from free (longest-idle first) for a trial
// that holds the nodes named in has, and returns them and what is left of
// free, in order (freePool.take says how).
func packHosts(nodes []Node, free []int, need int, has []string, idIdx map[string]int) (picked, rest []int) {
	picked = newFreePool(nodes, free).take(need, has, idIdx)
	taken := make(map[int]bool, len(picked))
	for _, i := range picked {
		taken[i] = true
	}
	for _, i := range free {
		if !taken[i] {
			rest = append(rest, i)
		}
	}
	return picked, rest
}
