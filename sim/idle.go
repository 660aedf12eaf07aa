package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// IdleEstimateMode says how IdleEstimate tells the allocator when nodes
// are taken back.
type IdleEstimateMode string

const (
	// IdleEstimateNone tells nothing: every IdleUntil is zero (unknown),
	// as for a pool whose source makes no estimate. The empty mode is
	// this one.
	IdleEstimateNone IdleEstimateMode = "none"
	// IdleEstimateTrue tells the trace's truth: IdleUntil is the instant
	// of the node's next busy event.
	IdleEstimateTrue IdleEstimateMode = "true"
	// IdleEstimateNoisy tells the truth with a multiplicative error: at
	// each decision the remaining idle time is multiplied by a log-normal
	// factor exp(Sigma·Z), Z ~ N(0, 1), one per busy event.
	IdleEstimateNoisy IdleEstimateMode = "noisy"
)

// IdleEstimate is what the allocator is told of when the batch scheduler
// takes each idle node back (allocator.Node.IdleUntil). The replay knows
// the truth: a node that became idle at some event is taken back at its
// next busy event in Run's events — those after Config.End included, so
// a caller that replays a window can pass the events beyond it to give
// the holes still open at End their true ends. A node with no later busy
// event has no known end (IdleUntil zero) in every mode.
//
// The zero value is IdleEstimateNone.
type IdleEstimate struct {
	Mode IdleEstimateMode
	// Sigma is the log-normal sigma of IdleEstimateNoisy's factor (0: the
	// truth). One factor is drawn per busy event, shared by every node it
	// takes back, and kept until then, not drawn at every decision: a
	// batch scheduler estimates when a pending job starts, one time for
	// all the nodes planned for it (squeue --start), and errs the same
	// way while its plan holds; applied to what remains, the error
	// shrinks as the end nears.
	Sigma float64
	// Seed seeds IdleEstimateNoisy's factors: the same seed and events
	// give the same estimates, whatever the policy.
	Seed uint64
}

// String is "none", "true", or "noisy:SIGMA".
func (ie IdleEstimate) String() string {
	switch ie.Mode {
	case "", IdleEstimateNone:
		return string(IdleEstimateNone)
	case IdleEstimateNoisy:
		return string(ie.Mode) + ":" + strconv.FormatFloat(ie.Sigma, 'g', -1, 64)
	}
	return string(ie.Mode)
}

// validate checks the estimate; errors name the field.
func (ie IdleEstimate) validate() error {
	switch ie.Mode {
	case "", IdleEstimateNone, IdleEstimateTrue, IdleEstimateNoisy:
	default:
		return fmt.Errorf("IdleEstimate.Mode: %q is not one of %s, %s, %s", ie.Mode, IdleEstimateNone, IdleEstimateTrue, IdleEstimateNoisy)
	}
	switch {
	case math.IsNaN(ie.Sigma) || math.IsInf(ie.Sigma, 0) || ie.Sigma < 0:
		return fmt.Errorf("IdleEstimate.Sigma: %v must be a finite non-negative number", ie.Sigma)
	case ie.Sigma != 0 && ie.Mode != IdleEstimateNoisy:
		return fmt.Errorf("IdleEstimate.Sigma: %v is only for mode %s (mode is %s)", ie.Sigma, IdleEstimateNoisy, ie)
	}
	return nil
}

// idleEstimator knows when each idle node's hole ends and tells the
// allocator as its IdleEstimate says. A nil *idleEstimator tells nothing.
type idleEstimator struct {
	noisy  bool
	sigma  float64
	rng    *rand.Rand
	events []Event
	// busyAt lists, per node, the indices of the events that take it back.
	busyAt map[string][]int32
	// ends holds, per idle node, the index of the event that ends its
	// hole (−1: none does).
	ends map[string]int32
	// factors holds the noisy factor of each ending event, drawn when a
	// hole it ends first opens.
	factors map[int32]float64
}

func newIdleEstimator(events []Event, ie IdleEstimate) *idleEstimator {
	if ie.Mode == "" || ie.Mode == IdleEstimateNone {
		return nil
	}
	x := &idleEstimator{
		noisy:   ie.Mode == IdleEstimateNoisy,
		sigma:   ie.Sigma,
		rng:     rand.New(rand.NewPCG(ie.Seed, 0x69646c65)), // "idle"
		events:  events,
		busyAt:  map[string][]int32{},
		ends:    map[string]int32{},
		factors: map[int32]float64{},
	}
	for i, ev := range events {
		for _, id := range ev.Busy {
			x.busyAt[id] = append(x.busyAt[id], int32(i))
		}
	}
	return x
}

// opened records that node id became idle at events[i] (i = −1: before
// the first event). Nothing else makes a node idle, and only its next
// busy event makes it busy again, so that event is the hole's true end.
func (x *idleEstimator) opened(id string, i int) {
	if x == nil {
		return
	}
	end := int32(-1)
	busy := x.busyAt[id]
	if k, _ := slices.BinarySearch(busy, int32(i+1)); k < len(busy) {
		end = busy[k]
	}
	x.ends[id] = end
	if _, drawn := x.factors[end]; x.noisy && end >= 0 && !drawn {
		x.factors[end] = math.Exp(x.sigma * x.rng.NormFloat64())
	}
}

// estimate returns nodes (the idle nodes, held or free) with IdleUntil
// set at simulated time now: the true end, or now + factor × (end − now)
// when noisy. nodes is not modified.
func (x *idleEstimator) estimate(nodes []allocator.Node, now float64) []allocator.Node {
	if x == nil {
		return nodes
	}
	out := slices.Clone(nodes)
	for i := range out {
		k := x.ends[out[i].ID]
		if k < 0 {
			continue
		}
		end := x.events[k].Time
		if x.noisy {
			end = now + x.factors[k]*(end-now)
		}
		out[i].IdleUntil = simTime(end)
	}
	return out
}

// simTime is the instant of simulated time t (seconds, the events' clock,
// e.g. unix time) as a time.Time, to the nanosecond. Instants beyond
// ±2⁶² s (a noisy factor can reach them) saturate there.
func simTime(t float64) time.Time {
	const limit = 1 << 62
	sec, frac := math.Modf(min(max(t, -limit), limit))
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC()
}
