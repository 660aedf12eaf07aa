package sim

import (
	"fmt"
	"slices"
)

// Restrict is the trace of a machine made of its first n nodes (Nodes is
// sorted by id): every other node's idle and busy mentions dropped, and
// the events left with none. It turns a large machine's trace into a
// small, saturated one (a few hundred of Summit's 4,734 nodes) with the
// same rhythm of holes. n at least len(Nodes) returns tr unchanged.
func (tr *Trace) Restrict(n int) (*Trace, error) {
	if n <= 0 {
		return nil, fmt.Errorf("restrict to %d nodes: want at least 1", n)
	}
	if n >= len(tr.Nodes) {
		return tr, nil
	}
	keep := make(map[string]bool, n)
	for _, id := range tr.Nodes[:n] {
		keep[id] = true
	}
	kept := func(ids []string) []string {
		return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !keep[id] })
	}
	out := *tr
	out.Nodes = slices.Clone(tr.Nodes[:n])
	out.Size = n
	out.Events = nil
	for _, ev := range tr.Events {
		e := Event{Time: ev.Time, Idle: kept(ev.Idle), Busy: kept(ev.Busy)}
		// The first event stays even when empty: it marks the window's
		// start, which the replay begins from.
		if len(e.Idle)+len(e.Busy) > 0 || len(out.Events) == 0 {
			out.Events = append(out.Events, e)
		}
	}
	return &out, nil
}
