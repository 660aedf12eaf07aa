package workflows

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

// Pool defaults; PoolInput fields left at zero take these.
const (
	DefaultPollInterval         = 5 * time.Second
	DefaultAllocatePeriod       = 30 * time.Second
	DefaultDebounce             = 500 * time.Millisecond
	DefaultLookahead            = 5 * time.Minute
	DefaultPoolHistoryThreshold = 10_000
	DefaultReleaseTimeout       = 2 * time.Minute
	// ReleaseMargin is added to a trial's grace period when the pool waits
	// for it to leave a node: the stop must reach the worker (a heartbeat)
	// and the confirmation come back.
	ReleaseMargin                = 30 * time.Second
	defaultLocalActivityDeadline = time.Minute
	// DefaultAgentTimeout is how long an agent may go without a lease
	// heartbeat before the pool counts it lost and its nodes preempted.
	DefaultAgentTimeout = 10 * time.Second
	// AgentLeaseRenew is how long one lease activity runs before the
	// agent ends it and the pool starts the next (bounded activities).
	AgentLeaseRenew = time.Hour
)

// PoolInput starts (or continues) a PoolWorkflow.
type PoolInput struct {
	Name string `json:"name"`
	// PollInterval is how often the node source is asked which nodes are
	// idle (also on SignalPollNow).
	PollInterval time.Duration `json:"poll_interval,omitempty"`
	// AllocatePeriod is the longest time between two allocations, so new
	// throughput measurements are used even when no node event happens.
	AllocatePeriod time.Duration `json:"allocate_period,omitempty"`
	// Debounce is how long after an event the pool waits for more events
	// before it allocates.
	Debounce time.Duration `json:"debounce,omitempty"`
	// Lookahead is the allocator's T_fwd.
	Lookahead time.Duration `json:"lookahead,omitempty"`
	// Formulation is the allocator formulation ("" = compact).
	Formulation string `json:"formulation,omitempty"`
	// HistoryThreshold is the history length at which the pool continues
	// as new.
	HistoryThreshold int `json:"history_threshold,omitempty"`
	// ReleaseTimeout is the shortest time a node taken from one trial is
	// held back from another while the first has not confirmed its trainer
	// left it (a lost worker, a stuck trainer); a trial whose grace period
	// plus ReleaseMargin is longer holds its nodes that long.
	ReleaseTimeout time.Duration `json:"release_timeout,omitempty"`
	// AgentTimeout bounds how long an agent that died silently (SIGKILL,
	// a lost host) keeps its nodes: its lease's heartbeat timeout, also
	// the time an agent has to pick its lease up.
	AgentTimeout time.Duration `json:"agent_timeout,omitempty"`
	// LogChunk is how many log entries the pool keeps pending at most
	// before it keeps them in a PoolRecords chunk (0: gleaner.PoolLogChunk);
	// it keeps them sooner past gleaner.PoolLogBytes of JSON.
	LogChunk int `json:"log_chunk,omitempty"`
	// State is the pool's state carried over continue-as-new.
	State *PoolState `json:"state,omitempty"`
}

func (in PoolInput) withDefaults() PoolInput {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&in.PollInterval, DefaultPollInterval)
	set(&in.AllocatePeriod, DefaultAllocatePeriod)
	set(&in.Debounce, DefaultDebounce)
	set(&in.Lookahead, DefaultLookahead)
	set(&in.ReleaseTimeout, DefaultReleaseTimeout)
	set(&in.AgentTimeout, DefaultAgentTimeout)
	if in.HistoryThreshold <= 0 {
		in.HistoryThreshold = DefaultPoolHistoryThreshold
	}
	if in.LogChunk <= 0 {
		in.LogChunk = gleaner.PoolLogChunk
	}
	return in
}

// AgentLeaseResult ends a lease: Renew when it ran AgentLeaseRenew and
// the agent is still there; else the agent left.
type AgentLeaseResult struct {
	Renew bool `json:"renew,omitempty"`
}

// releaseHold is how long a node taken from r's trial is held for it.
func (in PoolInput) releaseHold(r RegisterTrial) time.Duration {
	return max(in.ReleaseTimeout, r.GracePeriod+ReleaseMargin)
}

