package cluster

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/idleevents"
)

// ReplayOptions configure a ReplaySource. Trace time runs as
//
//	trace = traceStart + Offset + (now − WallStart) × Factor
//
// where traceStart is the earliest event of the trace.
type ReplayOptions struct {
	// Slots is K, the number of local slots ("local-0".."local-K-1") the
	// trace drives. Zero means len(Nodes).
	Slots int
	// Nodes are the trace nodes mapped onto the slots, Nodes[i] → slot i.
	// Empty means the first K distinct node names in file order: the
	// nodes that show up earliest, so a replay from the start sees
	// activity at once.
	Nodes []string
	// Factor is trace seconds per wall-clock second (600: ten trace
	// minutes pass each second). Zero means 1.
	Factor float64
	// Offset skips this much trace time at the start.
	Offset time.Duration
	// Loop restarts the trace after its end; otherwise the state after
	// the last event holds forever. A looped trace lasts from its first
	// event to one second after its last one, then starts again with
	// every node busy.
	Loop bool
	// WallStart is the wall-clock time of trace time traceStart + Offset.
	// Zero means the now of the first Idle call.
	WallStart time.Time
	// Type is the node type of every slot ("" when unknown).
	Type string
}

// ReplaySource replays an idle-node event file onto local slots, so nodes
// really come and go: see ReplayOptions for the node mapping and clock.
//
// The file has one event per line, `unix_time,event,nodes`, where event
// is "idle" (the nodes became usable) or "busy" (the batch scheduler took
// them back) and nodes are space separated; lines starting with '#', blank
// lines and a header line before the first event are skipped, and times
// do not decrease (the format of summit-idle-*.csv, read by
// idleevents.Reader as sim reads it). A node is busy until its first idle
// event.
type ReplaySource struct {
	name       string
	opts       ReplayOptions
	traceNodes []string
	start, end time.Duration // since the unix epoch; first and last event of the whole trace
	slots      []replaySlot  // sorted by slot id
	mu         sync.Mutex
	wallStart  time.Time
}

type replaySlot struct {
	id string
	// changes are the times (since traceStart) at which the node changes
	// state, alternately becoming idle and busy, starting with idle.
	changes []time.Duration
}

// maxReplaySeconds bounds a replayed event's unix time: a time.Duration
// of nanoseconds holds about 292 years.
const maxReplaySeconds = 9e9

// OpenReplaySource reads the event file at path in one streaming pass,
// keeping only the events of the chosen nodes. A path with data.Prefix
// names a trace of the built-in reference data
// ("embedded:traces/summit-idle-2021-02-10_14.csv").
func OpenReplaySource(path string, opts ReplayOptions) (*ReplaySource, error) {
	f, err := data.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay source: %w", err)
	}
	defer f.Close()
	return NewReplaySource(f, path, opts)
}

// NewReplaySource reads events from r; name (a path) is used in errors.
func NewReplaySource(r io.Reader, name string, opts ReplayOptions) (*ReplaySource, error) {
	fail := func(format string, args ...any) (*ReplaySource, error) {
		return nil, fmt.Errorf("replay %s: "+format, append([]any{name}, args...)...)
	}
	k := opts.Slots
	switch {
	case k < 0:
		return fail("slots: %d is negative", k)
	case k == 0 && len(opts.Nodes) == 0:
		return fail("slots: set the number of slots or the trace nodes to replay")
	case k == 0:
		k = len(opts.Nodes)
	case len(opts.Nodes) > 0 && len(opts.Nodes) != k:
		return fail("nodes: %d trace nodes for %d slots", len(opts.Nodes), k)
	}
	if opts.Factor == 0 {
		opts.Factor = 1
	}
	if !(opts.Factor > 0) || math.IsInf(opts.Factor, 0) {
		return fail("factor: %v must be positive and finite", opts.Factor)
	}
	if opts.Offset < 0 {
		return fail("offset: %v is negative", opts.Offset)
	}
	opts.Slots = k

	chosen := make(map[string]int, k) // trace node → slot
	for i, n := range opts.Nodes {
		if n == "" || strings.ContainsAny(n, " \t,") {
			return fail("nodes: %q is not a node name", n)
		}
		if _, dup := chosen[n]; dup {
			return fail("nodes: %q listed twice", n)
		}
		chosen[n] = i
	}
	pick := len(opts.Nodes) == 0
	traceNodes := slices.Clone(opts.Nodes)
	type event struct {
		t    time.Duration
		idle bool
	}
	events := make([][]event, k)
	start, end := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	lines := 0

	er := idleevents.NewReader(r)
	for {
		ev, err := er.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail("%v", err)
		}
		// Beyond ~290 years of nanoseconds a time.Duration overflows.
		if ev.Time < 0 || ev.Time > maxReplaySeconds {
			return fail("line %d: field 1 (unix_time): %v is not a unix time in seconds in [0, %g]", ev.Line, ev.Time, maxReplaySeconds)
		}
		t, idle, nodes := time.Duration(math.Round(ev.Time*1e9)), ev.Idle, ev.Nodes
		lines++
		start, end = min(start, t), max(end, t)
		for _, n := range nodes {
			slot, ok := chosen[n]
			if !ok {
				if !pick || len(traceNodes) == k {
					continue
				}
				slot = len(traceNodes)
				chosen[n] = slot
				traceNodes = append(traceNodes, n)
			}
			events[slot] = append(events[slot], event{t, idle})
		}
	}
	if lines == 0 {
		return fail("no events")
	}
	if len(traceNodes) < k {
		return fail("slots: %d requested but the trace names only %d nodes", k, len(traceNodes))
	}
	for i, n := range traceNodes {
		if len(events[i]) == 0 {
			return fail("nodes: %q has no events in the trace", n)
		}
	}

	s := &ReplaySource{name: name, opts: opts, traceNodes: traceNodes, start: start, end: end, wallStart: opts.WallStart}
	for i := range k {
		// In file order, so by time (the reader checks that times do not
		// decrease); of events at the same time the later line wins.
		evs := events[i]
		var changes []time.Duration
		idle := false
		for j, e := range evs {
			if j+1 < len(evs) && evs[j+1].t == e.t {
				continue // superseded within the same second
			}
			if e.idle != idle {
				changes = append(changes, e.t-start)
				idle = e.idle
			}
		}
		s.slots = append(s.slots, replaySlot{id: SlotID(i), changes: changes})
	}
	slices.SortFunc(s.slots, func(a, b replaySlot) int { return strings.Compare(a.id, b.id) })
	return s, nil
}

