package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

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
