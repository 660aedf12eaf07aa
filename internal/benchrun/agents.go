package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/gleaner-hpc/gleaner/agent"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Temporal server defaults the pool's history is compared with (dynamic
// config limit.historySize.error, limit.historyCount.suggestContinueAsNew
// and limit.historySize.suggestContinueAsNew; HistoryLimit is the count).
const (
	HistorySizeLimit    = 50 << 20
	SuggestCANEvents    = 4 * 1024
	SuggestCANBytes     = 4 << 20
	HistoryCountWarn    = 10_240
	agentsPollInterval  = 250 * time.Millisecond
	agentsProgressEvery = 30 * time.Second
)

// AgentsPool is the agents benchmark's pool.
const AgentsPool = "bench-agents"

// AgentsDefaultDuration is the default steady-state window;
// AgentHeartbeatThrottle is gleaner agent's workers' heartbeat throttle.
const (
	AgentsDefaultDuration  = 2 * time.Minute
	AgentHeartbeatThrottle = 500 * time.Millisecond
)

// AgentsOptions configure RunAgents.
type AgentsOptions struct {
	// Agents join with Slots CPU nodes each.
	Agents, Slots int
	// Trials are registered with the pool before the agents join.
	Trials int
	// Burst is how many times every agent re-sends its join in the
	// signal burst (default 1).
	Burst int
	// Duration is the steady-state window (default 2 minutes).
	Duration time.Duration
	// Timeout bounds every wait (default 2 minutes).
	Timeout time.Duration
	// HeartbeatThrottle is the agents' workers' heartbeat throttle
	// (default 500 ms, as gleaner agent's); the SDK gives a heartbeat RPC
	// max(HeartbeatThrottle, 1 s) before it cancels the activity.
	HeartbeatThrottle time.Duration
	// StartSpread spreads the start of the agents' workers, as agents on
	// separate hosts start at different times (the joins still go at
	// once). Workers started together also end their long polls together
	// about a minute later, which on a 2-core dev server stalls it for
	// seconds (docs/benchmarks.md).
	StartSpread time.Duration
	RepoDir     string
	Log         io.Writer
	// ServerConfig are dynamic config values (KEY=VALUE) for the dev server.
	ServerConfig []string
}

