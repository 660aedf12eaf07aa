package gleaner_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// spansText is spans as "node type [from,to) trial/campaign" lines,
// times in seconds from t0 ("…" for open).
func spansText(spans []gleaner.NodeSpan) string {
	var b strings.Builder
	for _, s := range spans {
		to := "…"
		if !s.To.IsZero() {
			to = fmt.Sprint(s.To.Sub(t0).Seconds())
		}
		holder := "idle"
		if s.Trial != "" {
			holder = s.Trial + "/" + s.Campaign
		}
		fmt.Fprintf(&b, "%s %s [%v,%s) %s\n", s.Node, s.Type, s.From.Sub(t0).Seconds(), to, holder)
	}
	return b.String()
}

func gpu(ids ...string) []gleaner.Node {
	var out []gleaner.Node
	for _, id := range ids {
		out = append(out, gleaner.Node{ID: id, Type: "gpu"})
	}
	return out
}

// A pool's log as spans: starts, a node taken back while held (its span
// ends with the node; the trial's shrink follows), a node's return, a
// move from one trial to another in one solve, a deregistration. Chunk
// boundaries cut no span, and chunks come in any order.
func TestNodeSpans(t *testing.T) {
	c0 := gleaner.PoolRecords{Pool: "p", Chunk: 0,
		Start: gleaner.PoolSnapshot{At: at(0), Nodes: gpu("n1", "n2")},
		Events: []gleaner.PoolEvent{
			{At: at(1), Kind: gleaner.PoolEventRegister, Trial: "a", Campaign: "ca"},
			{At: at(1), Kind: gleaner.PoolEventRegister, Trial: "b", Campaign: "cb"},
			{At: at(2), Kind: gleaner.PoolEventSolve, Epoch: 1, Changes: []gleaner.NodeChange{
				{Trial: "a", Campaign: "ca", Nodes: []string{"n1", "n2"}, Change: gleaner.NodeChangeStart},
			}},
			// n2 taken back by the batch scheduler while a holds it.
			{At: at(5), Kind: gleaner.PoolEventNodes, Removed: []string{"n2"}},
		}}
	c1 := gleaner.PoolRecords{Pool: "p", Chunk: 1,
		Start: gleaner.PoolSnapshot{At: at(5), Nodes: gpu("n1"),
			Holders:   map[string][]string{"a": {"n1", "n2"}},
			Campaigns: map[string]string{"a": "ca", "b": "cb"}},
		Events: []gleaner.PoolEvent{
			{At: at(6), Kind: gleaner.PoolEventSolve, Epoch: 2, Changes: []gleaner.NodeChange{
				{Trial: "a", Campaign: "ca", Nodes: []string{"n1"}, Before: []string{"n1", "n2"}, Change: gleaner.NodeChangeShrink},
			}},
			{At: at(8), Kind: gleaner.PoolEventNodes, Added: gpu("n3")},
			// n1 moves from a to b, a takes n3: no idle moment on n1.
			{At: at(8), Kind: gleaner.PoolEventSolve, Epoch: 3, Changes: []gleaner.NodeChange{
				{Trial: "a", Campaign: "ca", Nodes: []string{"n3"}, Before: []string{"n1"}, Change: gleaner.NodeChangeMove},
				{Trial: "b", Campaign: "cb", Nodes: []string{"n1"}, Change: gleaner.NodeChangeStart},
			}},
		}}
	live := gleaner.PoolLog{Pool: "p", Chunks: 2,
		Start: gleaner.PoolSnapshot{At: at(9), Nodes: gpu("n1", "n3"),
			Holders:   map[string][]string{"a": {"n3"}, "b": {"n1"}},
			Campaigns: map[string]string{"a": "ca", "b": "cb"}},
		Events: []gleaner.PoolEvent{
			{At: at(10), Kind: gleaner.PoolEventDeregister, Trial: "b", Campaign: "cb"},
			{At: at(12), Kind: gleaner.PoolEventNodes, Added: gpu("n2")},
		}}
	want := `n1 gpu [0,2) idle
n1 gpu [2,8) a/ca
n1 gpu [8,10) b/cb
n1 gpu [10,…) idle
n2 gpu [0,2) idle
n2 gpu [2,5) a/ca
n2 gpu [12,…) idle
n3 gpu [8,…) a/ca
`
	if got := spansText(gleaner.NodeSpans([]gleaner.PoolRecords{c1, c0}, live)); got != want {
		t.Errorf("NodeSpans:\n%s\nwant\n%s", got, want)
	}

	// A chunk missing (past retention): the next snapshot bridges it.
	want = `n1 gpu [0,2) idle
n1 gpu [2,9) a/ca
n1 gpu [9,10) b/cb
n1 gpu [10,…) idle
n2 gpu [0,2) idle
n2 gpu [2,5) a/ca
n2 gpu [12,…) idle
n3 gpu [9,…) a/ca
`
	if got := spansText(gleaner.NodeSpans([]gleaner.PoolRecords{c0}, live)); got != want {
		t.Errorf("NodeSpans without chunk 1:\n%s\nwant\n%s", got, want)
	}

	// No chunk yet, nothing at all.
	if got := gleaner.NodeSpans(nil, gleaner.PoolLog{}); len(got) != 0 {
		t.Errorf("NodeSpans of nothing = %v", got)
	}
}

// A node whose type changes is cut; one whose idle-until changes is not;
// a node back before the solve that takes it from its trial is still
// the trial's.
func TestNodeSpansDescriptionsAndReturns(t *testing.T) {
	live := gleaner.PoolLog{Pool: "p",
		Start: gleaner.PoolSnapshot{At: at(0), Nodes: gpu("n1"), Holders: map[string][]string{"a": {"n1"}}, Campaigns: map[string]string{"a": "ca"}},
		Events: []gleaner.PoolEvent{
			{At: at(1), Kind: gleaner.PoolEventNodes, Added: []gleaner.Node{{ID: "n1", Type: "gpu", IdleUntil: at(100)}}},
			{At: at(2), Kind: gleaner.PoolEventNodes, Removed: []string{"n1"}},
			{At: at(3), Kind: gleaner.PoolEventNodes, Added: gpu("n1")},
			{At: at(4), Kind: gleaner.PoolEventNodes, Added: []gleaner.Node{{ID: "n1", Type: "big"}}},
		}}
	want := `n1 gpu [0,2) a/ca
n1 gpu [3,4) a/ca
n1 big [4,…) a/ca
`
	if got := spansText(gleaner.NodeSpans(nil, live)); got != want {
		t.Errorf("NodeSpans:\n%s\nwant\n%s", got, want)
	}
}

func TestClassifyNodeChange(t *testing.T) {
	for _, c := range []struct {
		before, after []string
		held          bool
		want          string
	}{
		{nil, nil, false, ""},
		{nil, []string{"a"}, false, gleaner.NodeChangeStart},
		{nil, []string{"a"}, true, gleaner.NodeChangeResume},
		{[]string{"a"}, nil, true, gleaner.NodeChangePreempt},
		{[]string{"a"}, []string{"a", "b"}, true, gleaner.NodeChangeGrow},
		{[]string{"a", "b"}, []string{"b"}, true, gleaner.NodeChangeShrink},
		{[]string{"a", "b"}, []string{"b", "c"}, true, gleaner.NodeChangeMove},
		{[]string{"a", "b"}, []string{"b", "a"}, true, ""},
	} {
		if got := gleaner.ClassifyNodeChange(c.before, c.after, c.held); got != c.want {
			t.Errorf("ClassifyNodeChange(%v, %v, %v) = %q, want %q", c.before, c.after, c.held, got, c.want)
		}
	}
}
