package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// ErrInvalidInput wraps every error about the events, jobs or Config
// given to Run.
var ErrInvalidInput = errors.New("invalid simulation input")

// DefaultLookahead is T_fwd, in seconds, when Config.Lookahead is 0.
const DefaultLookahead = 300

// CurveSource says which throughput curve the allocator is told for job
// (an index into Run's jobs) at simulated time now, the same on every
// node type the job can run on. Progress always follows the job's true
// curve (Curve, or CurvesByType on the type it runs on); a source other
// than the oracle (the JPA mode, TypeBlind) changes only what the
// allocator believes. The curve must reach the job's MaxNodes.
type CurveSource func(job int, now float64) allocator.Curve

// MeasureFunc is told, after every step of simulated time, that job (an
// index into Run's jobs) held nodes > 0 nodes of type nodeType ("" on an
// untyped pool: Config.NodeTypes nil) throughout (from, to] and
// had trained samples useful samples at to (progress lost to rescales is
// re-trained before samples moves again, so the stall shows). It is how
// a learner of the curves (JPA.Measure) sees the jobs run.
type MeasureFunc func(job, nodes int, nodeType string, from, to, samples float64)

// TypedCurveSource says which curve per node type the allocator is told
// for a job with CurvesByType at simulated time now (a JPA learning each
// type's curve); the map must hold the job's types.
type TypedCurveSource func(job int, now float64) map[string]allocator.Curve

// Config is one simulation run. The zero value is the compact policy with
// the true curves, T_fwd = 300 s fixed, no idle-time estimates, the
// throughput objective, the allocator's default time limit, the events'
// span as the window, and no node idle before the first event.
type Config struct {
	// Policy is the allocator formulation; empty means compact.
	Policy allocator.Formulation
	// Lookahead is T_fwd in seconds (0: DefaultLookahead); with
	// DeriveLookahead, the fallback where no node has an estimate.
	Lookahead float64
	// DeriveLookahead makes T_fwd at every decision
	// allocator.LookaheadFromIdle over the idle nodes' estimates (see
	// IdleEstimate), as production derives it; false keeps T_fwd =
	// Lookahead throughout.
	DeriveLookahead bool
	// IdleEstimate is what the allocator is told of when each idle node
	// is taken back; the zero value tells nothing.
	IdleEstimate IdleEstimate
	// Objective is the allocator's objective; empty means throughput.
	Objective allocator.Objective
	// TimeLimit bounds each solve (0: the allocator's default).
	TimeLimit time.Duration
	// Start and End bound the simulated window (seconds, the events'
	// clock). Both zero: from the first to the last event. Otherwise
	// taken as given, End 0 meaning the last event. Events before Start
	// only shape the idle set; jobs submitted before Start arrive at
	// Start; nothing after End happens (events after it only tell
	// IdleEstimate when the holes open at End close).
	Start, End float64
	// Initial is the idle set before the first event.
	Initial []string
	// NodeTypes maps node ids to their types (GPU models, partitions;
	// AssignNodeTypes draws one); a node it does not name is of the
	// default type "". Nil: one type, as before types existed. A job
	// with CurvesByType runs only on the types it has a curve for.
	NodeTypes map[string]string
	// Curves is what the allocator is told; nil means the oracle (each
	// job's true Curve, or every type's true curve of a job with
	// CurvesByType). A source's curve is told for every type the job
	// can run on (TypeBlind).
	Curves CurveSource
	// CurvesByType, when set, is what the allocator is told of jobs with
	// CurvesByType (one curve per type); nil: Curves' one curve on each
	// of their types (type-blind), or, with Curves nil, their true ones.
	CurvesByType TypedCurveSource
	// AllocatePeriod and Reconsider model production's periodic
	// allocation (workflows.PoolInput.AllocatePeriod): when
	// AllocatePeriod seconds pass after a decision without an event, a
	// submission or a completion, Reconsider is asked whether what the
	// allocator is told changed (the JPA published a measurement), and
	// if so the allocator decides again. Production allocates every
	// period; with unchanged inputs it would decide the same, so the
	// simulator skips those. Zero or nil: decisions only at events,
	// submissions and completions (the oracle's curves never change).
	AllocatePeriod float64
	Reconsider     func() bool
	// Measure, when set, sees every running job after every step of
	// simulated time (see MeasureFunc); nil means nobody measures.
	Measure MeasureFunc
	// Clock times the solver (Metrics.SolverMs*), and nothing else;
	// nil means time.Now.
	Clock func() time.Time
	// Progress, when set, is told the simulated time reached after every
	// decision, with the run's window, so a long replay can show how far
	// it is. It must not change anything.
	Progress func(now, start, end float64)

	// observe, set by tests, sees the engine after every preemption and
	// every decision; observeProblem sees every problem the allocator
	// is given, and the simulated time, before it solves it.
	observe        func(e *engine)
	observeProblem func(now float64, p *allocator.Problem)
}

