package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Churn is a synthetic idle-node trace: each of nodes nodes (n0000,
// n0001, …) alternates idle and busy spells of exponential length (means
// idleMean, busyMean seconds), from start for duration seconds, the same
// for the same seed; times are whole seconds, so some events coincide
// and are merged. The last event, at start + duration, ends the replay.
// For tests and what-if studies where no real trace has the right shape.
func Churn(nodes int, start, duration, idleMean, busyMean float64, seed uint64) []Event {
	rng := rand.New(rand.NewPCG(seed, 99))
	type change struct {
		t    float64
		id   string
		idle bool
	}
	var all []change
	for n := range nodes {
		id := fmt.Sprintf("n%04d", n)
		idle := rng.IntN(2) == 0
		t := start
		for t < start+duration {
			all = append(all, change{t, id, idle})
			mean := busyMean
			if idle {
				mean = idleMean
			}
			t = math.Round(t + 1 + rng.ExpFloat64()*mean)
			idle = !idle
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].t < all[b].t })
	var events []Event
	for _, c := range all {
		if len(events) == 0 || events[len(events)-1].Time != c.t {
			events = append(events, Event{Time: c.t})
		}
		ev := &events[len(events)-1]
		if c.idle {
			ev.Idle = append(ev.Idle, c.id)
		} else {
			ev.Busy = append(ev.Busy, c.id)
		}
	}
	events = append(events, Event{Time: start + duration})
	return events
}
