package benchrun

import (
	"fmt"
	"io"
	"strings"

	"github.com/gleaner-hpc/gleaner/agent"
	"github.com/gleaner-hpc/gleaner/workflows"
)

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
