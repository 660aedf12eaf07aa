package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// SourceOptions selects what part of a trace is offered to the simulator.
// The zero value offers the whole trace, every hole, and takes the machine
// size from the file.
type SourceOptions struct {
	// Window restricts the trace to [Window[0], Window[1]) in trace time
	// (seconds). Each bound is independent and zero means unbounded. With a
	// lower bound the trace starts with one event, at Window[0], that makes
	// idle every node idle at that instant (after the events at exactly
	// Window[0]); events at or after Window[1] are cut and the holes still
	// open there end at Trace.End = Window[1].
	Window [2]float64

	// MinHole (seconds) drops idle intervals shorter than it: when a node is
	// idle from a to b with b-a < MinHole, its entry in the Idle list at a
	// and in the Busy list at b are both removed, as if the node had stayed
	// busy. Lengths are measured inside the trace (after Window), so a hole
	// still open at Trace.End has length End-a. Zero keeps every hole.
	MinHole float64

	// MaxNodes is the machine size. For SWF it is required when the file has
	// no "; MaxNodes:" header and overrides the header when set. For idle
	// event files it overrides the "# N nodes" comment; it only sizes
	// Trace.Size (node names come from the file).
	MaxNodes int
}

// Trace is a replayable source of idle nodes: before Events[0] no node is
// idle; each Event changes the idle set. Event times are strictly
// increasing and lie in [Start, End]; without a Window, Start and End
// are the first and last instants of the log (first job start and last
// job end for SWF).
type Trace struct {
	Events []Event
	// Nodes are all node ids the trace names, sorted; for SWF they are the
	// first-fit ids n0000..nNNNN of the whole machine.
	Nodes []string
	// Size is the number of nodes of the machine: the declared size (file
	// header or SourceOptions.MaxNodes), or len(Nodes) when larger. Idle
	// fractions are relative to it.
	Size       int
	Start, End float64
	Report     TraceReport
}

// TraceReport says what the reader saw, skipped and repaired.
type TraceReport struct {
	Lines   int // lines read, comments and header included
	Records int // data lines: events (idle files) or jobs (SWF)
	// SWF only.
	Jobs               int     // job lines parsed
	SkippedJobs        int     // jobs not replayed: unknown submit time, run time or size, or zero run time or size
	UnknownWaits       int     // jobs whose wait time is -1, started at their submit time (a model's log)
	ClippedJobs        int     // jobs that asked for more nodes than were free when they started
	ClippedNodeSeconds float64 // node-seconds those jobs asked for beyond the free nodes
	// Idle event files only: node mentions ignored because they contradict
	// the state (busy while not idle, idle while already idle).
	Inconsistent  int
	DeclaredNodes int // machine size from the file's header (0 if none)
	// MinHole.
	DroppedHoles       int
	DroppedNodeSeconds float64
}

// Hole is one interval [Start, End) during which Node was idle.
type Hole struct {
	Node       string
	Start, End float64
}

// maxMachineNodes bounds the machine size a file may declare, so a bad
// header cannot exhaust memory.
const maxMachineNodes = 1 << 20

// ErrNoMaxNodes is returned by ReadSWF when neither the file nor the
// options give the machine size.
var ErrNoMaxNodes = errors.New(`no "; MaxNodes:" header and SourceOptions.MaxNodes is 0`)

