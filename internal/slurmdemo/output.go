package slurmdemo

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Print writes the result for people.
func (r *Result) Print(w io.Writer) {
	p := r.Plan
	offset := p.Offset
	if d, err := time.ParseDuration(p.Offset); err == nil {
		offset = TraceTime(d)
	}
	switch {
	case r.PBS != nil:
		fmt.Fprintf(w, "\n== PBS live harvest: %d jobs of %s from trace offset %s, %.0f× faster, on %d vnodes (PBS %s, queue %s kill_delay %.0fs, scheduler_iteration %.0fs, preempt_order %s)\n",
			p.Jobs, filepath.Base(p.SWF), offset, p.Compression, p.Nodes, r.PBS.Version, r.PBS.Queue, r.PBS.KillDelayS, r.PBS.SchedulerIterationS, r.PBS.PreemptOrder)
	default:
		sl := r.Slurm
		if sl == nil {
			sl = &SlurmSummary{}
		}
		fmt.Fprintf(w, "\n== Slurm live harvest: %d jobs of %s from trace offset %s, %.0f× faster, on %d nodes (Slurm %s, GraceTime %.0fs, KillWait %.0fs, bf_interval %.0fs, preempt_send_user_signal %s)\n",
			p.Jobs, filepath.Base(p.SWF), offset, p.Compression, p.Nodes, sl.Version, sl.GraceS, sl.KillWaitS, sl.BFInterval, onOff(sl.SignalUser))
	}
	fmt.Fprintf(w, "window: submitted over %s, offered load %.2f (%.2f on the logged machine); sizes: %s\n",
		secs(p.SpanS), p.Load, p.TraceLoad, SizesText(p.Sizes))
	if b := r.Baseline; b != nil {
		fmt.Fprintf(w, "baseline pass: %d/%d jobs ran in %s; idle %.1f%% of node-seconds\n",
			b.Batch.Started, b.Batch.Planned, secs(b.Seconds), 100*ratio(b.NodeSeconds.Idle, b.NodeSeconds.Total))
	}
	if c := r.Control; c != nil {
		fmt.Fprintf(w, "control pass (again without Gleaner): %d/%d jobs ran in %s; idle %.1f%% of node-seconds\n",
			c.Batch.Started, c.Batch.Planned, secs(c.Seconds), 100*ratio(c.NodeSeconds.Idle, c.NodeSeconds.Total))
	}
	if l := r.Live; l != nil {
		ns := l.NodeSeconds
		fmt.Fprintf(w, "live pass: %d/%d jobs ran in %s", l.Batch.Started, l.Batch.Planned, secs(l.Seconds))
		if l.CutShort {
			fmt.Fprint(w, " (cut short)")
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  node-seconds: batch %.0f, idle %.0f (%.1f%%) = trial %.0f + pilot without trial %.0f + free %.0f\n",
			ns.Batch, ns.Idle, 100*ratio(ns.Idle, ns.Total), ns.Trial, ns.Pilot, ns.Free)
		fmt.Fprintf(w, "  harvest (trial ÷ idle node-seconds): %.3f\n", l.Harvest)
		fmt.Fprintf(w, "  pilots: %d submitted, %d started, %d preempted (%d of them yielding to the plan); %s\n",
			l.Pilots.Submitted, l.Pilots.Started, l.Pilots.Preempted, l.Pilots.Yielded, pilotsLeftText(l.PilotsLeft, l.PilotsCancelled, r.cancelCommand()))
		fmt.Fprintf(w, "  handovers: %d batch jobs took the nodes of %d pilots; submission → pilot end p50 %.1fs, p95 %.1fs, max %.1fs; pilot end → batch start p50 %.1fs, max %.1fs\n",
			l.Handovers, l.HandoverPilots, l.HandoverWait.P50, l.HandoverWait.P95, l.HandoverWait.Max, l.HandoverGap.P50, l.HandoverGap.Max)
		c := l.Churn
		fmt.Fprintf(w, "  churn: %d holes; idle→pilot p50 %.1fs p95 %.1fs; idle→trial p50 %.1fs p95 %.1fs; %d holes no pilot reached (p50 length %.1fs)\n",
			c.Holes, c.IdleToPilot.P50, c.IdleToPilot.P95, c.IdleToTrial.P50, c.IdleToTrial.P95, c.Missed, c.MissedLength.P50)
	}
	if t := r.Trials; t != nil {
		a := t.Audit
		fmt.Fprintf(w, "  trials: %d completed, %d failed, %d stopped (campaign); trial workflows: %s\n", t.Completed, t.Failed, t.Stopped, CountsText(t.States))
		fmt.Fprintf(w, "  trials lost: %d, completed twice: %d (audit of %d runs of %d trials: %d finished, %d finished twice, %d overlapping, %d regressed; %d relaunched after finishing, training nothing)\n",
			t.Lost, t.CompletedTwice, a.Runs, a.Started, a.Finished, a.FinishedTwice, a.Overlapping, a.Regressed, a.RelaunchedDone)
		fmt.Fprintf(w, "  training lost per stop: mean %.0f, p95 %.0f, max %.0f samples over %d stops (%d lost any); checkpoint interval %.0f samples; %d runs SIGKILLed, %d restarts\n",
			a.LostPerStop.Mean, a.LostPerStop.P95, a.LostPerStop.Max, a.LostPerStop.N, a.LostStops, a.CheckpointEvery, t.Killed, t.Restarts)
	}
	bound := "GraceTime + bf_interval"
	if r.PBS != nil {
		bound = "kill_delay + scheduler_iteration"
	}
	for _, x := range []struct {
		what string
		d    *Delays
	}{{"batch delay (live − baseline start", r.Delays}, {"control (control − baseline start, no Gleaner in either", r.ControlDelays}} {
		if d := x.d; d != nil {
			fmt.Fprintf(w, "  %s, %d jobs): mean %.2fs, p50 %.2fs, p95 %.2fs, max %.2fs; %d over %s (%.0fs); %d later, %d earlier by > 1 s\n",
				x.what, d.Matched, d.Delay.Mean, d.Delay.P50, d.Delay.P95, d.Delay.Max, d.OverBound, bound, d.Bound, d.Later, d.Earlier)
		}
	}
	if s := r.Sim; s != nil {
		fmt.Fprintf(w, "  simulator, same idle events, %d jobs of %.0f samples at %.1f samples/s: harvest %.3f (holes %.1fs later: %.3f) vs live %.3f; efficiency %.3f (%.3f) vs live %.3f\n",
			s.Workload.Jobs, s.Workload.Samples, s.Workload.Rate, s.Raw.Harvest, s.LagS, s.Lagged.Harvest, s.LiveHarvest,
			s.Raw.Efficiency, s.Lagged.Efficiency, s.LiveEfficiency)
		fmt.Fprintf(w, "  queue gaps (a node idle while the batch job that takes it next was already queued): %d, %.0f node-s; on the other %.0f idle node-s the simulator (holes %.1fs later) predicts %.3f, live %.3f\n",
			s.QueueGaps, s.QueueGapNodeS, s.OfferedNodeS, s.LagS, s.Offered.Harvest, s.LiveOfferedHarvest)
		if s.Raw.Error != "" {
			fmt.Fprintf(w, "  simulator: %s\n", s.Raw.Error)
		}
	}
	if len(r.Leftovers) == 0 {
		fmt.Fprintln(w, "leftover processes: none")
	} else {
		fmt.Fprintf(w, "leftover processes: %d\n", len(r.Leftovers))
		for _, l := range r.Leftovers {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintf(w, "result: %s", r.Files.Result)
	if r.Files.IdleEvents != "" {
		fmt.Fprintf(w, "; idle events: %s", r.Files.IdleEvents)
	}
	fmt.Fprintln(w)
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// SizesText is the jobs by size for people, smallest first: "196 jobs of
// 1 node, 16 of 2 nodes, 1 of 4 nodes".
func SizesText(sizes map[int]int) string {
	if len(sizes) == 0 {
		return "no jobs"
	}
	parts := make([]string, 0, len(sizes))
	for i, n := range slices.Sorted(maps.Keys(sizes)) {
		c, jobs := sizes[n], " "
		if i == 0 {
			jobs = plural(c, " job ", " jobs ")
		}
		parts = append(parts, fmt.Sprintf("%d%sof %d %s", c, jobs, n, plural(n, "node", "nodes")))
	}
	return strings.Join(parts, ", ")
}

// CountsText is counts by name for people, the largest first (ties by
// name): "completed 40, running 2".
func CountsText(counts map[string]int) string {
	if len(counts) == 0 {
		return "none"
	}
	names := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, counts[n])
	}
	return strings.Join(parts, ", ")
}

// TraceTime is a span of trace time for people: "179 d 17 h", "2 h 30 min",
// "45 s".
func TraceTime(d time.Duration) string {
	d = d.Round(time.Second)
	if d <= 0 {
		return "0 s"
	}
	var parts []string
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, u.name))
			d -= n * u.d
		}
	}
	return strings.Join(parts, " ")
}

// cancelCommand is the command the demo cancels pilots with.
func (r *Result) cancelCommand() string {
	if r.PBS != nil {
		return "qdel"
	}
	return "scancel"
}

// pilotsLeftText is the pilots the worker left, and whether the demo
// cancelled them (with cancel: scancel, qdel).
func pilotsLeftText(left, cancelled int, cancel string) string {
	s := fmt.Sprintf("%d left after the worker stopped", left)
	switch {
	case left < 0:
		s = "pilots left after the worker stopped not counted"
	case left == 0:
		return s
	}
	if cancelled != 0 {
		return s + ", cancelled by the demo (" + cancel + " by their job name)"
	}
	return s + ", not cancelled"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
