package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// checkTrace asserts the invariants every accepted trace satisfies: event
// times strictly increasing within [Start, End], each list sorted without
// duplicates, Idle and Busy disjoint, a node becomes idle only when busy
// and busy only when idle, every node named in Nodes, every hole at least
// minHole long, and IdleNodeSeconds equal to the sum of the holes.
func checkTrace(t *testing.T, tr *Trace, minHole float64) {
	t.Helper()
	known := make(map[string]int, len(tr.Nodes))
	for i, n := range tr.Nodes {
		if i > 0 && tr.Nodes[i-1] >= n {
			t.Fatalf("Nodes not sorted and unique at %d: %q, %q", i, tr.Nodes[i-1], n)
		}
		known[n] = i
	}
	if tr.End < tr.Start {
		t.Fatalf("End %v < Start %v", tr.End, tr.Start)
	}
	idle := make([]bool, len(tr.Nodes))
	seen := make([]int, len(tr.Nodes)) // event number+1 that last listed the node
	for i, ev := range tr.Events {
		if ev.Time < tr.Start || ev.Time > tr.End {
			t.Fatalf("event %d at %v outside [%v, %v]", i, ev.Time, tr.Start, tr.End)
		}
		if i > 0 && ev.Time <= tr.Events[i-1].Time {
			t.Fatalf("event %d at %v not after %v", i, ev.Time, tr.Events[i-1].Time)
		}
		if len(ev.Idle)+len(ev.Busy) == 0 {
			t.Fatalf("event %d at %v is empty", i, ev.Time)
		}
		for _, list := range [][]string{ev.Idle, ev.Busy} {
			for _, n := range list {
				x, ok := known[n]
				if !ok {
					t.Fatalf("event %d: node %q not in Nodes", i, n)
				}
				if seen[x] == i+1 {
					t.Fatalf("event %d: node %q listed twice", i, n)
				}
				seen[x] = i + 1
			}
		}
		for _, n := range ev.Busy {
			if !idle[known[n]] {
				t.Fatalf("event %d: node %q busy but not idle", i, n)
			}
			idle[known[n]] = false
		}
		for _, n := range ev.Idle {
			if idle[known[n]] {
				t.Fatalf("event %d: node %q idle twice", i, n)
			}
			idle[known[n]] = true
		}
	}
	var sum float64
	for _, h := range tr.Holes() {
		if h.End-h.Start < minHole {
			t.Fatalf("hole %+v shorter than MinHole %v", h, minHole)
		}
		sum += h.End - h.Start
	}
	if got := tr.IdleNodeSeconds(); !approxEqual(got, sum) {
		t.Fatalf("IdleNodeSeconds %v, sum of holes %v", got, sum)
	}
}

func approxEqual(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, a, b, -a, -b)
}

// eventsString renders events one per line for readable diffs.
func eventsString(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%v idle=%v busy=%v\n", ev.Time, ev.Idle, ev.Busy)
	}
	return b.String()
}

func wantEvents(t *testing.T, got []Event, want string) {
	t.Helper()
	if g := eventsString(got); g != want {
		t.Errorf("events:\n got:\n%s want:\n%s", g, want)
	}
}

func wantHoles(t *testing.T, tr *Trace, want []Hole) {
	t.Helper()
	if got := tr.Holes(); !reflect.DeepEqual(got, want) {
		t.Errorf("Holes() (-want +got):\n-%+v\n+%+v", want, got)
	}
}

func TestSourceOptionsValidation(t *testing.T) {
	in := "1,idle,a\n2,busy,a\n"
	for _, tc := range []struct {
		opts SourceOptions
		want string
	}{
		{SourceOptions{MinHole: -1}, "MinHole is -1"},
		{SourceOptions{Window: [2]float64{5, 3}}, "Window [5, 3) is empty"},
	} {
		_, err := ReadIdleEvents(strings.NewReader(in), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.opts, err, tc.want)
		}
	}
}