// Holes lists every idle interval of every node of positive length, in
// the order they close (by End; within one event by node id); the holes
// of nodes still idle at End come last, ending at End, by node id.
func (tr *Trace) Holes() []Hole {
	// Nodes are indexed once so that the per-event work is a small map
	// lookup and slice access (a year of Theta has ~15M node mentions).
	index := make(map[string]int, len(tr.Nodes))
	names := slices.Clone(tr.Nodes)
	for i, n := range names {
		index[n] = i
	}
	openAt := make([]float64, len(names))
	isOpen := make([]bool, len(names))
	lookup := func(n string) int {
		i, ok := index[n]
		if !ok { // a node missing from Nodes: track it all the same
			i = len(names)
			index[n] = i
			names = append(names, n)
			openAt = append(openAt, 0)
			isOpen = append(isOpen, false)
		}
		return i
	}
	busy := 0
	for _, ev := range tr.Events {
		busy += len(ev.Busy)
	}
	holes := make([]Hole, 0, busy+len(names))
	for _, ev := range tr.Events {
		for _, n := range ev.Busy {
			if i := lookup(n); isOpen[i] {
				if ev.Time > openAt[i] {
					holes = append(holes, Hole{Node: n, Start: openAt[i], End: ev.Time})
				}
				isOpen[i] = false
			}
		}
		for _, n := range ev.Idle {
			i := lookup(n)
			openAt[i], isOpen[i] = ev.Time, true
		}
	}
	var rest []int
	for i, o := range isOpen {
		if o && tr.End > openAt[i] {
			rest = append(rest, i)
		}
	}
	slices.SortFunc(rest, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for _, i := range rest {
		holes = append(holes, Hole{Node: names[i], Start: openAt[i], End: tr.End})
	}
	return holes
}

// IdleNodeSeconds is the integral of the number of idle nodes over
// [Start, End): the sum of all hole lengths.
func (tr *Trace) IdleNodeSeconds() float64 {
	var sum float64
	idle := 0
	for i, ev := range tr.Events {
		idle += len(ev.Idle) - len(ev.Busy)
		next := tr.End
		if i+1 < len(tr.Events) {
			next = tr.Events[i+1].Time
		}
		sum += float64(idle) * (next - ev.Time)
	}
	return sum
}

// MeanIdleFraction is IdleNodeSeconds / (Size * (End-Start)), the average
// share of the machine that is idle; 0 for an empty trace.
func (tr *Trace) MeanIdleFraction() float64 {
	d := float64(tr.Size) * (tr.End - tr.Start)
	if d <= 0 {
		return 0
	}
	return tr.IdleNodeSeconds() / d
}

// IdleAt is the number of idle nodes at time t (after the events at t);
// 0 outside [Start, End). It scans the events: O(len(Events)).
func (tr *Trace) IdleAt(t float64) int {
	if t < tr.Start || t >= tr.End {
		return 0
	}
	idle := 0
	for _, ev := range tr.Events {
		if ev.Time > t {
			break
		}
		idle += len(ev.Idle) - len(ev.Busy)
	}
	return idle
}

// rawEvent is an Event over node indices (positions in Trace.Nodes).
type rawEvent struct {
	t          float64
	idle, busy []int32
}

// builder turns a sequence of per-node state changes into rawEvents,
// merging the changes of one instant: a node whose state at the end of the
// instant equals its state before it produces nothing.
type builder struct {
	idle    []bool
	mark    []bool
	touched []int32
	before  []bool
	t       float64
	open    bool
	evs     []rawEvent
}

func (b *builder) grow(n int) {
	for len(b.idle) < n {
		b.idle = append(b.idle, false)
		b.mark = append(b.mark, false)
	}
}

// set records that node becomes idle (or busy) at time t; t must not
// decrease between calls.
func (b *builder) set(t float64, node int32, idle bool) {
	if !b.open || t != b.t {
		b.flush()
		b.open, b.t = true, t
	}
	if !b.mark[node] {
		b.mark[node] = true
		b.touched = append(b.touched, node)
		b.before = append(b.before, b.idle[node])
	}
	b.idle[node] = idle
}

func (b *builder) flush() {
	if !b.open {
		return
	}
	var ev rawEvent
	for i, n := range b.touched {
		b.mark[n] = false
		switch now := b.idle[n]; {
		case now && !b.before[i]:
			ev.idle = append(ev.idle, n)
		case !now && b.before[i]:
			ev.busy = append(ev.busy, n)
		}
	}
	b.touched, b.before = b.touched[:0], b.before[:0]
	b.open = false
	if len(ev.idle)+len(ev.busy) == 0 {
		return
	}
	slices.Sort(ev.idle)
	slices.Sort(ev.busy)
	ev.t = b.t
	b.evs = append(b.evs, ev)
}

// finish applies the window and MinHole to evs (consistent rawEvents over
// nodes) and builds the Trace; span is the extent of the unwindowed trace.
func finish(evs []rawEvent, span [2]float64, nodes []string, size int, opts SourceOptions, rep TraceReport) (*Trace, error) {
	from, to := opts.Window[0], opts.Window[1]
	for i, v := range []float64{from, to, opts.MinHole} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			name := [...]string{"Window[0]", "Window[1]", "MinHole"}[i]
			return nil, fmt.Errorf("SourceOptions.%s is %v, want a finite number", name, v)
		}
	}
	if opts.MinHole < 0 {
		return nil, fmt.Errorf("SourceOptions.MinHole is %v, want >= 0", opts.MinHole)
	}
	if from != 0 && to != 0 && to <= from {
		return nil, fmt.Errorf("SourceOptions.Window [%v, %v) is empty", from, to)
	}
	evs = window(evs, len(nodes), from, to)
	tr := &Trace{Nodes: nodes, Size: max(size, len(nodes)), Start: span[0], End: span[1], Report: rep}
	if from != 0 {
		tr.Start = from
	}
	if to != 0 {
		tr.End = to
	}
	tr.End = max(tr.End, tr.Start)
	if opts.MinHole > 0 {
		evs = dropShortHoles(evs, len(nodes), opts.MinHole, tr.End, &tr.Report)
	}
	tr.Events = named(evs, nodes)
	return tr, nil
}

