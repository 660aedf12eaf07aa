package pilot

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Settings configure Pilots. The zero value of each optional field is its
// documented default; several follow from the scheduler's Limits.
type Settings struct {
	// Pool names the pool the pilots' agents join (required).
	Pool string
	// MaxPending is how many pilots may wait in the queue at once
	// (default 4).
	MaxPending int
	// MaxPilots caps pending plus running pilots (default: Limits.Nodes,
	// at least 1).
	MaxPilots int
	// TimeLimit and TimeMin are the pilots' Request.Time and TimeMin:
	// backfill starts a pilot in any hole at least TimeMin long and gives
	// it up to TimeLimit (defaults 2 h and 10 min; TimeLimit at most
	// Limits.MaxTime).
	TimeLimit, TimeMin time.Duration
	// Lead is how long before its time limit a pilot's agent gets SIGTERM,
	// to leave as it would when preempted (default: Limits.Grace, at
	// least 30 s).
	Lead time.Duration
	// Interval is how often the pilots are looked after (default:
	// Limits.Cycle, between 2 s and 30 s).
	Interval time.Duration
	// IdleRelease is how long running pilots may stay when no trial needs
	// nodes before they are cancelled (default 5 min).
	IdleRelease time.Duration
	// Yield is how long before a claim's planned start on its node (a
	// queued job's, a reservation's) a running pilot gives the node back
	// by itself, without waiting for the scheduler to preempt it: its
	// agent gets SIGTERM (Scheduler.Signal) and leaves as when preempted.
	// A scheduler preempts pilots for the jobs it starts now; its plan
	// also names the nodes it gives a queued job next, and a pilot there
	// leaving at once spares that job the wait for a later preemption
	// (default: Limits.Cycle, one plan's age; negative: never yield,
	// leave it to the scheduler).
	Yield time.Duration
	// GPUs is Request.GPUs: the GPUs per node each pilot asks for (default
	// 0: none asked).
	GPUs int
	// AgentArgs are the `gleaner agent` flags a pilot passes (connection,
	// data directory, GPUs); --pool and --stop-timeout are added.
	AgentArgs []string
	// AgentEnv are "NAME=value" variables the agents need that must not
	// be on a command line (TEMPORAL_API_KEY): Request.Env.
	AgentEnv []string
	// Server is the Temporal frontend (host:port) the agents connect to,
	// the worker's --address; when set, New refuses one the compute nodes
	// cannot reach (CheckServer).
	Server string
	// Location is the time zone of the times in messages (default
	// time.Local; a scheduler sets its controller's).
	Location *time.Location
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Limits are what a scheduler found at start that the defaults follow
// from.
type Limits struct {
	// Nodes is how many nodes the pilots could hold (the partition's or
	// queue's); MaxPilots' default.
	Nodes int
	// MaxTime is the longest time limit a pilot may ask (0: none).
	MaxTime time.Duration
	// Grace is what a preempted pilot has between TERM and KILL (0:
	// killed at once).
	Grace time.Duration
	// Cycle is how often the scheduler remakes its plan (Slurm's
	// bf_interval).
	Cycle time.Duration
	// MaxTimeSetting and GraceSetting name MaxTime and Grace in messages:
	// "partition glean's MaxTime".
	MaxTimeSetting, GraceSetting string
	// NodesHere: every node the pilots may run on is this machine (its
	// address is a loopback one: a one-machine test cluster), so a
	// loopback Server reaches this host from them (CheckServer).
	NodesHere bool
}

// Defaults of Settings that do not follow from Limits.
const (
	DefaultMaxPending  = 4
	DefaultTimeLimit   = 2 * time.Hour
	DefaultTimeMin     = 10 * time.Minute
	DefaultIdleRelease = 5 * time.Minute
	// MinLead is the least default Lead.
	MinLead = 30 * time.Second
)

// withDefaults fills in the defaults and checks the settings; note
// reports a setting it had to change.
func (s Settings) withDefaults(lim Limits, note func(string, ...any)) (Settings, error) {
	if s.Pool == "" {
		return s, errors.New("pool: empty")
	}
	if s.MaxPending == 0 {
		s.MaxPending = DefaultMaxPending
	}
	if s.MaxPilots == 0 {
		s.MaxPilots = max(lim.Nodes, 1)
	}
	if s.TimeLimit == 0 {
		s.TimeLimit = DefaultTimeLimit
	}
	if s.TimeMin == 0 {
		s.TimeMin = min(DefaultTimeMin, s.TimeLimit)
	}
	if lim.MaxTime > 0 && s.TimeLimit > lim.MaxTime {
		note("pilots' time limit %v exceeds %s %v: using it", s.TimeLimit, lim.MaxTimeSetting, lim.MaxTime)
		s.TimeLimit = lim.MaxTime
		s.TimeMin = min(s.TimeMin, s.TimeLimit)
	}
	if s.Lead == 0 {
		s.Lead = max(lim.Grace, MinLead)
	}
	if s.Interval == 0 {
		s.Interval = min(max(lim.Cycle, 2*time.Second), 30*time.Second)
	}
	if s.IdleRelease == 0 {
		s.IdleRelease = DefaultIdleRelease
	}
	if s.Yield == 0 {
		s.Yield = lim.Cycle
	}
	if s.Location == nil {
		s.Location = time.Local
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	switch {
	case s.MaxPending < 0, s.MaxPilots < 0:
		return s, errors.New("max_pending and max_pilots must be ≥ 0")
	case s.GPUs < 0:
		return s, fmt.Errorf("gpus %d: must be ≥ 0", s.GPUs)
	case s.TimeMin > s.TimeLimit:
		return s, fmt.Errorf("time_min %v exceeds time %v", s.TimeMin, s.TimeLimit)
	case s.Lead >= s.TimeMin:
		return s, fmt.Errorf("the time-limit signal's lead %v must be shorter than time_min %v", s.Lead, s.TimeMin)
	}
	for i, kv := range s.AgentEnv {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return s, fmt.Errorf("agent environment, entry %d: want NAME=value", i) // the value may be a secret
		}
	}
	if s.Server != "" {
		if err := CheckServer(s.Server, lim.NodesHere); err != nil {
			return s, err
		}
	}
	return s, nil
}
