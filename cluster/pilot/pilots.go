package pilot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Status is what one round of looking after the pilots found and did.
type Status struct {
	At        time.Time
	Demand    Demand
	Running   []Job // their nodes are (or are joining) the pool
	Pending   []Job
	Submitted []string // job ids
	Cancelled []string // job ids
	// Yielded are the running pilots told to leave this round because a
	// queued job or a reservation claims their node (Settings.Yield).
	Yielded   []string // job ids
	Estimates map[string]Estimate
}

// Pilots keeps a pool supplied with pilot jobs of one scheduler (see the
// package doc).
type Pilots struct {
	set   Settings
	lim   Limits
	sched Scheduler
	pool  Pool
	logf  func(format string, args ...any)
	// name prefixes messages: the scheduler's name.
	name string
	// sent is the last estimate map the pool accepted.
	sent map[string]time.Time
	// lastNeeded is when a trial last needed nodes.
	lastNeeded time.Time
	warned     map[string]bool
	// yielded are the pilots told to leave, so each is told once.
	yielded map[string]bool
}

// New fills in set's defaults from what the scheduler found (lim) and
// checks them. logf prints progress and warnings (nil: none).
func New(set Settings, lim Limits, sched Scheduler, pool Pool, logf func(string, ...any)) (*Pilots, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	name := sched.Name()
	set, err := set.withDefaults(lim, func(format string, args ...any) { logf(name+": "+format, args...) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Pilots{set: set, lim: lim, sched: sched, pool: pool, logf: logf, name: name,
		warned: map[string]bool{}, yielded: map[string]bool{}}, nil
}

// Settings are the settings in use, defaults filled in.
func (p *Pilots) Settings() Settings { return p.set }

// StopTimeout is how long a pilot's agent may take to leave: the
// scheduler's grace (or the time-limit lead, when shorter or the grace is
// zero) less a fifth, for the agent itself.
func (p *Pilots) StopTimeout() time.Duration {
	budget := p.lim.Grace
	if budget == 0 || p.set.Lead < budget {
		budget = p.set.Lead
	}
	return max(budget-budget/5, time.Second)
}

// Request is what each pilot asks of the scheduler.
func (p *Pilots) Request() Request {
	s := p.set
	agent := append([]string{"--pool", s.Pool, "--stop-timeout", p.StopTimeout().String()}, s.AgentArgs...)
	return Request{Nodes: 1, Time: s.TimeLimit, TimeMin: s.TimeMin, Lead: s.Lead, GPUs: s.GPUs, Agent: agent, Env: s.AgentEnv}
}

// Step looks after the pilots once: it reads the pool's demand and the
// pilots, submits pilots up to MaxPending waiting while trials want more
// nodes, cancels waiting ones nobody wants (and running ones after
// IdleRelease without trials), sends the pool fresh idle-time estimates
// of the running pilots' nodes, and tells the pilots whose node is
// claimed within Yield to leave.
func (p *Pilots) Step(ctx context.Context) (Status, error) {
	now := p.set.Now()
	st := Status{At: now}
	d, err := p.pool.Demand(ctx)
	if err != nil {
		return st, fmt.Errorf("%s: pool %s's demand: %w", p.name, p.set.Pool, err)
	}
	st.Demand = d
	if d.MaxGrace > 0 && p.lim.Grace > 0 && d.MaxGrace > p.StopTimeout() && !p.warned["grace"] {
		p.warned["grace"] = true
		p.logf("%s: warning: a trial's grace_period %v does not fit %s %v (a pilot's agent has %v to leave): a preempted trainer is killed before it checkpoints; shorten grace_period or raise %s",
			p.name, d.MaxGrace, p.lim.GraceSetting, p.lim.Grace, p.StopTimeout(), p.lim.GraceSetting)
	}
	jobs, err := p.sched.Pilots(ctx)
	if err != nil {
		return st, fmt.Errorf("%s: listing pilots: %w", p.name, err)
	}
	for _, j := range jobs {
		switch j.State {
		case Pending:
			st.Pending = append(st.Pending, j)
		case Running:
			st.Running = append(st.Running, j)
		}
	}
	if d.Trials > 0 {
		p.lastNeeded = now
	}
	if cancel := p.unneeded(now, d, st); len(cancel) > 0 {
		if err := p.sched.Cancel(ctx, cancel); err != nil {
			return st, fmt.Errorf("%s: cancelling pilots nobody needs: %w", p.name, err)
		}
		st.Cancelled = cancel
	}
	if d.Trials > 0 {
		n := min(d.beyond(st.Running)-len(st.Pending), p.set.MaxPending-len(st.Pending), p.set.MaxPilots-len(st.Pending)-len(st.Running))
		for range max(n, 0) {
			id, err := p.sched.Submit(ctx, p.Request())
			if err != nil {
				return st, fmt.Errorf("%s: submitting a pilot: %w", p.name, err)
			}
			st.Submitted = append(st.Submitted, id)
		}
	}
	if err := p.estimate(ctx, now, &st); err != nil {
		return st, err
	}
	if err := p.yield(ctx, now, &st); err != nil {
		return st, err
	}
	return st, nil
}

// unneeded are the pilots to cancel: every waiting one when no trial is
// registered, and the running ones too once IdleRelease has passed since
// a trial last was; otherwise the waiting ones beyond what the trials
// want, the newest first (the oldest are the nearest to starting).
func (p *Pilots) unneeded(now time.Time, d Demand, st Status) []string {
	var cancel []string
	switch {
	case d.Trials == 0:
		for _, j := range st.Pending {
			cancel = append(cancel, j.ID)
		}
		if !p.lastNeeded.IsZero() && now.Sub(p.lastNeeded) >= p.set.IdleRelease {
			for _, j := range st.Running {
				cancel = append(cancel, j.ID)
			}
		}
	case len(st.Pending) > d.beyond(st.Running):
		extra := slices.Clone(st.Pending[d.beyond(st.Running):])
		slices.SortFunc(extra, func(a, b Job) int { return strings.Compare(b.ID, a.ID) })
		for _, j := range extra {
			cancel = append(cancel, j.ID)
		}
	}
	return cancel
}

// yield tells the running pilots whose node a queued job or a reservation
// claims within Settings.Yield to leave now: each agent gets the SIGTERM
// of a preemption (Scheduler.Signal), leaves the pool and ends its job,
// and the batch job starts without waiting for the scheduler to preempt
// the pilot. A pilot is told once; one that does not leave is preempted
// by the scheduler as before.
func (p *Pilots) yield(ctx context.Context, now time.Time, st *Status) error {
	running := map[string]bool{}
	for _, j := range st.Running {
		running[j.ID] = true
	}
	for id := range p.yielded {
		if !running[id] {
			delete(p.yielded, id)
		}
	}
	if p.set.Yield < 0 {
		return nil
	}
	var ids []string
	for _, j := range st.Running {
		if p.yielded[j.ID] {
			continue
		}
		for _, node := range j.Nodes {
			if e := st.Estimates[node]; e.Claimed && !e.Until.After(now.Add(p.set.Yield)) {
				ids = append(ids, j.ID)
				p.logf("%s: pilot %s yields node %s to %s, planned at %s", p.name, j.ID, node, e.Why, e.Until.In(p.set.Location).Format("15:04:05"))
				break
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := p.sched.Signal(ctx, syscall.SIGTERM, ids); err != nil {
		return fmt.Errorf("%s: telling pilots %s to yield their nodes: %w", p.name, strings.Join(ids, " "), err)
	}
	for _, id := range ids {
		p.yielded[id] = true
	}
	st.Yielded = ids
	return nil
}

// estimate reads the scheduler's plan and sends the pool each running
// pilot's node's expected idle end, when it changed.
func (p *Pilots) estimate(ctx context.Context, now time.Time, st *Status) error {
	st.Estimates = map[string]Estimate{}
	until := map[string]time.Time{}
	if len(st.Running) > 0 {
		claims, err := p.sched.Plan(ctx)
		if err != nil {
			return fmt.Errorf("%s: reading the plan: %w", p.name, err)
		}
		for _, j := range st.Running {
			for _, node := range j.Nodes {
				e := IdleUntil(node, now, j.End, claims)
				st.Estimates[node] = e
				if !e.Until.IsZero() {
					until[node] = e.Until
				}
			}
		}
	}
	if p.sent != nil && maps.EqualFunc(p.sent, until, time.Time.Equal) {
		return nil
	}
	if err := p.pool.SetIdleUntil(ctx, until); err != nil {
		return fmt.Errorf("%s: sending idle-time estimates to pool %s: %w", p.name, p.set.Pool, err)
	}
	p.sent = until
	return nil
}

// ShutdownTimeout bounds Run's Shutdown: the scheduler's cancel commands,
// retried, and a last look at what is left.
const ShutdownTimeout = 30 * time.Second

// Run looks after the pilots every Interval until ctx ends, then cancels
// every pilot of the pool (Shutdown) in a context of its own, not derived
// from ctx (already done), bounded by ShutdownTimeout. A failed round is
// logged and tried again at the next. report, if not nil, gets each
// round's Status.
func (p *Pilots) Run(ctx context.Context, report func(Status, error)) error {
	t := time.NewTicker(p.set.Interval)
	defer t.Stop()
	for {
		st, err := p.Step(ctx)
		if err != nil && ctx.Err() == nil {
			p.logf("%v (trying again in %v)", err, p.set.Interval)
		}
		if report != nil {
			report(st, err)
		}
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
			defer cancel()
			return p.Shutdown(sctx)
		case <-t.C:
		}
	}
}

// shutdownRetry is the first wait between two tries of CancelAll; it
// doubles up to a few seconds.
const shutdownRetry = 250 * time.Millisecond

// Shutdown cancels every pilot of the pool, running or pending: their
// agents get SIGTERM and leave the pool, their trainers checkpoint. It
// cancels them by name (CancelAll: one submitted but not yet listed goes
// too), tries again while the scheduler fails, until ctx ends, and then
// lists the pilots: any still waiting or running is cancelled by id once
// more. It fails only when pilots may be left, saying which.
func (p *Pilots) Shutdown(ctx context.Context) error {
	wait := shutdownRetry
	var err error
	for try := 1; ; try++ {
		if err = p.sched.CancelAll(ctx); err == nil {
			break
		}
		p.logf("%s: cancelling pool %s's pilots (try %d): %v", p.name, p.set.Pool, try, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: cancelling pool %s's pilots: gave up after %d tries: %w; cancel them by hand (their job name is the pool's)", p.name, p.set.Pool, try, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 4*time.Second)
	}
	jobs, err := p.sched.Pilots(ctx)
	if err != nil {
		// Cancelled by name already: nothing is known to be left.
		p.logf("%s: cancelled pool %s's pilots (listing them afterwards: %v)", p.name, p.set.Pool, err)
		return nil
	}
	var left []string
	for _, j := range jobs {
		if j.State == Pending || j.State == Running {
			left = append(left, j.ID)
		}
	}
	if len(left) > 0 {
		if err := p.sched.Cancel(ctx, left); err != nil {
			return fmt.Errorf("%s: pool %s's pilots %s still listed after cancelling them all: %w", p.name, p.set.Pool, strings.Join(left, " "), err)
		}
	}
	p.logf("%s: cancelled pool %s's pilots", p.name, p.set.Pool)
	return nil
}
