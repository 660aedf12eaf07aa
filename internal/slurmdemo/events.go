package slurmdemo

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/sim"
)

// IdleHoles are the intervals in [from, to) during which no batch job
// held each node, in the timeline's samples: the idle events of the run
// as the simulator sees idle nodes. Times are unix seconds.
func IdleHoles(t *Timeline, from, to time.Time) []sim.Hole {
	var holes []sim.Hole
	byNode := map[string][]Span{}
	for _, sp := range t.Spans() {
		byNode[sp.Node] = append(byNode[sp.Node], sp)
	}
	unix := func(x time.Time) float64 { return float64(x.UnixNano()) / 1e9 }
	for _, n := range t.Nodes {
		var open time.Time
		idle := false
		flush := func(end time.Time) {
			if idle && end.After(open) {
				holes = append(holes, sim.Hole{Node: n, Start: unix(open), End: unix(end)})
			}
			idle = false
		}
		for _, sp := range byNode[n] {
			a, b := laterOf(sp.From, from), earlierOf(sp.To, to)
			if !b.After(a) {
				continue
			}
			if sp.Holder == Batch {
				flush(a)
				continue
			}
			if !idle {
				open, idle = a, true
			}
		}
		flush(to)
	}
	sort.SliceStable(holes, func(i, j int) bool {
		if holes[i].Start != holes[j].Start {
			return holes[i].Start < holes[j].Start
		}
		return holes[i].Node < holes[j].Node
	})
	return holes
}

// ShiftHoles delays the start of every hole that opens after from by
// lag, dropping holes no longer than lag: the holes as a harvester that
// needs lag to reach a node sees them. Holes open at from stay whole.
func ShiftHoles(holes []sim.Hole, from float64, lag time.Duration) []sim.Hole {
	var out []sim.Hole
	for _, h := range holes {
		if h.Start > from {
			h.Start += lag.Seconds()
		}
		if h.End > h.Start {
			out = append(out, h)
		}
	}
	return out
}

// HoleEvents turns holes into the simulator's events: at each instant the
// nodes whose hole opens (Idle) and closes (Busy); a node whose hole
// closes and another opens at one instant is left out of both.
func HoleEvents(holes []sim.Hole) []sim.Event {
	type change struct{ idle, busy []string }
	at := map[float64]*change{}
	get := func(t float64) *change {
		c := at[t]
		if c == nil {
			c = &change{}
			at[t] = c
		}
		return c
	}
	for _, h := range holes {
		get(h.Start).idle = append(get(h.Start).idle, h.Node)
		get(h.End).busy = append(get(h.End).busy, h.Node)
	}
	times := make([]float64, 0, len(at))
	for t := range at {
		times = append(times, t)
	}
	sort.Float64s(times)
	var evs []sim.Event
	for _, t := range times {
		c := at[t]
		idle, busy := setMinus(c.idle, c.busy), setMinus(c.busy, c.idle)
		if len(idle)+len(busy) > 0 {
			evs = append(evs, sim.Event{Time: t, Idle: idle, Busy: busy})
		}
	}
	return evs
}

func setMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// WriteIdleEvents writes events in the BFTrainer idle-event format that
// `gleaner sim --events` reads (sim.ReadIdleEvents): "# N nodes", a
// header, then unix_time,idle|busy,nodes lines.
func WriteIdleEvents(w io.Writer, nodes int, evs []sim.Event, comment string) error {
	bw := bufio.NewWriter(w)
	for _, line := range strings.Split(comment, "\n") {
		if line != "" {
			fmt.Fprintf(bw, "# %s\n", line)
		}
	}
	fmt.Fprintf(bw, "# %d nodes\nunix_time,event,nodes\n", nodes)
	for _, ev := range evs {
		ts := strconv.FormatFloat(ev.Time, 'f', 3, 64)
		if len(ev.Busy) > 0 {
			fmt.Fprintf(bw, "%s,busy,%s\n", ts, strings.Join(ev.Busy, " "))
		}
		if len(ev.Idle) > 0 {
			fmt.Fprintf(bw, "%s,idle,%s\n", ts, strings.Join(ev.Idle, " "))
		}
	}
	return bw.Flush()
}

