package allocator_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/allocator"
)

var lookaheadNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// idleIn is a node whose estimate ends d after lookaheadNow; unknownNode
// has none.
func idleIn(id string, d time.Duration) allocator.Node {
	return allocator.Node{ID: id, IdleUntil: lookaheadNow.Add(d)}
}

func unknownNode(id string) allocator.Node { return allocator.Node{ID: id} }

func TestLookaheadFromIdle(t *testing.T) {
	const fallback = 5 * time.Minute
	cases := []struct {
		name  string
		nodes []allocator.Node
		want  time.Duration
	}{
		{"no nodes", nil, fallback},
		{"all unknown", []allocator.Node{unknownNode("a"), unknownNode("b")}, fallback},
		{"one node", []allocator.Node{idleIn("a", 7*time.Minute)}, 7 * time.Minute},
		{"odd count: the middle one", []allocator.Node{
			idleIn("a", 20*time.Minute), idleIn("b", 2*time.Minute), idleIn("c", 9*time.Minute),
		}, 9 * time.Minute},
		{"even count: the lower middle", []allocator.Node{
			idleIn("a", 4*time.Minute), idleIn("b", 40*time.Minute), idleIn("c", 10*time.Minute), idleIn("d", 2*time.Minute),
		}, 4 * time.Minute},
		{"robust to one huge estimate", []allocator.Node{
			idleIn("a", 3*time.Minute), idleIn("b", 5*time.Minute), idleIn("c", 100*24*time.Hour),
		}, 5 * time.Minute},
		{"robust to one overdue estimate", []allocator.Node{
			idleIn("a", -time.Hour), idleIn("b", 5*time.Minute), idleIn("c", 6*time.Minute),
		}, 5 * time.Minute},
		{"past ends: the floor", []allocator.Node{idleIn("a", -time.Minute), idleIn("b", 0)}, allocator.MinDerivedLookahead},
		{"short ends: the floor", []allocator.Node{idleIn("a", time.Second), idleIn("b", 10*time.Second)}, allocator.MinDerivedLookahead},
		{"long ends: the cap", []allocator.Node{idleIn("a", 2*time.Hour), idleIn("b", 30*time.Hour)}, allocator.MaxDerivedLookahead},
		{"the far future saturates", []allocator.Node{
			{ID: "a", IdleUntil: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)},
			{ID: "b", IdleUntil: time.Unix(1<<62, 0)},
		}, allocator.MaxDerivedLookahead},
		{"the distant past saturates", []allocator.Node{{ID: "a", IdleUntil: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}}, allocator.MinDerivedLookahead},
		{"unknown counts as longest", []allocator.Node{
			unknownNode("a"), unknownNode("b"), idleIn("c", 2*time.Minute), idleIn("d", 8*time.Minute), idleIn("e", 9*time.Minute),
		}, 9 * time.Minute},
		{"mostly unknown: the cap", []allocator.Node{unknownNode("a"), unknownNode("b"), idleIn("c", 2*time.Minute)}, allocator.MaxDerivedLookahead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, allocator.LookaheadFromIdle(c.nodes, lookaheadNow, fallback))
		})
	}
}

// The fallback is the caller's fixed T_fwd: returned as given, not
// clamped, whatever it is.
func TestLookaheadFromIdleFallbackAsGiven(t *testing.T) {
	for _, fb := range []time.Duration{time.Second, 5 * time.Minute, 24 * time.Hour} {
		require.Equal(t, fb, allocator.LookaheadFromIdle([]allocator.Node{unknownNode("a")}, lookaheadNow, fb))
	}
}

// Properties on seeded random pools: the result lies within the bounds
// whenever some node has an estimate, is one node's own remaining time
// unless clamped, does not depend on the nodes' order, never decreases
// when an estimate moves later, and the input is not modified.
func TestLookaheadFromIdleProperties(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 0x7f))
		nodes := make([]allocator.Node, 1+rng.IntN(30))
		for i := range nodes {
			nodes[i].ID = fmt.Sprint("n", i)
			if rng.IntN(4) > 0 {
				nodes[i].IdleUntil = lookaheadNow.Add(time.Duration(rng.Int64N(int64(3*time.Hour))) - 10*time.Minute)
			}
		}
		nodes[rng.IntN(len(nodes))].IdleUntil = lookaheadNow.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		before := slices.Clone(nodes)
		got := allocator.LookaheadFromIdle(nodes, lookaheadNow, 5*time.Minute)
		require.Equal(t, before, nodes, "seed %d: input modified", seed)
		require.GreaterOrEqual(t, got, allocator.MinDerivedLookahead, "seed %d", seed)
		require.LessOrEqual(t, got, allocator.MaxDerivedLookahead, "seed %d", seed)
		if got > allocator.MinDerivedLookahead && got < allocator.MaxDerivedLookahead {
			require.True(t, slices.ContainsFunc(nodes, func(n allocator.Node) bool {
				return !n.IdleUntil.IsZero() && n.IdleUntil.Sub(lookaheadNow) == got
			}), "seed %d: %v is no node's remaining time", seed, got)
		}

		shuffled := slices.Clone(nodes)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		require.Equal(t, got, allocator.LookaheadFromIdle(shuffled, lookaheadNow, 5*time.Minute), "seed %d: order matters", seed)

		later := slices.Clone(nodes)
		i := rng.IntN(len(later))
		if !later[i].IdleUntil.IsZero() {
			later[i].IdleUntil = later[i].IdleUntil.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		}
		require.GreaterOrEqual(t, allocator.LookaheadFromIdle(later, lookaheadNow, 5*time.Minute), got, "seed %d: a later end shortened T_fwd", seed)
	}
}

// Three of five idle nodes have an announced end; the other two count as
// idle longer than any of them. Sorted, the remaining times are 4 min,
// 11 min, 25 min, ∞, ∞: the median is 25 min, and that is T_fwd.
func ExampleLookaheadFromIdle() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	nodes := []allocator.Node{
		{ID: "n1", IdleUntil: now.Add(11 * time.Minute)},
		{ID: "n2", IdleUntil: now.Add(4 * time.Minute)},
		{ID: "n3"},
		{ID: "n4", IdleUntil: now.Add(25 * time.Minute)},
		{ID: "n5"},
	}
	fmt.Println(allocator.LookaheadFromIdle(nodes, now, 5*time.Minute))
	fmt.Println(allocator.LookaheadFromIdle(nodes[2:3], now, 5*time.Minute)) // nothing known: the fallback
	// Output:
	// 25m0s
	// 5m0s
}
