package slurmdemo

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// NodeSeconds are the node-seconds of a window by what held the nodes.
type NodeSeconds struct {
	Total float64 `json:"total"`
	Batch float64 `json:"batch"`
	// Idle is every node-second no batch job held: Trial + Pilot + Free.
	Idle  float64 `json:"idle"`
	Trial float64 `json:"trial"`
	Pilot float64 `json:"pilot_without_trial"`
	Free  float64 `json:"free"`
}

// PilotSummary counts the pilots of a pass.
type PilotSummary struct {
	Submitted int `json:"submitted"` // seen in squeue
	Started   int `json:"started"`
	// Preempted counts the pilots that left before their time limit for a
	// batch job: preempted by Slurm or yielding to the plan.
	Preempted int `json:"preempted"`
	// Yielded counts the pilots the worker told to leave because the
	// backfill plan gave their node to a batch job (worker log).
	Yielded int `json:"yielded"`
	// States counts the pilots by their last state.
	States map[string]int `json:"states"`
}

// BatchSummary counts the replayed batch jobs of a pass.
type BatchSummary struct {
	Planned   int            `json:"planned"`
	Seen      int            `json:"seen"`
	Started   int            `json:"started"`
	Ended     int            `json:"ended"`
	States    map[string]int `json:"states"`
	Unstarted []string       `json:"unstarted,omitempty"`
}

// Churn is how fast pilots come back into the holes: for every hole (a
// node a batch job left, within the window), the time until a pilot ran
// there and until a trial held it, over the holes where that happened
// before the next batch job came.
type Churn struct {
	Holes       int           `json:"holes"`
	IdleToPilot stats.Summary `json:"idle_to_pilot_s"`
	IdleToTrial stats.Summary `json:"idle_to_trial_s"`
	// Missed are holes no pilot reached; MissedLength their lengths.
	Missed       int           `json:"missed"`
	MissedLength stats.Summary `json:"missed_length_s"`
	// HoleLength is every hole's length (until the next batch job or the
	// window's end).
	HoleLength stats.Summary `json:"hole_length_s"`
}

// HolderShares sums the timeline's spans in [from, to) by holder.
func HolderShares(t *Timeline, from, to time.Time) NodeSeconds {
	by := t.NodeSeconds(from, to)
	ns := NodeSeconds{Batch: by[Batch], Trial: by[Trial], Pilot: by[Pilot], Free: by[Free]}
	ns.Idle = ns.Trial + ns.Pilot + ns.Free
	ns.Total = ns.Idle + ns.Batch
	return ns
}

// Harvest is node-seconds trials held ÷ idle node-seconds (0 when
// nothing was idle).
func (ns NodeSeconds) Harvest() float64 {
	if ns.Idle <= 0 {
		return 0
	}
	return ns.Trial / ns.Idle
}

// CountYields counts the worker log's "SCHEDULER: pilot N yields node"
// lines (scheduler "slurm" or "pbs"): pilots that left for a batch job
// the plan put on their node before the scheduler preempted them.
func CountYields(workerLog []byte, scheduler string) int {
	n := 0
	prefix := []byte(scheduler + ": pilot ")
	for _, line := range bytes.Split(workerLog, []byte("\n")) {
		if bytes.Contains(line, prefix) && bytes.Contains(line, []byte(" yields node ")) {
			n++
		}
	}
	return n
}

// SummarisePilots counts the timeline's pilots.
func SummarisePilots(t *Timeline) PilotSummary {
	s := PilotSummary{States: map[string]int{}}
	for _, j := range t.Pilots {
		s.Submitted++
		if j.Ran() {
			s.Started++
		}
		if j.Preempted() {
			s.Preempted++
		}
		s.States[j.State]++
	}
	return s
}

// SummariseBatch counts the planned jobs' records.
func SummariseBatch(t *Timeline, plan []PlannedJob) BatchSummary {
	s := BatchSummary{Planned: len(plan), States: map[string]int{}}
	for _, p := range plan {
		j := t.Batch[p.Name]
		if j == nil {
			s.Unstarted = append(s.Unstarted, p.Name)
			continue
		}
		s.Seen++
		if j.Ran() {
			s.Started++
		} else {
			s.Unstarted = append(s.Unstarted, p.Name)
		}
		if j.Ended {
			s.Ended++
		}
		s.States[j.State]++
	}
	return s
}

// BatchStarts are the seconds from start at which each batch job started,
// by name: what the delay comparison matches between passes.
func BatchStarts(t *Timeline, start time.Time) map[string]float64 {
	out := map[string]float64{}
	for name, j := range t.Batch {
		if j.Ran() && t.replayed(name) {
			out[name] = j.Start.Sub(start).Seconds()
		}
	}
	return out
}

// MeasureChurn finds the holes batch jobs left in [from, to) and how soon
// pilots and trials filled them.
func MeasureChurn(t *Timeline, from, to time.Time) Churn {
	var c Churn
	var toPilot, toTrial, missed, lengths []float64
	byNode := map[string][]Span{}
	for _, sp := range t.Spans() {
		byNode[sp.Node] = append(byNode[sp.Node], sp)
	}
	for _, spans := range byNode {
		for i, sp := range spans {
			if sp.Holder != Batch || sp.To.Before(from) || !sp.To.Before(to) {
				continue
			}
			if i+1 < len(spans) && spans[i+1].Holder == Batch {
				continue // one batch job after another: no hole
			}
			open := sp.To
			c.Holes++
			end := to
			pilot, trial := time.Time{}, time.Time{}
			for _, next := range spans[i+1:] {
				if next.Holder == Batch {
					end = next.From
					break
				}
				if pilot.IsZero() && (next.Holder == Pilot || next.Holder == Trial) {
					pilot = next.From
				}
				if trial.IsZero() && next.Holder == Trial {
					trial = next.From
				}
			}
			lengths = append(lengths, end.Sub(open).Seconds())
			if pilot.IsZero() {
				missed = append(missed, end.Sub(open).Seconds())
				continue
			}
			toPilot = append(toPilot, pilot.Sub(open).Seconds())
			if !trial.IsZero() {
				toTrial = append(toTrial, trial.Sub(open).Seconds())
			}
		}
	}
	c.IdleToPilot, c.IdleToTrial = stats.Summarize(toPilot), stats.Summarize(toTrial)
	c.Missed, c.MissedLength, c.HoleLength = len(missed), stats.Summarize(missed), stats.Summarize(lengths)
	return c
}