func (p *pool) releaseDeadline(r Releasing) time.Time {
	if r.Until.IsZero() {
		return r.Since.Add(p.in.ReleaseTimeout)
	}
	return r.Until
}

// PoolWorkflow owns one pool of idle nodes: it polls its node source,
// keeps the registered trials and their measured throughput, runs the
// Allocate activity after node and trial events (debounced) and every
// AllocatePeriod, and signals each trial whose nodes changed. It never
// ends by itself; it continues as new before its history grows large.
func PoolWorkflow(ctx workflow.Context, in PoolInput) error {
	if in.Name == "" {
		return temporal.NewNonRetryableApplicationError("pool: name: empty", "InvalidPool", nil)
	}
	in = in.withDefaults()
	p := &pool{in: in}
	if in.State != nil {
		p.st = *in.State
	}
	p.in.State = nil
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (PoolStatus, error) {
		st := p.st
		st.Library = nil
		st.Log, st.LogStart, st.Departed = nil, PoolSnapshot{}, nil
		return PoolStatus{Name: in.Name, PoolState: st, LibraryCurves: len(p.st.Library)}, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryLibrary, func() (PoolLibrary, error) {
		return PoolLibrary{Name: in.Name, Curves: slices.Clone(p.st.Library)}, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryPoolLog, func() (PoolLog, error) {
		return p.poolLog(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryDemand, func() (PoolDemand, error) {
		return p.st.Demand(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryPredicted, func(trialID string) (map[string]float64, error) {
		if i, ok := p.trial(trialID); ok {
			return p.st.Trials[i].PredictedMetrics, nil
		}
		return nil, nil
	}); err != nil {
		return err
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, GleanerKind.ValueSet(WorkflowKindPool), GleanerPool.ValueSet(in.Name))
	if p.st.LogStart.At.IsZero() {
		p.st.LogStart = p.snapshot(workflow.Now(ctx)) // a new pool, or one from before its log
	}
	return p.loop(ctx)
}

type pool struct {
	in PoolInput
	st PoolState
	// dirty: an event happened since the last allocation, why: what
	// happened (gleaner.PoolTrigger values); resend: trials that
	// registered again and must hear their assignment again.
	dirty     bool
	why       map[string]bool
	resend    map[string]bool
	lastAlloc time.Time
	// awake is the workflow time the loop last finished handling events;
	// a much later Now means the pool was not running (see expireReleases).
	awake time.Time
	out   outbox
	// leases are the running lease activities, by agent.
	leases map[string]*lease
	// logVersion caches logKept; pendingStarts counts log chunks whose
	// records workflow has not started yet.
	logVersion    *bool
	pendingStarts int
}

type lease struct {
	incarnation string
	future      workflow.Future
	cancel      workflow.CancelFunc
}

func (p *pool) trial(id string) (int, bool) {
	i := sort.Search(len(p.st.Trials), func(i int) bool { return p.st.Trials[i].Registration.TrialID >= id })
	return i, i < len(p.st.Trials) && p.st.Trials[i].Registration.TrialID == id
}

func (p *pool) loop(ctx workflow.Context) error {
	regCh := workflow.GetSignalChannel(ctx, SignalRegisterTrial)
	deregCh := workflow.GetSignalChannel(ctx, SignalDeregisterTrial)
	profCh := workflow.GetSignalChannel(ctx, SignalProfile)
	pollCh := workflow.GetSignalChannel(ctx, SignalPollNow)
	relCh := workflow.GetSignalChannel(ctx, SignalReleased)
	joinCh := workflow.GetSignalChannel(ctx, SignalAgentJoin)
	leaveCh := workflow.GetSignalChannel(ctx, SignalAgentLeave)
	idleCh := workflow.GetSignalChannel(ctx, SignalIdleEstimates)
	p.resend = map[string]bool{}
	p.leases = map[string]*lease{}
	for _, ag := range p.st.Agents {
		p.startLease(ctx, ag.AgentJoin)
	}
	for _, id := range p.st.Resend {
		p.resend[id] = true
	}
	p.st.Resend = nil
	if len(p.resend) > 0 {
		p.changed(gleaner.PoolTriggerRegister)
	}

	if err := p.poll(ctx); err != nil {
		return err
	}
	pollTimer := workflow.NewTimer(ctx, p.in.PollInterval)
	periodTimer := workflow.NewTimer(ctx, p.in.AllocatePeriod)
	var debounce workflow.Future
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(regCh, func(c workflow.ReceiveChannel, _ bool) {
			var r RegisterTrial
			c.Receive(ctx, &r)
			p.register(workflow.Now(ctx), r)
		})
		sel.AddReceive(deregCh, func(c workflow.ReceiveChannel, _ bool) {
			var d DeregisterTrial
			c.Receive(ctx, &d)
			p.deregister(d.TrialID, workflow.Now(ctx))
		})
		sel.AddReceive(profCh, func(c workflow.ReceiveChannel, _ bool) {
			var r ThroughputProfile
			c.Receive(ctx, &r)
			p.profile(r)
		})
		var pollNow bool
		sel.AddReceive(pollCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			pollNow = true
		})
		sel.AddReceive(relCh, func(c workflow.ReceiveChannel, _ bool) {
			var r Released
			c.Receive(ctx, &r)
			p.released(ctx, r)
		})
		sel.AddReceive(joinCh, func(c workflow.ReceiveChannel, _ bool) {
			var j AgentJoin
			c.Receive(ctx, &j)
			p.join(ctx, j)
		})
		sel.AddReceive(leaveCh, func(c workflow.ReceiveChannel, _ bool) {
			var l AgentLeave
			c.Receive(ctx, &l)
			p.leave(ctx, l)
		})
		sel.AddReceive(idleCh, func(c workflow.ReceiveChannel, _ bool) {
			var e IdleEstimates
			c.Receive(ctx, &e)
			p.idleEstimates(workflow.Now(ctx), e)
		})
		for _, ag := range p.st.Agents { // sorted: a deterministic order
			if l := p.leases[ag.Agent]; l != nil {
				id := ag.Agent
				sel.AddFuture(l.future, func(f workflow.Future) { p.leaseEnded(ctx, id, l, f) })
			}
		}
		if len(p.st.Releasing) > 0 {
			next := p.releaseDeadline(p.st.Releasing[0])
			for _, r := range p.st.Releasing[1:] {
				if d := p.releaseDeadline(r); d.Before(next) {
					next = d
				}
			}
			wait := next.Sub(workflow.Now(ctx))
			sel.AddFuture(workflow.NewTimer(ctx, max(wait, time.Millisecond)), func(workflow.Future) {
				p.expireReleases(ctx)
			})
		}
		var pollDue, periodDue, debounceDue bool
		sel.AddFuture(pollTimer, func(workflow.Future) { pollDue = true })
		sel.AddFuture(periodTimer, func(workflow.Future) { periodDue = true })
		if debounce != nil {
			sel.AddFuture(debounce, func(workflow.Future) { debounceDue = true })
		}
		sel.Select(ctx)
		// Handle every signal already waiting before deciding: a burst of
		// registrations becomes one allocation.
		for sel.HasPending() {
			sel.Select(ctx)
		}

		if pollDue || pollNow {
			if err := p.poll(ctx); err != nil {
				return err
			}
			if pollDue {
				pollTimer = workflow.NewTimer(ctx, p.in.PollInterval)
			}
		}
		// Allocate at once when the last allocation is at least Debounce
		// old; else wait out the rest. (Servers fire timers no sooner than
		// about a second after they are set, so a short debounce timer
		// alone would hold every decision back that long.)
		since := workflow.Now(ctx).Sub(p.lastAlloc)
		if p.dirty && debounce == nil && since < p.in.Debounce {
			debounce = workflow.NewTimer(ctx, p.in.Debounce-since)
		}
		if debounceDue || periodDue || (p.dirty && debounce == nil) {
			debounce = nil
			if periodDue {
				p.note(gleaner.PoolTriggerPeriod)
			}
			if err := p.allocate(ctx); err != nil {
				return err
			}
			p.lastAlloc = workflow.Now(ctx)
			if periodDue {
				periodTimer = workflow.NewTimer(ctx, p.in.AllocatePeriod)
			}
		}
		p.flushLog(ctx)
		p.awake = workflow.Now(ctx)
		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > p.in.HistoryThreshold {
			return p.continueAsNew(ctx, regCh, deregCh, profCh, pollCh, relCh, joinCh, leaveCh, idleCh)
		}
	}
}

// asleep reports whether the pool handled nothing from awake to now for
// longer than its poll timer allows (PollInterval) plus ReleaseMargin: the
// server, or every worker, was away.
func (in PoolInput) asleep(awake, now time.Time) bool {
	return !awake.IsZero() && now.Sub(awake) > in.PollInterval+ReleaseMargin
}

// details is the markdown the Temporal UI shows for the pool.
func (p *pool) details(now time.Time) string {
	var b strings.Builder
	l := p.st.Last
	inUse, total := p.st.NodeUse()
	trials, inline := p.st.Registrations()
	fmt.Fprintf(&b, "**Pool %s** — %d nodes, %d in use (%d agents); %s; %d learned curves; last solve: %s %s in %.1f ms, %d nodes used, %d trials changed\n\n",
		p.in.Name, total, inUse, len(p.st.Agents), RegistrationsText(trials, inline), len(p.st.Library), l.Formulation, l.Status, l.SolveMillis, l.NodesUsed, l.Changed)
	b.WriteString("| trial | campaign | weight | nodes | reason |\n|---|---|---|---|---|\n")
	for i, t := range p.st.Trials {
		if i == 50 {
			fmt.Fprintf(&b, "| … %d more | | | | |\n", len(p.st.Trials)-50)
			break
		}
		r := t.Registration
		fmt.Fprintf(&b, "| %s | %s | %g | %d | %s |\n", r.TrialID, r.CampaignID, cmp.Or(r.Weight, 1), len(t.Nodes), t.Reason)
	}
	p.agentSummary(&b, now)
	return b.String()
}

// continueAsNew applies every signal still queued, waits for handlers,
// and carries the state into a new run.
func (p *pool) continueAsNew(ctx workflow.Context, regCh, deregCh, profCh, pollCh, relCh, joinCh, leaveCh, idleCh workflow.ReceiveChannel) error {
	for {
		var r RegisterTrial
		var d DeregisterTrial
		var pr ThroughputProfile
		var rel Released
		var j AgentJoin
		var l AgentLeave
		var e IdleEstimates
		switch {
		case joinCh.ReceiveAsync(&j):
			p.join(ctx, j)
		case leaveCh.ReceiveAsync(&l):
			p.leave(ctx, l)
		case relCh.ReceiveAsync(&rel):
			p.released(ctx, rel)
		case regCh.ReceiveAsync(&r):
			p.register(workflow.Now(ctx), r)
		case deregCh.ReceiveAsync(&d):
			p.deregister(d.TrialID, workflow.Now(ctx))
		case profCh.ReceiveAsync(&pr):
			p.profile(pr)
		case idleCh.ReceiveAsync(&e):
			p.idleEstimates(workflow.Now(ctx), e)
		case pollCh.ReceiveAsync(nil):
		default:
			if err := workflow.Await(ctx, func() bool { return p.pendingStarts == 0 && workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			// Assignments still in flight would be lost with this run.
			if err := p.out.drain(ctx); err != nil {
				workflow.GetLogger(ctx).Warn("an assignment could not be delivered", "pool", p.in.Name, "error", err)
			}
			if regCh.Len()+deregCh.Len()+profCh.Len()+pollCh.Len()+relCh.Len()+joinCh.Len()+leaveCh.Len()+idleCh.Len() > 0 {
				continue // more arrived while draining
			}
			next := p.in
			st := p.st
			for id := range p.resend {
				st.Resend = append(st.Resend, id)
			}
			sort.Strings(st.Resend)
			next.State = &st
			return workflow.NewContinueAsNewError(ctx, PoolWorkflowName, next)
		}
	}
}

// RegistrationsText says what a pool's registrations are, for people:
// "3 trials registered, 1 inline campaign (its trials share its nodes)".
func RegistrationsText(trials, inlineCampaigns int) string {
	s := fmt.Sprintf("%d trials registered", trials)
	switch inlineCampaigns {
	case 0:
	case 1:
		s += ", 1 inline campaign (its trials share its nodes)"
	default:
		s += fmt.Sprintf(", %d inline campaigns (each one's trials share its nodes)", inlineCampaigns)
	}
	return s
}
