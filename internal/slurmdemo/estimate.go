package slurmdemo

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Phase is one step of a run and how long it is expected to take.
type Phase struct {
	Name string
	Took time.Duration
}

// Estimate is how long a run is expected to take, phase by phase,
// computed from its plan and settings before it starts (EstimateRun). A
// pass's length is the plan's own: its jobs run first-come first-served
// on the cluster's nodes (PassLength); the steps around the passes are
// allowances for what this machine does between them.
type Estimate []Phase

// Allowances for the steps around the passes, as seen on a loaded 2-core
// machine: the cluster script waits until every node is idle (tens of
// seconds when the machine is busy), a restart stops and starts it, and
// the live pass starts a dev server and a worker first, and then stops the
// worker (the trainers' grace period), counts and cancels what is left,
// runs the simulator and stops the cluster.
const (
	clusterStartAllowance = 20 * time.Second
	restartAllowance      = 25 * time.Second
	liveStartAllowance    = 10 * time.Second
	teardownAllowance     = 15 * time.Second
	// warmupAllowance is the usual time the trials take to hold every
	// node (the warm-up may last up to Settings.Warmup).
	warmupAllowance = 30 * time.Second
)

// EstimateRun is how long a run of s on plan is expected to take, phase by
// phase, in the order Run goes through them. It is a forecast: the passes
// end when the last job does, which Slurm's backfill brings forward and a
// loaded machine pushes back.
func EstimateRun(plan Plan, s Settings) Estimate {
	pass := PassLength(plan, s.Duration)
	var e Estimate
	add := func(name string, d time.Duration) { e = append(e, Phase{name, d}) }
	// A PBS cluster is started (or found running) and drained between
	// passes, never restarted.
	if s.SlurmConf == "" {
		add("cluster start", clusterStartAllowance)
	}
	restart := func() {
		if s.SlurmConf == "" && s.PBS == nil {
			add("cluster restart", restartAllowance)
		}
	}
	if s.BaselineFrom == "" && s.Baseline {
		add("baseline pass", pass)
		restart()
		if s.Control {
			add("control pass", pass)
			restart()
		}
	}
	warm := warmupAllowance
	if s.Warmup > 0 {
		warm = min(warm, s.Warmup)
	}
	add("Gleaner start-up and warm-up", liveStartAllowance+warm)
	add("live pass", pass)
	add("teardown and measurements", teardownAllowance+s.Campaign.Grace)
	return e
}

// Total is the whole run's expected length.
func (e Estimate) Total() time.Duration {
	var t time.Duration
	for _, p := range e {
		t += p.Took
	}
	return t
}

// Left is the time expected to be left when phase i has run for elapsed:
// what is left of it (nothing once it has overrun) and the phases after it.
func (e Estimate) Left(i int, elapsed time.Duration) time.Duration {
	if i < 0 || i >= len(e) {
		return 0
	}
	left := max(e[i].Took-elapsed, 0)
	for _, p := range e[i+1:] {
		left += p.Took
	}
	return left
}

// Index is the first phase named name at or after from, or -1.
func (e Estimate) Index(name string, from int) int {
	for i := max(from, 0); i < len(e); i++ {
		if e[i].Name == name {
			return i
		}
	}
	return -1
}

// String is the estimate for people: "about 33 min (cluster start 20 s,
// baseline pass 15 min, …)".
func (e Estimate) String() string {
	parts := make([]string, len(e))
	for i, p := range e {
		parts[i] = p.Name + " " + About(p.Took)
	}
	return fmt.Sprintf("about %s (%s)", About(e.Total()), strings.Join(parts, ", "))
}

// About is a duration as a person estimates it: "40 s", "4 min", "1 h 12 min".
func About(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
	m := int(d.Round(time.Minute) / time.Minute)
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

// PassLength is how long one pass of plan is expected to run: until its
// last job ends when each runs, in submission order, on the first nodes
// free at or after its submission (first come, first served: Slurm's
// backfill starts some jobs sooner, so this errs long), each a second
// after its submission at the soonest (Slurm's scheduling pass), capped as the pass is (limit, or the
// window's span, its longest run and 10 minutes when limit is 0).
func PassLength(plan Plan, limit time.Duration) time.Duration {
	if limit <= 0 {
		limit = plan.Span + plan.LongestRun + 10*time.Minute
	}
	nodes := plan.Settings.ClusterNodes
	if nodes < 1 {
		return limit
	}
	free := make([]time.Duration, nodes) // when each node is next free
	var last, end time.Duration          // the last start (FCFS: in order), the last end
	for _, j := range plan.Jobs {
		slices.Sort(free)
		n := min(max(j.Nodes, 1), nodes)
		start := max(j.At+time.Second, last, free[n-1])
		for k := range n {
			free[k] = start + j.Run
		}
		last = start
		end = max(end, start+j.Run)
	}
	return min(end, limit)
}