// window keeps the events in [from, to), prefixing one event at from that
// makes idle every node idle there. Zero bounds are open.
func window(evs []rawEvent, n int, from, to float64) []rawEvent {
	if from != 0 {
		state := make([]bool, n)
		i := 0
		for ; i < len(evs) && evs[i].t <= from; i++ {
			for _, x := range evs[i].idle {
				state[x] = true
			}
			for _, x := range evs[i].busy {
				state[x] = false
			}
		}
		first := rawEvent{t: from}
		for x, idle := range state {
			if idle {
				first.idle = append(first.idle, int32(x))
			}
		}
		rest := evs[i:]
		evs = make([]rawEvent, 0, len(rest)+1)
		if len(first.idle) > 0 {
			evs = append(evs, first)
		}
		evs = append(evs, rest...)
	}
	if to != 0 {
		k := len(evs)
		for k > 0 && evs[k-1].t >= to {
			k--
		}
		evs = evs[:k]
	}
	return evs
}

// dropShortHoles removes the idle/busy entries of every hole shorter than
// minHole (a hole open at end has length end-start), then empty events.
func dropShortHoles(evs []rawEvent, n int, minHole, end float64, rep *TraceReport) []rawEvent {
	openEv := make([]int32, n)
	openPos := make([]int32, n)
	for i := range openEv {
		openEv[i] = -1
	}
	drop := func(node int32, length float64) {
		evs[openEv[node]].idle[openPos[node]] = -1
		rep.DroppedHoles++
		rep.DroppedNodeSeconds += length
	}
	for i := range evs {
		ev := &evs[i]
		for j, x := range ev.busy {
			if o := openEv[x]; o >= 0 {
				if l := ev.t - evs[o].t; l < minHole {
					drop(x, l)
					ev.busy[j] = -1
				}
				openEv[x] = -1
			}
		}
		for j, x := range ev.idle {
			openEv[x], openPos[x] = int32(i), int32(j)
		}
	}
	for x, o := range openEv {
		if o >= 0 {
			if l := end - evs[o].t; l < minHole {
				drop(int32(x), l)
			}
		}
	}
	keep := func(x int32) bool { return x < 0 }
	out := evs[:0]
	for _, ev := range evs {
		ev.idle = slices.DeleteFunc(ev.idle, keep)
		ev.busy = slices.DeleteFunc(ev.busy, keep)
		if len(ev.idle)+len(ev.busy) > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// named converts rawEvents to Events; all node lists share one backing
// array so a year of Theta costs one allocation, not millions.
func named(evs []rawEvent, nodes []string) []Event {
	total := 0
	for _, ev := range evs {
		total += len(ev.idle) + len(ev.busy)
	}
	arena := make([]string, 0, total)
	list := func(xs []int32) []string {
		if len(xs) == 0 {
			return nil
		}
		s := len(arena)
		for _, x := range xs {
			arena = append(arena, nodes[x])
		}
		return arena[s:len(arena):len(arena)]
	}
	out := make([]Event, len(evs))
	for i, ev := range evs {
		out[i] = Event{Time: ev.t, Idle: list(ev.idle), Busy: list(ev.busy)}
	}
	return out
}