func (o *AgentsOptions) validate() error {
	switch {
	case o.Agents < 1:
		return fmt.Errorf("--agents: %d must be at least 1", o.Agents)
	case o.Slots < 1:
		return fmt.Errorf("--slots: %d must be at least 1", o.Slots)
	case o.Trials < 1:
		return fmt.Errorf("--trials: %d must be at least 1", o.Trials)
	case o.Burst < 0:
		return fmt.Errorf("--burst: %d must not be negative", o.Burst)
	case o.StartSpread < 0:
		return fmt.Errorf("--start-spread: %v must not be negative", o.StartSpread)
	case o.Duration < 0:
		return fmt.Errorf("--duration: %v must not be negative", o.Duration)
	}
	if o.Burst == 0 {
		o.Burst = 1
	}
	if o.Duration == 0 {
		o.Duration = AgentsDefaultDuration
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.HeartbeatThrottle <= 0 {
		o.HeartbeatThrottle = AgentHeartbeatThrottle
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// AgentsReport is RunAgents' result; its JSON keys are a stable contract.
// Durations are milliseconds from the last join's SignalWithStart
// returning, unless named otherwise.
type AgentsReport struct {
	Agents           int          `json:"agents"`
	Slots            int          `json:"slots"`
	Nodes            int          `json:"nodes"`
	Trials           int          `json:"trials"`
	MaxNodesPerTrial int          `json:"max_nodes_per_trial"`
	CPUs             int          `json:"cpus"`
	ServerConfig     []string     `json:"server_config"`
	Pool             PoolSettings `json:"pool"`
	// HeartbeatThrottleMS is the agents' workers' heartbeat throttle.
	HeartbeatThrottleMS float64      `json:"heartbeat_throttle_ms"`
	StartSpreadS        float64      `json:"start_spread_s"`
	Join                JoinResult   `json:"join"`
	Burst               BurstResult  `json:"burst"`
	Steady              SteadyResult `json:"steady"`
	// PoolTasks are the pool's workflow task latencies over the whole
	// benchmark (every run).
	PoolTasks   WorkflowTaskLatency `json:"pool_tasks"`
	PoolRuns    []RunInfo           `json:"pool_runs"`
	PeakHistory int64               `json:"peak_history"`
	// HistoryLimit and HistorySizeLimit are the server's hard limits per
	// run; SuggestCANEvents and SuggestCANBytes where it suggests
	// continue-as-new.
	HistoryLimit     int `json:"history_limit"`
	HistorySizeLimit int `json:"history_size_limit"`
	SuggestCANEvents int `json:"suggest_can_events"`
	SuggestCANBytes  int `json:"suggest_can_bytes"`
	// LeaseStarts counts lease activities the agents ran (one per agent
	// and pool run, plus renewals); Refused counts refused joins.
	LeaseStarts   int64  `json:"lease_starts"`
	Refused       int    `json:"refused"`
	RefusedReason string `json:"refused_reason,omitempty"`
	// LeasesLost are leases that ended with an error while the agent
	// lived (the pool then drops the agent: it counts it lost); Rejoins
	// counts the joins of agents that heard no lease for
	// agent.RejoinAfter; AgentsLive and NodesLive are the pool's at the end.
	LeasesLost []LeaseLoss `json:"leases_lost"`
	Rejoins    int64       `json:"rejoins"`
	AgentsLive int         `json:"agents_live"`
	NodesLive  int         `json:"nodes_live"`
	// PoolRPCMS is the latency of a DescribeWorkflowExecution of the pool
	// every 250 ms from the joins on: like a lease heartbeat, it waits
	// for the pool workflow's lock. PoolRPCOver1s counts those over 1 s.
	PoolRPCMS     Stats `json:"pool_rpc_ms"`
	PoolRPCOver1s int   `json:"pool_rpc_over_1s"`
}

// LeaseLoss is a lease that failed under a live agent.
type LeaseLoss struct {
	Agent string `json:"agent"`
	Phase string `json:"phase"` // join, burst or steady
	// AfterS is seconds after the last join returned.
	AfterS float64 `json:"after_s"`
	Cause  string  `json:"cause"`
}

// PoolSettings are the pool's settings (the production defaults).
type PoolSettings struct {
	PollIntervalS    float64 `json:"poll_interval_s"`
	DebounceS        float64 `json:"debounce_s"`
	AllocatePeriodS  float64 `json:"allocate_period_s"`
	AgentTimeoutS    float64 `json:"agent_timeout_s"`
	HistoryThreshold int     `json:"history_threshold"`
}

// JoinResult is the agents joining at once.
type JoinResult struct {
	// SendMS: the first join sent → the last one returned (wall clock).
	SendMS float64 `json:"send_ms"`
	// HandledMS: → the pool's workflow task that took the last join
	// completed (server event time); HandledTasks is how many workflow
	// tasks took the joins.
	HandledMS    float64 `json:"handled_ms"`
	HandledTasks int     `json:"handled_tasks"`
	// AllocatedMS: → the first allocation over all nodes started (the
	// Allocate activity's clock); Solve is that allocation. AllNodes is
	// false when agents were lost first: Solve is then the first
	// allocation after the joins.
	AllocatedMS float64                `json:"allocated_ms"`
	AllNodes    bool                   `json:"all_nodes"`
	Solve       workflows.SolveSummary `json:"solve"`
	// LeasesMS: → every agent's lease activity had started.
	LeasesMS float64 `json:"leases_ms"`
	// ReleasesConfirmed counts the trials whose nodes moved while the
	// agents joined and for which the benchmark confirmed the release,
	// as a trial does once its trainer left them.
	ReleasesConfirmed int `json:"releases_confirmed"`
}

// BurstResult is every agent re-sending its join (same incarnation: the
// pool only refreshes its nodes).
type BurstResult struct {
	Signals int `json:"signals"`
	// SendMS: the first sent → the last returned; HandledMS: the first
	// sent → the workflow task that took the last completed.
	SendMS            float64 `json:"send_ms"`
	HandledMS         float64 `json:"handled_ms"`
	AcceptedPerSecond float64 `json:"accepted_per_second"`
	SignalsPerSecond  float64 `json:"signals_per_second"`
	Tasks             int     `json:"tasks"`
	ContinuedAsNew    int     `json:"continued_as_new"`
}

// SteadyResult is the pool's history while nothing happens.
type SteadyResult struct {
	Seconds              float64 `json:"seconds"`
	Events               int64   `json:"events"`
	Bytes                int64   `json:"bytes"`
	EventsPerHour        float64 `json:"events_per_hour"`
	BytesPerHour         float64 `json:"bytes_per_hour"`
	WorkflowTasksPerHour float64 `json:"workflow_tasks_per_hour"`
	ContinuedAsNew       int     `json:"continued_as_new"`
	// ContinueAsNewPerHour is estimated: a run ends at the server's
	// suggestion (SuggestCANEvents or SuggestCANBytes) or the pool's
	// HistoryThreshold, whichever comes first.
	ContinueAsNewPerHour float64                `json:"continue_as_new_per_hour"`
	Allocations          int64                  `json:"allocations"`
	EventTypes           map[string]int         `json:"event_types"`
	LastSolve            workflows.SolveSummary `json:"last_solve"`
	// StateBytes is the JSON size of the state continue-as-new carries;
	// LargestMarkerBytes the largest local activity result recorded.
	StateBytes         int `json:"state_bytes"`
	LargestMarkerBytes int `json:"largest_marker_bytes"`
	// Releasing counts nodes held for a release at the end.
	Releasing int `json:"releasing"`
}

// RunAgents starts a dev server and a worker running the pool, registers
// o.Trials trials with it directly (fake trial workflow ids: no trial
// runs, so the pool's assignment signals fail and are dropped — this
// measures the control plane, not trainers), then o.Agents lightweight
// agents in this process join with o.Slots nodes each (and join again,
// as gleaner agent does, when they hear no lease). It measures the join →
// allocation latency, a burst of joins, and the pool's history over
// o.Duration of steady state.
func RunAgents(ctx context.Context, o AgentsOptions) (*AgentsReport, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	e, err := setup(ctx, envOptions{Slots: 1, Source: &nodeSet{}, RepoDir: o.RepoDir, Log: o.Log, ServerConfig: o.ServerConfig})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	total := o.Agents * o.Slots
	rep := &AgentsReport{
		Agents: o.Agents, Slots: o.Slots, Nodes: total, Trials: o.Trials,
		MaxNodesPerTrial: max(1, (2*total+o.Trials-1)/o.Trials), CPUs: runtime.NumCPU(), ServerConfig: o.ServerConfig,
		HeartbeatThrottleMS: float64(o.HeartbeatThrottle.Microseconds()) / 1000, StartSpreadS: o.StartSpread.Seconds(),
		Pool: PoolSettings{
			PollIntervalS: workflows.DefaultPollInterval.Seconds(), DebounceS: workflows.DefaultDebounce.Seconds(),
			AllocatePeriodS: workflows.DefaultAllocatePeriod.Seconds(), AgentTimeoutS: workflows.DefaultAgentTimeout.Seconds(),
			HistoryThreshold: workflows.DefaultPoolHistoryThreshold,
		},
		HistoryLimit: HistoryLimit, HistorySizeLimit: HistorySizeLimit, SuggestCANEvents: SuggestCANEvents, SuggestCANBytes: SuggestCANBytes,
	}
	b := &agentsBench{o: o, c: e.c, rep: rep, poolID: workflows.PoolWorkflowID(AgentsPool), total: total}
	if err := b.register(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "bench: starting %d agent workers over %v\n", o.Agents, o.StartSpread)
	fl, err := startFleet(e.c, AgentsPool, o.Agents, o.Slots, e.dataDir, o.HeartbeatThrottle, o.StartSpread)
	if err != nil {
		return nil, err
	}
	defer fl.stop()
	fmt.Fprintf(o.Log, "bench: %d agent workers started (%d task queues, one client)\n", o.Agents, o.Agents)
	b.fl = fl
	stopProbe := probePool(ctx, e.c, b.poolID)
	defer stopProbe()
	b.stopProbe = stopProbe
	for _, step := range []func(context.Context) error{b.join, b.confirmReleases, b.burst, b.steady, b.finish} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

type agentsBench struct {
	stopProbe func() []float64
	o         AgentsOptions
	c         client.Client
	fl        *fleet
	rep       *AgentsReport
	poolID    string
	total     int
}

func (b *agentsBench) status(ctx context.Context) (workflows.PoolStatus, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var st workflows.PoolStatus
	v, err := b.c.QueryWorkflow(qctx, b.poolID, "", workflows.QueryStatus)
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		return st, fmt.Errorf("querying pool %s: %w", b.poolID, err)
	}
	return st, nil
}

// register signals the trials' registrations, starting the pool with the
// production defaults (as the agents' SignalWithStart would).
func (b *agentsBench) register(ctx context.Context) error {
	fmt.Fprintf(b.o.Log, "bench: registering %d trials (1–%d nodes each) with pool %s\n", b.o.Trials, b.rep.MaxNodesPerTrial, AgentsPool)
	opts := client.StartWorkflowOptions{ID: b.poolID, TaskQueue: TaskQueue}
	for i := 1; i <= b.o.Trials; i++ {
		r := workflows.RegisterTrial{
			TrialID: workflows.TrialWorkflowID(workflows.CampaignWorkflowID(AgentsPool), i), CampaignID: AgentsPool,
			MinNodes: 1, MaxNodes: b.rep.MaxNodesPerTrial, RescaleUpCost: 18 * time.Second, RescaleDownCost: 12 * time.Second,
			GracePeriod: 10 * time.Second,
		}
		if _, err := b.c.SignalWithStartWorkflow(ctx, b.poolID, workflows.SignalRegisterTrial, r, opts,
			workflows.PoolWorkflowName, workflows.PoolInput{Name: AgentsPool}); err != nil {
			return fmt.Errorf("registering trial %d with pool %s: %w", i, AgentsPool, err)
		}
	}
	return waitEvery(ctx, b.o.Timeout, agentsPollInterval, func() (bool, error) {
		st, err := b.status(ctx)
		return err == nil && len(st.Trials) == b.o.Trials, err
	})
}

// join has every agent join at once and waits for the allocation over
// all their nodes.
func (b *agentsBench) join(ctx context.Context) error {
	fmt.Fprintf(b.o.Log, "bench: %d agents join with %d nodes each\n", b.o.Agents, b.o.Slots)
	runs, err := runChain(ctx, b.c, b.poolID)
	if err != nil {
		return err
	}
	start := time.Now()
	b.fl.setPhase("join", start)
	last, err := b.fl.send(ctx, b.poolID, 1)
	if err != nil {
		return err
	}
	b.fl.setPhase("join", last)
	b.fl.watch(ctx, b.poolID)
	j := &b.rep.Join
	j.SendMS = ms(start, last)
	// The pool's history, not its status, says when the joins were taken
	// and what the next allocation had: an agent lost meanwhile would
	// make a status poll miss it.
	var sp signalSpan
	var full, first *workflows.SolveSummary
	err = waitEvery(ctx, b.o.Timeout, time.Second, func() (bool, error) {
		var evs [][]*historypb.HistoryEvent
		var err error
		sp, evs, _, err = b.signals(ctx, len(runs)-1, start)
		if err != nil || sp.Count < b.o.Agents || sp.Handled.IsZero() {
			return false, err
		}
		full, first = allocationsAfter(evs, sp, b.total)
		return full != nil || first != nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pool to take %d joins (%d in its history) and allocate: %w", b.o.Agents, sp.Count, err)
	}
	j.HandledMS, j.HandledTasks = ms(last, sp.Handled), sp.Tasks
	j.AllNodes = full != nil
	if full == nil {
		full = first // agents were lost before the allocation
	}
	j.Solve, j.AllocatedMS = *full, ms(last, full.At)
	if err := waitEvery(ctx, b.o.Timeout, agentsPollInterval, func() (bool, error) { return b.fl.leasesStarted() == b.o.Agents, nil }); err != nil {
		return fmt.Errorf("waiting for the leases: %d of %d agents run one: %w", b.fl.leasesStarted(), b.o.Agents, err)
	}
	j.LeasesMS = ms(last, b.fl.lastFirstLease())
	fmt.Fprintf(b.o.Log, "bench: joins sent in %.0f ms; the last taken %.0f ms later; allocation over %d of %d nodes %.0f ms later (solve %.1f ms, %s)\n",
		j.SendMS, j.HandledMS, j.Solve.Nodes, b.total, j.AllocatedMS, j.Solve.SolveMillis, j.Solve.Status)
	return nil
}

// allocationsAfter returns the first allocation over n nodes and the
// first allocation at all recorded after the last signal of sp.
func allocationsAfter(runs [][]*historypb.HistoryEvent, sp signalSpan, n int) (full, first *workflows.SolveSummary) {
	dc := converter.GetDefaultDataConverter()
	for r := sp.lastRun; r < len(runs); r++ {
		for i, ev := range runs[r] {
			a := ev.GetMarkerRecordedEventAttributes()
			if a == nil || (r == sp.lastRun && i < sp.lastIndex) {
				continue
			}
			var res workflows.AllocateResult
			if dc.FromPayloads(a.GetDetails()["result"], &res) != nil || res.Summary.Formulation == "" {
				continue // not an allocation (PollNodes)
			}
			if first == nil {
				first = &res.Summary
			}
			if res.Summary.Nodes == n {
				return &res.Summary, first
			}
		}
	}
	return nil, first
}

// signals reads the pool's runs from index from and finds the join
// signals received since.
func (b *agentsBench) signals(ctx context.Context, from int, since time.Time) (signalSpan, [][]*historypb.HistoryEvent, []RunInfo, error) {
	runs, err := runChain(ctx, b.c, b.poolID)
	if err != nil {
		return signalSpan{}, nil, nil, err
	}
	var evs [][]*historypb.HistoryEvent
	for _, r := range runs[max(0, from):] {
		h, err := history(ctx, b.c, r.WorkflowID, r.RunID)
		if err != nil {
			return signalSpan{}, nil, nil, err
		}
		evs = append(evs, h)
	}
	return analyzeSignals(evs, workflows.SignalAgentJoin, since), evs, runs, nil
}

// confirmReleases confirms, for the fake trials, the nodes the pool took
// from them while the agents joined one by one, so that no node waits
// out the release timeout.
func (b *agentsBench) confirmReleases(ctx context.Context) error {
	confirmed := map[string]int64{}
	err := waitEvery(ctx, b.o.Timeout, time.Second, func() (bool, error) {
		st, err := b.status(ctx)
		if err != nil || len(st.Releasing) == 0 {
			return err == nil, err
		}
		epochs := map[string]int64{}
		for _, r := range st.Releasing {
			epochs[r.TrialID] = max(epochs[r.TrialID], r.Epoch)
		}
		for id, ep := range epochs {
			if confirmed[id] >= ep {
				continue
			}
			if err := b.c.SignalWorkflow(ctx, b.poolID, "", workflows.SignalReleased, workflows.Released{TrialID: id, Epoch: ep}); err != nil {
				return false, fmt.Errorf("confirming %s's release: %w", id, err)
			}
			confirmed[id] = ep
		}
		return false, nil
	})
	b.rep.Join.ReleasesConfirmed = len(confirmed)
	if err != nil {
		return fmt.Errorf("waiting for the pool to hand over the nodes it took from trials: %w", err)
	}
	return nil
}

// burst has every agent re-send its join o.Burst times and waits until
// the pool has taken them all.
func (b *agentsBench) burst(ctx context.Context) error {
	n := b.o.Agents * b.o.Burst
	fmt.Fprintf(b.o.Log, "bench: burst of %d join signals (same incarnation)\n", n)
	runs, err := runChain(ctx, b.c, b.poolID)
	if err != nil {
		return err
	}
	start := time.Now()
	b.fl.setPhase("burst", time.Time{})
	last, err := b.fl.send(ctx, b.poolID, b.o.Burst)
	if err != nil {
		return err
	}
	var sp signalSpan
	var after []RunInfo
	err = waitEvery(ctx, b.o.Timeout, 500*time.Millisecond, func() (bool, error) {
		d, err := b.c.DescribeWorkflowExecution(ctx, b.poolID, "")
		if err != nil || d.GetPendingWorkflowTask() != nil {
			return false, err
		}
		sp, _, after, err = b.signals(ctx, len(runs)-1, start)
		return err == nil && sp.Count >= n && !sp.Handled.IsZero(), err
	})
	if err != nil {
		return fmt.Errorf("waiting for the pool to take %d join signals (%d in its history): %w", n, sp.Count, err)
	}
	u := &b.rep.Burst
	u.Signals, u.SendMS, u.HandledMS, u.Tasks = n, ms(start, last), ms(start, sp.Handled), sp.Tasks
	u.AcceptedPerSecond, u.SignalsPerSecond = float64(n)/(u.SendMS/1000), float64(n)/(u.HandledMS/1000)
	u.ContinuedAsNew = len(after) - len(runs)
	fmt.Fprintf(b.o.Log, "bench: burst sent in %.0f ms, taken %.0f ms after the first send in %d workflow tasks: %.0f signals/s\n",
		u.SendMS, u.HandledMS, u.Tasks, u.SignalsPerSecond)
	return nil
}

type runSize struct {
	RunInfo
	bytes int64
}

func (b *agentsBench) runSizes(ctx context.Context) ([]runSize, error) {
	runs, err := runChain(ctx, b.c, b.poolID)
	if err != nil {
		return nil, err
	}
	out := make([]runSize, len(runs))
	for i, r := range runs {
		d, err := b.c.DescribeWorkflowExecution(ctx, r.WorkflowID, r.RunID)
		if err != nil {
			return nil, fmt.Errorf("describing %s run %s: %w", r.WorkflowID, r.RunID, err)
		}
		info := d.GetWorkflowExecutionInfo()
		out[i] = runSize{RunInfo: r, bytes: info.GetHistorySizeBytes()}
		out[i].HistoryLength = info.GetHistoryLength()
	}
	return out, nil
}

func totals(rs []runSize) (events, bytes int64) {
	for _, r := range rs {
		events += r.HistoryLength
		bytes += r.bytes
	}
	return events, bytes
}

// steady counts the pool's history over o.Duration of nothing happening.
func (b *agentsBench) steady(ctx context.Context) error {
	fmt.Fprintf(b.o.Log, "bench: steady state for %v\n", b.o.Duration)
	b.fl.setPhase("steady", time.Time{})
	st0, err := b.status(ctx)
	if err != nil {
		return err
	}
	rs0, err := b.runSizes(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	end := start.Add(b.o.Duration)
	for now := start; now.Before(end); now = time.Now() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(agentsProgressEvery, end.Sub(now))):
		}
		if d, err := b.c.DescribeWorkflowExecution(ctx, b.poolID, ""); err == nil {
			fmt.Fprintf(b.o.Log, "bench: %4.0f s  pool run at %d events\n", time.Since(start).Seconds(), d.GetWorkflowExecutionInfo().GetHistoryLength())
		}
	}
	secs := time.Since(start).Seconds()
	rs1, err := b.runSizes(ctx)
	if err != nil {
		return err
	}
	st1, err := b.status(ctx)
	if err != nil {
		return err
	}
	e0, by0 := totals(rs0)
	e1, by1 := totals(rs1)
	s := &b.rep.Steady
	s.Seconds, s.Events, s.Bytes = secs, e1-e0, by1-by0
	s.EventsPerHour, s.BytesPerHour = float64(s.Events)*3600/secs, float64(s.Bytes)*3600/secs
	s.ContinuedAsNew = len(rs1) - len(rs0)
	runEvents := float64(min(SuggestCANEvents, workflows.DefaultPoolHistoryThreshold))
	s.ContinueAsNewPerHour = max(s.EventsPerHour/runEvents, s.BytesPerHour/SuggestCANBytes)
	s.Allocations = st1.Solves - st0.Solves
	s.LastSolve = st1.Last
	s.Releasing = len(st1.Releasing)
	if js, err := json.Marshal(st1.PoolState); err == nil {
		s.StateBytes = len(js)
	}
	s.EventTypes = map[string]int{}
	tasks := 0
	for i := len(rs0) - 1; i < len(rs1); i++ {
		evs, err := history(ctx, b.c, rs1[i].WorkflowID, rs1[i].RunID)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if i == len(rs0)-1 && ev.GetEventId() <= rs0[i].HistoryLength {
				continue
			}
			s.EventTypes[strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")]++
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				tasks++
			}
			if a := ev.GetMarkerRecordedEventAttributes(); a != nil {
				size := 0
				for _, p := range a.GetDetails() {
					for _, q := range p.GetPayloads() {
						size += len(q.GetData())
					}
				}
				s.LargestMarkerBytes = max(s.LargestMarkerBytes, size)
			}
		}
	}
	s.WorkflowTasksPerHour = float64(tasks) * 3600 / secs
	return nil
}

// finish reads the pool's runs and workflow task latencies.
func (b *agentsBench) finish(ctx context.Context) error {
	runs, err := runChain(ctx, b.c, b.poolID)
	if err != nil {
		return err
	}
	b.rep.PoolRuns = runs
	for _, r := range runs {
		b.rep.PeakHistory = max(b.rep.PeakHistory, r.HistoryLength)
	}
	if b.rep.PoolTasks, err = taskLatency(ctx, b.c, runs); err != nil {
		return err
	}
	rpc := b.stopProbe()
	b.rep.PoolRPCMS = summarize(rpc)
	for _, x := range rpc {
		if x > 1000 {
			b.rep.PoolRPCOver1s++
		}
	}
	b.rep.LeaseStarts, b.rep.Rejoins = b.fl.leaseStarts.Load(), b.fl.rejoins.Load()
	b.fl.mu.Lock()
	b.rep.LeasesLost = slices.Clone(b.fl.lost)
	b.fl.mu.Unlock()
	st, err := b.status(ctx)
	if err != nil {
		return err
	}
	b.rep.AgentsLive, b.rep.NodesLive = len(st.Agents), len(st.Nodes)
	b.rep.Refused, b.rep.RefusedReason = b.fl.refusals()
	return nil
}

// probePool times a DescribeWorkflowExecution of the pool every 250 ms
// until stopped; stop returns the latencies in milliseconds.
func probePool(ctx context.Context, c client.Client, id string) (stop func() []float64) {
	ctx, cancel := context.WithCancel(ctx)
	var out []float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			t0 := time.Now()
			_, err := c.DescribeWorkflowExecution(ctx, id, "")
			if err == nil {
				out = append(out, ms(t0, time.Now()))
			}
			select {
			case <-ctx.Done():
			case <-time.After(agentsPollInterval):
			}
		}
	}()
	var once sync.Once
	return func() []float64 {
		once.Do(func() { cancel(); <-done })
		return out
	}
}

