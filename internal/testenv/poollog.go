package testenv

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// CheckPoolLog fails t unless a pool's log — its chunks, as
// client.PoolLog reads them from 0, and the live log — is whole and
// gleaner.NodeSpans reads it exactly:
//
//   - the chunks are numbered 0 … live.Chunks−1 without a hole;
//   - each chunk (and the live log) starts where the one before ended:
//     its snapshot's nodes and holders are the previous snapshot's with
//     the previous chunk's entries applied, and no entry is older than
//     the snapshot;
//   - every node's spans cover, without a hole or an overlap, exactly the
//     times the entries say it was in the pool (from its first
//     appearance; open while it still is);
//   - the nodes in always never left: one period each, from their first
//     appearance, still open.
//
// It returns the spans.
func CheckPoolLog(t testing.TB, chunks []gleaner.PoolRecords, live gleaner.PoolLog, always ...string) []gleaner.NodeSpan {
	t.Helper()
	if len(chunks) != live.Chunks {
		t.Errorf("pool log: %d chunks read, the pool kept %d", len(chunks), live.Chunks)
	}
	segs := slices.Clone(chunks)
	segs = append(segs, gleaner.PoolRecords{Pool: live.Pool, Chunk: live.Chunks, Start: live.Start, Events: live.Events})
	present := map[string]time.Time{} // node → since
	periods := map[string][]period{}
	holders := map[string][]string{}
	for i, s := range segs {
		if s.Chunk != i {
			t.Errorf("pool log: chunk %d where chunk %d belongs", s.Chunk, i)
			return nil
		}
		ids := nodeIDs(s.Start.Nodes)
		if i == 0 {
			for _, id := range ids {
				present[id] = s.Start.At
			}
		} else {
			if got, want := ids, slices.Sorted(maps.Keys(present)); !slices.Equal(got, want) {
				t.Errorf("pool log: chunk %d starts with nodes %v; the log before it leaves %v", i, got, want)
			}
			if got, want := setsOf(s.Start.Holders), setsOf(holders); got != want {
				t.Errorf("pool log: chunk %d starts with holders %s; the log before it leaves %s", i, got, want)
			}
		}
		holders = map[string][]string{}
		for trial, nodes := range s.Start.Holders {
			holders[trial] = nodes
		}
		at := s.Start.At
		for _, e := range s.Events {
			if e.At.Before(at) {
				t.Errorf("pool log: chunk %d: an entry at %v before the one at %v", i, e.At, at)
			}
			at = e.At
			switch e.Kind {
			case gleaner.PoolEventNodes:
				for _, id := range e.Removed {
					since, ok := present[id]
					if !ok {
						t.Errorf("pool log: chunk %d: node %s removed at %v, not in the pool", i, id, e.At)
						continue
					}
					periods[id] = append(periods[id], period{since, e.At})
					delete(present, id)
				}
				for _, n := range e.Added {
					if _, ok := present[n.ID]; !ok {
						present[n.ID] = e.At
					}
				}
			case gleaner.PoolEventSolve:
				for _, c := range e.Changes {
					if len(c.Nodes) == 0 {
						delete(holders, c.Trial)
					} else {
						holders[c.Trial] = c.Nodes
					}
				}
			case gleaner.PoolEventDeregister:
				delete(holders, e.Trial)
			}
		}
	}
	for id, since := range present {
		periods[id] = append(periods[id], period{since, time.Time{}})
	}

	spans := gleaner.NodeSpans(chunks, live)
	covered := map[string][]period{}
	for _, sp := range spans {
		ps := covered[sp.Node]
		if k := len(ps); k > 0 {
			last := ps[k-1]
			switch {
			case last.to.IsZero() || sp.From.Before(last.to):
				t.Errorf("pool log: node %s: span from %v overlaps the one before (to %v)", sp.Node, sp.From, last.to)
			case sp.From.Equal(last.to):
				ps[k-1].to = sp.To
				continue
			}
		}
		covered[sp.Node] = append(ps, period{sp.From, sp.To})
	}
	for id, ps := range periods {
		ps = slices.DeleteFunc(ps, func(p period) bool { return !p.to.IsZero() && !p.to.After(p.from) })
		slices.SortFunc(ps, func(a, b period) int { return a.from.Compare(b.from) })
		if got, want := fmt.Sprint(covered[id]), fmt.Sprint(ps); got != want {
			t.Errorf("pool log: node %s: spans cover %s; it was in the pool %s", id, got, want)
		}
		delete(covered, id)
	}
	for id := range covered {
		t.Errorf("pool log: node %s has spans but was never in the pool", id)
	}
	for _, id := range always {
		if ps := periods[id]; len(ps) != 1 || !ps[0].to.IsZero() {
			t.Errorf("pool log: node %s, never taken back, was in the pool %v: want one period, open", id, ps)
		}
	}
	return spans
}

// period is a node's time in its pool; a zero to: still there.
type period struct{ from, to time.Time }

func (p period) String() string {
	const f = "15:04:05.000"
	if p.to.IsZero() {
		return "[" + p.from.Format(f) + ", …)"
	}
	return "[" + p.from.Format(f) + ", " + p.to.Format(f) + ")"
}

func nodeIDs(nodes []gleaner.Node) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	slices.Sort(ids)
	return ids
}

// setsOf prints holders with each trial's nodes sorted, trials in order.
func setsOf(holders map[string][]string) string {
	out := ""
	for _, trial := range slices.Sorted(maps.Keys(holders)) {
		out += fmt.Sprintf("%s:%v ", trial, slices.Sorted(slices.Values(holders[trial])))
	}
	return out
}