// JobDelay is one batch job's start with Gleaner against without.
type JobDelay struct {
	Name string `json:"name"`
	// Baseline and Live are the starts, seconds after each pass's replay
	// start; Delay = Live − Baseline.
	Baseline float64 `json:"baseline_s"`
	Live     float64 `json:"live_s"`
	Delay    float64 `json:"delay_s"`
	// Preempted counts the pilots that ended on its nodes shortly before
	// it started in the live pass (Handovers): pilots it took the nodes of.
	Preempted int `json:"preempted_pilots,omitempty"`
}

// Delays compares the batch jobs' starts of the pass with Gleaner (live)
// against the pass without (baseline).
type Delays struct {
	Matched int `json:"matched"`
	// OnlyBaseline and OnlyLive are jobs that started in one pass only.
	OnlyBaseline []string `json:"only_baseline,omitempty"`
	OnlyLive     []string `json:"only_live,omitempty"`
	// Delay summarises Live − Baseline over the matched jobs (negative:
	// earlier with Gleaner).
	Delay stats.Summary `json:"delay_s"`
	// Later and Earlier count jobs that started more than a second later
	// or earlier with Gleaner.
	Later   int `json:"later"`
	Earlier int `json:"earlier"`
	// Bound is GraceTime + bf_interval; OverBound counts delays above it.
	Bound     float64    `json:"bound_s"`
	OverBound int        `json:"over_bound"`
	Worst     []JobDelay `json:"worst,omitempty"`
}

// CompareStarts matches the two passes' batch starts by name.
func CompareStarts(baseline, live map[string]float64, bound time.Duration) Delays {
	d := Delays{Bound: bound.Seconds()}
	var all []JobDelay
	for name, b := range baseline {
		l, ok := live[name]
		if !ok {
			d.OnlyBaseline = append(d.OnlyBaseline, name)
			continue
		}
		all = append(all, JobDelay{Name: name, Baseline: b, Live: l, Delay: l - b})
	}
	for name := range live {
		if _, ok := baseline[name]; !ok {
			d.OnlyLive = append(d.OnlyLive, name)
		}
	}
	sort.Strings(d.OnlyBaseline)
	sort.Strings(d.OnlyLive)
	slices.SortFunc(all, func(a, b JobDelay) int {
		if a.Delay != b.Delay {
			if a.Delay > b.Delay {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	xs := make([]float64, len(all))
	for i, j := range all {
		xs[i] = j.Delay
		switch {
		case j.Delay > 1:
			d.Later++
		case j.Delay < -1:
			d.Earlier++
		}
		if j.Delay > d.Bound {
			d.OverBound++
		}
	}
	d.Matched = len(all)
	d.Delay = stats.Summarize(xs)
	d.Worst = all[:min(len(all), 5)]
	return d
}

// Handovers finds the batch jobs of the timeline that took a node from a
// pilot: on one of its nodes, the last pilot to end before the job
// started ended after the job's submission (submitted: by name), and no
// other batch job ran on that node in between. It returns the count of
// such pilots per job and, per pilot, the seconds from the job's
// submission to the pilot's end (how long the job waited for the pilot
// to go) and from the pilot's end to the job's start.
func Handovers(t *Timeline, submitted map[string]time.Time) (pilots map[string]int, waited, gap []float64) {
	pilotsOn, batchOn := map[string][]*JobRecord{}, map[string][]*JobRecord{}
	for _, p := range t.Pilots {
		if p.Ended && p.Ran() {
			for _, n := range p.Nodes {
				pilotsOn[n] = append(pilotsOn[n], p)
			}
		}
	}
	for _, b := range t.Batch {
		if b.Ran() {
			for _, n := range b.Nodes {
				batchOn[n] = append(batchOn[n], b)
			}
		}
	}
	// Slurm's times are whole seconds: a second of slack.
	const slack = time.Second
	pilots = map[string]int{}
	for name, j := range t.Batch {
		sub, ok := submitted[name]
		if !j.Ran() || !ok {
			continue
		}
		for _, n := range j.Nodes {
			var last *JobRecord
			for _, p := range pilotsOn[n] {
				if !p.End.After(j.Start.Add(slack)) && (last == nil || p.End.After(last.End)) {
					last = p
				}
			}
			if last == nil || last.End.Before(sub.Add(-slack)) {
				continue
			}
			between := false
			for _, b := range batchOn[n] {
				if b != j && b.Start.After(last.End) && b.Start.Before(j.Start) {
					between = true
				}
			}
			if between {
				continue
			}
			pilots[name]++
			waited = append(waited, max(last.End.Sub(sub).Seconds(), 0))
			gap = append(gap, max(j.Start.Sub(last.End).Seconds(), 0))
		}
	}
	return pilots, waited, gap
}