func ms(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }

// waitEvery calls cond every interval until it is true or timeout.
func waitEvery(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// signalSpan is what a workflow's history says of the signals of one
// name received since a time: how many, the first and the last, when the
// workflow task that took the last one completed (zero: not yet), and
// how many workflow tasks completed from the first to that one.
type signalSpan struct {
	Count       int
	First, Last time.Time
	Handled     time.Time
	Tasks       int
	// lastRun and lastIndex place the last signal in the runs.
	lastRun, lastIndex int
}

// analyzeSignals reads the histories of consecutive runs (a signal left
// at the end of a run is taken by its last workflow task, which
// continues it as new).
func analyzeSignals(runs [][]*historypb.HistoryEvent, name string, since time.Time) signalSpan {
	var sp signalSpan
	waiting, startedAfter := false, false
	tasks := 0
	for r, evs := range runs {
		startedAfter = false
		for i, ev := range evs {
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				if ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() != name || at.Before(since) {
					continue
				}
				sp.Count++
				if sp.First.IsZero() {
					sp.First = at
				}
				sp.Last, sp.Handled, sp.lastRun, sp.lastIndex = at, time.Time{}, r, i
				waiting, startedAfter = true, false
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				startedAfter = waiting
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				startedAfter = false
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if sp.Count > 0 {
					tasks++
				}
				if startedAfter {
					sp.Handled, sp.Tasks = at, tasks
					waiting, startedAfter = false, false
				}
			}
		}
	}
	return sp
}