// SimWorkload is a synthetic workload like the live campaign's: Jobs
// identical trials of Samples each, on MinNodes..MaxNodes nodes, training
// Rate samples/s per node, all there from the start (the campaign keeps
// trials waiting for nodes).
type SimWorkload struct {
	Jobs     int     `json:"jobs"`
	Samples  float64 `json:"samples"`
	Rate     float64 `json:"rate_samples_per_s"`
	MinNodes int     `json:"min_nodes"`
	MaxNodes int     `json:"max_nodes"`
	// RescaleUp and RescaleDown are seconds of progress lost per rescale
	// (a preemption is a shrink).
	RescaleUp   float64 `json:"rescale_up_s"`
	RescaleDown float64 `json:"rescale_down_s"`
}

// Jobs are the workload's sim jobs, submitted at start.
func (w SimWorkload) SimJobs(start float64) []sim.Job {
	var curve allocator.Curve
	for k := 1; k <= w.MaxNodes; k++ {
		// The example trainer's global batch is fixed, so more nodes do not
		// train faster here; a flat curve says so.
		curve = append(curve, allocator.Point{Nodes: k, Throughput: w.Rate})
	}
	jobs := make([]sim.Job, w.Jobs)
	for i := range jobs {
		jobs[i] = sim.Job{
			Name: fmt.Sprintf("trial-%03d", i+1), Model: "go-mlp", Submit: start,
			MinNodes: w.MinNodes, MaxNodes: w.MaxNodes,
			RescaleUp: w.RescaleUp, RescaleDown: w.RescaleDown,
			TotalSamples: w.Samples, Curve: curve,
		}
	}
	return jobs
}

// Predict replays holes with w in the simulator over [from, to] (unix
// seconds) and returns its metrics: the harvest it predicts is
// HoleUtilisation, its efficiency EfficiencyVsDedicated.
func Predict(holes []sim.Hole, from, to float64, w SimWorkload) (sim.Metrics, error) {
	evs := HoleEvents(holes)
	if len(evs) == 0 {
		return sim.Metrics{}, fmt.Errorf("simulator: no idle node in the window")
	}
	res, err := sim.Run(evs, w.SimJobs(from), sim.Config{Start: from, End: to})
	if err != nil {
		return sim.Metrics{}, fmt.Errorf("simulator: %w", err)
	}
	return res.Metrics, nil
}

// QueueGaps splits holes into those that only wait for the batch
// scheduler, and the rest: a hole is a queue gap when the batch job that
// ends it (starting on its node at its end) had been submitted before
// the hole opened, so Slurm held the node for that job all along (the
// few seconds its scheduling cycle takes to start the next queued job;
// the backfill plan reserves the node, so no pilot is offered it).
// submitted are the batch jobs' submission times by name.
func QueueGaps(t *Timeline, holes []sim.Hole, submitted map[string]time.Time) (offered, gaps []sim.Hole) {
	starts := map[string]map[int64]string{} // node → start (ms) → batch job
	for _, sp := range t.Spans() {
		if sp.Holder != Batch {
			continue
		}
		if starts[sp.Node] == nil {
			starts[sp.Node] = map[int64]string{}
		}
		starts[sp.Node][sp.From.UnixMilli()] = sp.Job
	}
	for _, h := range holes {
		job := starts[h.Node][int64(math.Round(h.End*1000))]
		sub, ok := submitted[job]
		if job != "" && ok && float64(sub.UnixNano())/1e9 <= h.Start {
			gaps = append(gaps, h)
		} else {
			offered = append(offered, h)
		}
	}
	return offered, gaps
}

// HeldIn sums, over holes, the node-seconds the timeline's spans of
// holder h cover inside them.
func HeldIn(t *Timeline, holes []sim.Hole, h Holder) float64 {
	byNode := map[string][]Span{}
	for _, sp := range t.Spans() {
		if sp.Holder == h {
			byNode[sp.Node] = append(byNode[sp.Node], sp)
		}
	}
	var sum float64
	for _, hole := range holes {
		for _, sp := range byNode[hole.Node] {
			a := math.Max(hole.Start, float64(sp.From.UnixNano())/1e9)
			b := math.Min(hole.End, float64(sp.To.UnixNano())/1e9)
			if b > a {
				sum += b - a
			}
		}
	}
	return sum
}

// NodeSecondsOf sums the holes' lengths.
func NodeSecondsOf(holes []sim.Hole) float64 {
	var sum float64
	for _, h := range holes {
		sum += h.End - h.Start
	}
	return sum
}
