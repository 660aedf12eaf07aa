package pilot

import (
	"context"
	"slices"
	"syscall"
	"time"
)

// Pool is what the pilots need of the pool they feed. The worker
// implements it over the pool workflow (a query and a signal).
type Pool interface {
	// Demand says how many more nodes the pool's trials could use.
	Demand(ctx context.Context) (Demand, error)
	// SetIdleUntil tells the pool when each pilot's node is expected to be
	// taken back (nodes missing from the map: unknown).
	SetIdleUntil(ctx context.Context, until map[string]time.Time) error
}

// Demand is a pool's appetite for nodes.
type Demand struct {
	// Trials are the trials registered with the pool.
	Trials int
	// Wanted is how many nodes beyond the pool's own the trials could use
	// (the sum of their max_nodes less the pool's nodes; ≥ 0).
	Wanted int
	// MaxGrace is the longest grace period among the trials: a preempted
	// pilot must fit it inside the scheduler's grace (Limits.Grace).
	MaxGrace time.Duration
	// Nodes, when NodesKnown, are the names of the pool's nodes now. A
	// running pilot none of whose nodes is among them is still joining
	// (its agent starting): it counts against Wanted as a node on its
	// way, so that no pilot is submitted for it again.
	Nodes      []string
	NodesKnown bool
}

// beyond is how many nodes the trials want beyond the pool's own and the
// running pilots still joining it.
func (d Demand) beyond(running []Job) int {
	if !d.NodesKnown {
		return d.Wanted
	}
	joining := 0
	for _, j := range running {
		if !slices.ContainsFunc(j.Nodes, func(n string) bool { return slices.Contains(d.Nodes, n) }) {
			joining++
		}
	}
	return max(d.Wanted-joining, 0)
}

// Scheduler is what a batch scheduler does for the pilots of one pool (see
// the package doc, "Adding a scheduler"). Its methods run the scheduler's
// commands and return their errors with the scheduler's own text; they
// decide nothing.
type Scheduler interface {
	// Name names the scheduler in messages ("slurm").
	Name() string
	// Submit queues one pilot job asking for req and returns its id.
	Submit(ctx context.Context, req Request) (id string, err error)
	// Pilots lists the pool's pilot jobs, waiting, running or ending.
	Pilots(ctx context.Context) ([]Job, error)
	// Cancel ends the pilots ids: a running one's agent gets TERM, then
	// the scheduler's KILL.
	Cancel(ctx context.Context, ids []string) error
	// CancelAll ends every pilot of the pool, found by its name, not by a
	// list: one submitted but not yet listed goes too.
	CancelAll(ctx context.Context) error
	// Signal sends sig to the agents of the running pilots ids alone (the
	// batch script, not the job's every process), as the scheduler does
	// when it preempts a pilot; the job goes on until the agent ends.
	Signal(ctx context.Context, sig syscall.Signal, ids []string) error
	// Plan lists the nodes that queued batch jobs and reservations claim,
	// and from when. Pilots (the pool's or another's) claim nothing and
	// are left out. Jobs come first, each list in the scheduler's order.
	Plan(ctx context.Context) ([]Claim, error)
}

// Request is what one pilot job asks of the scheduler.
type Request struct {
	// Nodes is the pilot's node count: 1, its agent offering the node
	// under the scheduler's name for it.
	Nodes int
	// Time is the pilot's time limit; TimeMin, when the scheduler has one,
	// the least it accepts, so backfill may start it in any hole at least
	// TimeMin long (Slurm's --time-min).
	Time, TimeMin time.Duration
	// Lead is how long before Time ends the agent gets TERM, to leave as
	// when preempted (Slurm's --signal=B:TERM@Lead).
	Lead time.Duration
	// GPUs is the GPUs per node the pilot asks for (0: none asked; the
	// node's own are used). A scheduler maps it to its syntax (Slurm:
	// --gres=gpu:N).
	GPUs int
	// Agent are the `gleaner agent` arguments the pilot runs on its node:
	// --pool, --stop-timeout and Settings.AgentArgs.
	Agent []string
	// Env are "NAME=value" variables the agent needs that must not be on
	// a command line, where ps shows them (TEMPORAL_API_KEY;
	// Settings.AgentEnv). A scheduler passes them through the job's
	// environment, never its argv.
	Env []string
}

// State is a pilot job's state, as the policy counts it.
type State int

const (
	// Other: ending, ended, suspended or held: neither waiting nor
	// holding a node for the pool, and left alone.
	Other State = iota
	// Pending: waiting in the queue.
	Pending
	// Running: started (or starting) on its node; its agent is, or is
	// joining, the pool.
	Running
)

// Job is one pilot job as the scheduler lists it.
type Job struct {
	ID    string
	State State
	// Nodes are its nodes, empty while it waits.
	Nodes []string
	// End is when its time limit ends it, zero if unknown.
	End time.Time
}

// ClaimKind says what claims nodes.
type ClaimKind int

const (
	// ClaimJob is a queued batch job the scheduler's plan puts on the
	// nodes; a planned start already past means any moment now.
	ClaimJob ClaimKind = iota
	// ClaimReservation is a reservation holding the nodes; one that has
	// already started is one the pilot runs in, and ends nothing.
	ClaimReservation
)

// Claim is a queued job or a reservation that takes nodes from Start.
type Claim struct {
	Kind  ClaimKind
	Nodes []string
	// Start is the planned start; zero: the scheduler has none yet.
	Start time.Time
	// By names it in messages: "job 40 (batch)", "reservation maint".
	By string
}

// Estimate is the expected end of a pilot's node's idle time and what
// decided it.
type Estimate struct {
	Until time.Time
	// Why names what ends it first: "pilot end", "job 123 (batch)", or
	// "reservation maint".
	Why string
	// Claimed: a queued job or a reservation takes the node at Until (not
	// the pilot's own time limit).
	Claimed bool
}

// IdleUntil estimates when the batch scheduler takes node back from the
// pilot holding it: the earliest of the pilot's end time (its time limit)
// and the starts of the claims on the node. A job's planned start already
// past is a job about to start: now. A reservation already active is one
// the pilot runs in, and ends nothing. The zero Estimate means nothing is
// known.
//
// A planned start is the scheduler's promise for the job, not a bound:
// jobs ending early move it sooner, so the estimate errs late, and the
// pool keeps reading it afresh every Interval.
func IdleUntil(node string, now, pilotEnd time.Time, claims []Claim) Estimate {
	var e Estimate
	take := func(t time.Time, why string, claimed bool) {
		if t.IsZero() || !t.After(now) {
			return
		}
		if e.Until.IsZero() || t.Before(e.Until) {
			e = Estimate{Until: t, Why: why, Claimed: claimed}
		}
	}
	take(pilotEnd, "pilot end", false)
	for _, c := range claims {
		if !slices.Contains(c.Nodes, node) {
			continue
		}
		start := c.Start
		if c.Kind == ClaimJob && !start.IsZero() && !start.After(now) {
			start = now.Add(time.Nanosecond) // overdue: any moment now
		}
		take(start, c.By, true)
	}
	return e
}