// WriteText prints the report for people.
func (r *AgentsReport) WriteText(w io.Writer) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	j, u, s := r.Join, r.Burst, r.Steady
	p("agents: %d agents × %d slots = %d nodes, %d trials (1–%d nodes each, registered directly); workers started over %g s, heartbeat throttle %g ms; %d CPUs\n",
		r.Agents, r.Slots, r.Nodes, r.Trials, r.MaxNodesPerTrial, r.StartSpreadS, r.HeartbeatThrottleMS, r.CPUs)
	p("pool:   defaults — poll %gs, debounce %gs, allocate every %gs, agent timeout %gs, continue-as-new at %d events or the server's suggestion\n",
		r.Pool.PollIntervalS, r.Pool.DebounceS, r.Pool.AllocatePeriodS, r.Pool.AgentTimeoutS, r.Pool.HistoryThreshold)
	p("join:   %d joins sent at once in %.0f ms; from the last one returned:\n", r.Agents, j.SendMS)
	row := func(name string, v float64, note string) {
		if note != "" {
			note = "  (" + note + ")"
		}
		p("          %-32s %8.0f ms%s\n", name, v, note)
	}
	row("all taken by the pool", j.HandledMS, fmt.Sprintf("%d workflow tasks", j.HandledTasks))
	what := "allocation over all nodes"
	if !j.AllNodes {
		what = "first allocation (AGENTS LOST)"
	}
	row(what, j.AllocatedMS, fmt.Sprintf("%d nodes, solve %.1f ms, %s, %d nodes used", j.Solve.Nodes, j.Solve.SolveMillis, j.Solve.Status, j.Solve.NodesUsed))
	row("every agent's lease running", j.LeasesMS, "")
	p("        releases confirmed for %d trials whose nodes moved during the joins; %d joins refused", j.ReleasesConfirmed, r.Refused)
	if r.RefusedReason != "" {
		p(" (%s)", r.RefusedReason)
	}
	p("\n")
	p("burst:  %d joins (same incarnation) sent in %.0f ms (%.0f/s accepted), all taken %.0f ms after the first send: %.0f signals/s, %d workflow tasks, %d continue-as-new\n",
		u.Signals, u.SendMS, u.AcceptedPerSecond, u.HandledMS, u.SignalsPerSecond, u.Tasks, u.ContinuedAsNew)
	p("steady: %.0f s: %d events, %.1f KiB → %.0f events/h, %.2f MiB/h, %.0f workflow tasks/h, %d allocations\n",
		s.Seconds, s.Events, float64(s.Bytes)/1024, s.EventsPerHour, s.BytesPerHour/(1<<20), s.WorkflowTasksPerHour, s.Allocations)
	p("        continue-as-new: %d in the window, ≈%.2f/h (server suggests at %d events or %d MiB)\n",
		s.ContinuedAsNew, s.ContinueAsNewPerHour, r.SuggestCANEvents, r.SuggestCANBytes>>20)
	var types []string
	for _, k := range sortedKeys(s.EventTypes) {
		types = append(types, fmt.Sprintf("%s %d", k, s.EventTypes[k]))
	}
	p("        events: %s\n", strings.Join(types, ", "))
	p("        state carried over continue-as-new %.1f KiB; largest local activity result %.1f KiB; %d nodes held for release\n",
		float64(s.StateBytes)/1024, float64(s.LargestMarkerBytes)/1024, s.Releasing)
	p("solve:  last allocation: %d nodes × %d trials in %.1f ms (%s), %d trials changed\n",
		s.LastSolve.Nodes, s.LastSolve.Trials, s.LastSolve.SolveMillis, s.LastSolve.Status, s.LastSolve.Changed)
	t := r.PoolTasks
	p("tasks:  pool workflow tasks (ms, p50/p95/max): queue %.3g/%.3g/%.3g, processing %.3g/%.3g/%.3g (%d tasks)\n",
		t.Queue.P50, t.Queue.P95, t.Queue.Max, t.Processing.P50, t.Processing.P95, t.Processing.Max, t.Tasks)
	p("runs:   %d pool runs, peak %d events (limit %d, warning at %d, suggestion at %d); lease activities started: %d\n",
		len(r.PoolRuns), r.PeakHistory, r.HistoryLimit, HistoryCountWarn, r.SuggestCANEvents, r.LeaseStarts)
	for _, ri := range r.PoolRuns {
		p("          pool run %s  %-17s %6d events\n", ri.RunID, ri.Status, ri.HistoryLength)
	}
	p("agents: %d of %d live in the pool at the end (%d nodes); %d leases failed under a live agent; %d joined again after %v without a lease\n",
		r.AgentsLive, r.Agents, r.NodesLive, len(r.LeasesLost), r.Rejoins, agent.RejoinAfter)
	q := r.PoolRPCMS
	p("        pool RPC probe (ms, p50/p95/max of %d): %.3g/%.3g/%.3g, %d over 1 s (a heartbeat RPC's deadline)\n",
		q.N, q.P50, q.P95, q.Max, r.PoolRPCOver1s)
	for i, l := range r.LeasesLost {
		if i == 5 {
			p("          … %d more\n", len(r.LeasesLost)-5)
			break
		}
		p("          %s (%s, +%.1f s): %s\n", l.Agent, l.Phase, l.AfterS, l.Cause)
	}
	return nil
}