// TraceNodes are the trace nodes replayed, TraceNodes()[i] on slot i.
func (s *ReplaySource) TraceNodes() []string { return slices.Clone(s.traceNodes) }

// Span is the times of the first and last events of the trace.
func (s *ReplaySource) Span() (first, last time.Time) {
	return time.Unix(0, int64(s.start)).UTC(), time.Unix(0, int64(s.end)).UTC()
}

// period is the length of one pass of a looped trace.
func (s *ReplaySource) period() time.Duration { return s.end - s.start + time.Second }

// elapsed is the trace time since traceStart at now, wrapped when looping.
func (s *ReplaySource) elapsed(now time.Time) time.Duration {
	s.mu.Lock()
	if s.wallStart.IsZero() {
		s.wallStart = now
	}
	wall := now.Sub(s.wallStart)
	s.mu.Unlock()
	scaled := float64(max(wall, 0)) * s.opts.Factor
	e := time.Duration(math.MaxInt64) // far in the future: saturate
	if scaled < float64(math.MaxInt64-s.opts.Offset)-1e6 {
		e = s.opts.Offset + time.Duration(scaled)
	}
	if s.opts.Loop {
		e %= s.period()
	}
	return e
}

// TraceTime is the trace time replayed at now.
func (s *ReplaySource) TraceTime(now time.Time) time.Time {
	return time.Unix(0, int64(s.start+s.elapsed(now))).UTC()
}

// Idle returns the slots whose trace node is idle at the trace time of
// now, sorted by id, each with IdleUntil the wall-clock time of its next
// busy event (zero when none is coming).
func (s *ReplaySource) Idle(ctx context.Context, now time.Time) ([]Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e := s.elapsed(now)
	var nodes []Node
	for _, slot := range s.slots {
		busyIn, idle := slot.at(e, s.opts.Loop, s.period())
		if !idle {
			continue
		}
		n := Node{ID: slot.id, Type: s.opts.Type}
		if busyIn >= 0 {
			n.IdleUntil = now.Add(time.Duration(float64(busyIn) / s.opts.Factor))
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// at reports whether the node is idle at trace time e (since traceStart)
// and, if so, the trace time until it turns busy (-1 when never).
func (r replaySlot) at(e time.Duration, loop bool, period time.Duration) (busyIn time.Duration, idle bool) {
	// Changes at or before e: the state is idle iff their count is odd.
	n := sort.Search(len(r.changes), func(i int) bool { return r.changes[i] > e })
	if n%2 == 0 {
		return 0, false
	}
	if n < len(r.changes) {
		return r.changes[n] - e, true
	}
	if !loop {
		return -1, true
	}
	// Idle to the end of the pass. The next pass starts busy unless the
	// node turns idle at its very first instant.
	if len(r.changes) > 0 && r.changes[0] == 0 {
		if len(r.changes) > 1 {
			return period - e + r.changes[1], true
		}
		return -1, true // idle throughout
	}
	return period - e, true
}
