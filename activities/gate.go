package activities

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// nodeGate keeps one trainer at a time on a node of this process. A
// pipelined inline campaign (workflows/campaign_pipeline.go) schedules a
// trial's run on nodes whose current run still trains; that run's
// RunTrial waits here, with its launch prepared, and its trainer starts
// the moment the trainer before it has exited and all it started are
// gone: no round trip through the server between the two.
//
// Every local run holds its nodes from its launch until its trainer is
// done; only inline runs (RunTrialInput.Quiet) wait for them. A trial
// workflow's run never waits: its workflow launches it on nodes the pool
// gave it, after the run before it on them was confirmed stopped.
type nodeGate struct {
	mu   sync.Mutex
	held map[string]int
	// freed is closed (and replaced) whenever nodes are released or an
	// inline run takes its nodes (a run queued behind it may go next).
	freed chan struct{}
	// freedAt is when each node's last run released it, stopped whether
	// that run was being stopped; idle the latest idle times (NodeIdle),
	// at most maxIdleKept.
	freedAt map[string]time.Time
	stopped map[string]bool
	idle    []float64
	idleN   int
	// had holds the runs (workflows.RunRef) that took their nodes here and
	// whose successor has not come yet, oldest first in hadOrder, at most
	// maxHadKept.
	had      map[string]bool
	hadOrder []string
	// firstTaken is when each node was first taken; lastFreed when a
	// node was last released (NodeSpan).
	firstTaken map[string]time.Time
	lastFreed  time.Time
	// grace replaces afterGrace when set (tests).
	grace time.Duration
}

// maxIdleKept bounds the idle times a gate keeps.
const maxIdleKept = 1 << 16

// maxHadKept bounds the runs a gate remembers for their successors.
const maxHadKept = 1 << 12

// afterGrace is how long a queued run waits for the run it is queued
// behind to reach this worker before it takes free nodes regardless (that
// run went to another worker of the same queue, or its retry is late).
const afterGrace = 30 * time.Second

// gateRun is one run asking the gate for its nodes.
type gateRun struct {
	nodes []string
	// wait: wait for the nodes (an inline run); otherwise take them.
	wait bool
	// self and after are this run's workflows.RunRef and the one it is
	// queued behind ("" for none): a run queued behind another does not
	// overtake it, even if the server hands it over first.
	self, after string
}

// acquire holds nodes, first waiting until no run of this process holds
// any of them when wait is set, calling beat every interval meanwhile.
// afterStop says whether it waited for a run that was being stopped (its
// activity cancelled): in a pipelined campaign the run queued behind a
// stopped one is being stopped too, and its caller asks the server before
// it launches. The release function frees the nodes once (later calls do
// nothing); stopped says the run was being stopped.
func (g *nodeGate) acquire(ctx context.Context, run gateRun, interval time.Duration, beat func()) (release func(stopped bool), afterStop bool, _ error) {
	nodes := run.nodes
	var ticker *time.Ticker
	waited := false
	grace := afterGrace
	if g.grace > 0 {
		grace = g.grace
	}
	graceEnds := time.Now().Add(grace)
	for {
		g.mu.Lock()
		if g.held == nil {
			g.held, g.freed = map[string]int{}, make(chan struct{})
			g.freedAt, g.stopped = map[string]time.Time{}, map[string]bool{}
			g.had, g.firstTaken = map[string]bool{}, map[string]time.Time{}
		}
		if waited && ctx.Err() != nil {
			// Freed and cancelled at once: the select below may have
			// picked either; a cancelled run never takes the nodes.
			g.remember(run)
			g.mu.Unlock()
			return nil, false, ctx.Err()
		}
		busy := slices.ContainsFunc(nodes, func(n string) bool { return g.held[n] > 0 })
		ahead := run.after != "" && !g.had[run.after] && time.Now().Before(graceEnds)
		if !run.wait || !busy && !ahead {
			g.remember(run)
			var last time.Time
			now := time.Now()
			for _, n := range nodes {
				g.held[n]++
				if _, ok := g.firstTaken[n]; !ok && len(g.firstTaken) < maxHadKept {
					g.firstTaken[n] = now
				}
				if t := g.freedAt[n]; t.After(last) {
					last = t
				}
				afterStop = afterStop || (waited && g.stopped[n])
			}
			if !last.IsZero() {
				g.noteIdle(now.Sub(last).Seconds())
			}
			g.mu.Unlock()
			if ticker != nil {
				ticker.Stop()
			}
			var once sync.Once
			return func(stopped bool) { once.Do(func() { g.release(nodes, stopped) }) }, afterStop, nil
		}
		freed := g.freed
		g.mu.Unlock()
		if ticker == nil {
			ticker = time.NewTicker(interval)
			defer ticker.Stop()
		}
		waited = true
		select {
		case <-freed:
		case <-ctx.Done():
			g.mu.Lock()
			g.remember(run)
			g.mu.Unlock()
			return nil, false, ctx.Err()
		case <-ticker.C:
			beat()
		}
	}
}

// remember notes that run took its nodes, or was cancelled waiting for
// them, for the run queued behind it (which may go next), and forgets the
// run it was queued behind; g.mu is held.
func (g *nodeGate) remember(run gateRun) {
	delete(g.had, run.after)
	if run.self == "" || !run.wait {
		return
	}
	g.had[run.self] = true
	g.hadOrder = append(g.hadOrder, run.self)
	close(g.freed) // wake the run queued behind it
	g.freed = make(chan struct{})
	for len(g.hadOrder) > maxHadKept {
		delete(g.had, g.hadOrder[0])
		g.hadOrder = g.hadOrder[1:]
	}
	if len(g.had) == 0 {
		g.hadOrder = g.hadOrder[:0]
	}
}

func (g *nodeGate) release(nodes []string, stopped bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for _, n := range nodes {
		if g.held[n]--; g.held[n] <= 0 {
			delete(g.held, n)
		}
		g.freedAt[n], g.stopped[n] = now, stopped
	}
	g.lastFreed = now
	close(g.freed)
	g.freed = make(chan struct{})
}

func (g *nodeGate) noteIdle(s float64) {
	if len(g.idle) < maxIdleKept {
		g.idle = append(g.idle, s)
	} else {
		g.idle[g.idleN%maxIdleKept] = s
	}
	g.idleN++
}

// NodeIdle returns how long nodes of this process sat idle between one
// run's trainer ending (all it started gone) and the next run's launch on
// them, in seconds, for up to the latest 65,536 launches on a node that
// had run a trainer before: the orchestration's gap between two trials.
func (a *Activities) NodeIdle() []float64 {
	a.gate.mu.Lock()
	defer a.gate.mu.Unlock()
	return slices.Clone(a.gate.idle)
}

// NodeSpan returns when each node of this process (up to 4,096) was first
// taken by a run and when a run last released its nodes: with the moment
// a campaign was submitted and closed, how long it took to fill the nodes
// and how long it ran on after its last trainer.
func (a *Activities) NodeSpan() (firstTaken map[string]time.Time, lastFreed time.Time) {
	a.gate.mu.Lock()
	defer a.gate.mu.Unlock()
	return maps.Clone(a.gate.firstTaken), a.gate.lastFreed
}
