package allocator

import (
	"slices"
	"time"
)

// Bounds of a look-ahead derived from idle-time estimates (LookaheadFromIdle).
const (
	// MinDerivedLookahead is the shortest derived T_fwd. Slurm refreshes
	// its backfill plan, and with it the estimates, every bf_interval
	// (30 s by default), so a shorter horizon claims a precision the
	// estimates do not have; and at T_fwd of a few tens of seconds the
	// gain T_fwd·O_j(k) is the size of a rescale cost (12–18 s in
	// BFTrainer's measurements), so no running trial would ever change.
	MinDerivedLookahead = 30 * time.Second
	// MaxDerivedLookahead is the longest derived T_fwd. Past an hour a
	// rescale cost of tens of seconds is under 1% of what a change gains,
	// so a longer horizon no longer changes decisions, while the far ends
	// (a pilot's time limit, a reservation next week) are the least
	// reliable estimates.
	MaxDerivedLookahead = time.Hour
)

// LookaheadFromIdle is the look-ahead T_fwd (Problem.Lookahead) derived
// from the nodes' expected idle ends: the median remaining idle time
//
//	T_fwd = clamp( median_n r_n, MinDerivedLookahead, MaxDerivedLookahead )
//	r_n   = max(IdleUntil_n − now, 0),  r_n = ∞ where IdleUntil_n is unknown
//
// over nodes (the pool's idle nodes, held or free), or fallback, returned
// as given, when no node has an estimate (nodes empty, or every IdleUntil
// zero). The median is the lower one (nearest rank), so it is always one
// node's own value.
//
// Why this rule. T_fwd is how long a new allocation is expected to last:
// the objective weighs T_fwd·O_j(k) against a one-off rescale cost, and a
// change lasts until the batch scheduler takes back the nodes it involves.
// By the median, half the idle nodes are still idle. It is robust where
// estimates are skewed: remaining idle times are heavy-tailed (on Summit
// the median hole lasts 7 minutes, the 90th percentile 47), so a mean is
// set by the few longest; a few overdue estimates (a planned start
// already past counts as 0) move it by one rank, not to zero. A node
// without an estimate counts as idle longer than any known one, as
// Node.IdleUntil says everywhere in this package: nothing has been
// announced for it. Production (the Allocate activity) and the simulator
// both call this function, so they follow one policy.
//
// What it is worth: docs/benchmarks.md, "Idle-time estimates and T_fwd".
// On replays of Summit it did not beat a fixed T_fwd — there T_fwd acts
// as a damper on rescales more than as a forecast, and its level matters
// more than following the holes.
func LookaheadFromIdle(nodes []Node, now time.Time, fallback time.Duration) time.Duration {
	rem := make([]time.Duration, len(nodes))
	known := false
	for i, n := range nodes {
		if n.IdleUntil.IsZero() {
			rem[i] = MaxDerivedLookahead // ∞, clamped: clamping commutes with the median
			continue
		}
		known = true
		// Sub saturates instead of overflowing, so far ends are safe.
		rem[i] = min(max(n.IdleUntil.Sub(now), 0), MaxDerivedLookahead)
	}
	if !known {
		return fallback
	}
	slices.Sort(rem)
	return max(rem[(len(rem)-1)/2], MinDerivedLookahead)
}