func validateInput(events []Event, jobs []Job, cfg *Config) error {
	for i, ev := range events {
		if math.IsNaN(ev.Time) || math.IsInf(ev.Time, 0) {
			return fmt.Errorf("%w: events[%d]: time %v is not finite", ErrInvalidInput, i, ev.Time)
		}
		if i > 0 && ev.Time < events[i-1].Time {
			return fmt.Errorf("%w: events[%d]: time %v is before events[%d]'s %v (events must be in time order)", ErrInvalidInput, i, ev.Time, i-1, events[i-1].Time)
		}
	}
	if cfg.Start == 0 && cfg.End == 0 {
		if len(events) == 0 {
			return fmt.Errorf("%w: config: no events and no window (Start, End)", ErrInvalidInput)
		}
		cfg.Start = events[0].Time
	}
	if cfg.End == 0 && len(events) > 0 {
		cfg.End = events[len(events)-1].Time
	}
	switch {
	case math.IsNaN(cfg.Start) || math.IsInf(cfg.Start, 0) || math.IsNaN(cfg.End) || math.IsInf(cfg.End, 0):
		return fmt.Errorf("%w: config: window [%v, %v] is not finite", ErrInvalidInput, cfg.Start, cfg.End)
	case cfg.End <= cfg.Start:
		return fmt.Errorf("%w: config: window end %v is not after start %v", ErrInvalidInput, cfg.End, cfg.Start)
	case math.IsNaN(cfg.Lookahead) || math.IsInf(cfg.Lookahead, 0) || cfg.Lookahead < 0:
		return fmt.Errorf("%w: config: lookahead %v s must be a finite non-negative number (0 means %d s)", ErrInvalidInput, cfg.Lookahead, DefaultLookahead)
	case math.IsNaN(cfg.AllocatePeriod) || math.IsInf(cfg.AllocatePeriod, 0) || cfg.AllocatePeriod < 0:
		return fmt.Errorf("%w: config: allocation period %v s must be a finite non-negative number (0: none)", ErrInvalidInput, cfg.AllocatePeriod)
	case cfg.TimeLimit < 0:
		return fmt.Errorf("%w: config: time limit %v must not be negative (0 means the allocator's default)", ErrInvalidInput, cfg.TimeLimit)
	}
	if err := cfg.IdleEstimate.validate(); err != nil {
		return fmt.Errorf("%w: config: %w", ErrInvalidInput, err)
	}
	if cfg.Lookahead == 0 {
		cfg.Lookahead = DefaultLookahead
	}
	if _, err := allocator.ParseFormulation(string(cfg.Policy)); err != nil {
		return fmt.Errorf("%w: config: policy %w", ErrInvalidInput, err)
	}
	names := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if err := validateJob(j); err != nil {
			return fmt.Errorf("%w: jobs[%d] (%q): %w", ErrInvalidInput, i, j.Name, err)
		}
		if prev, dup := names[j.Name]; dup {
			return fmt.Errorf("%w: jobs[%d]: name %q repeats jobs[%d]", ErrInvalidInput, i, j.Name, prev)
		}
		names[j.Name] = i
	}
	return nil
}

func validateJob(j Job) error {
	switch {
	case j.Name == "":
		return errors.New("name: empty")
	case math.IsNaN(j.Submit) || math.IsInf(j.Submit, 0):
		return fmt.Errorf("submit: %v is not finite", j.Submit)
	case !(j.TotalSamples > 0) || math.IsInf(j.TotalSamples, 0):
		return fmt.Errorf("total samples: %v must be positive and finite", j.TotalSamples)
	}
	// The allocator checks bounds, costs, weight and curve as it will see them.
	p := allocator.Problem{Lookahead: time.Second, Trials: []allocator.Trial{trialOf(j)}}
	return p.Validate()
}

func trialOf(j Job) allocator.Trial {
	return allocator.Trial{
		ID:              j.Name,
		MinNodes:        j.MinNodes,
		MaxNodes:        j.MaxNodes,
		Curve:           j.Curve,
		CurvesByType:    j.CurvesByType,
		RescaleUpCost:   j.RescaleUp,
		RescaleDownCost: j.RescaleDown,
		Weight:          j.Weight,
	}
}
