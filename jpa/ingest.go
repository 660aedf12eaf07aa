package jpa

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Progress is one progress report of a running trial, as the RunTrial
// activity reads it from the trainer's report file.
type Progress struct {
	TrialID  string
	Nodes    int
	NodeType string
	// Samples is the cumulative number of samples trained. It may go
	// backwards when a trial resumes from an older checkpoint.
	Samples float64
	Time    time.Time
	// Restart marks the first report after the trainer was (re)started.
	// A change of Nodes or NodeType, or Samples going backwards, is
	// detected as a restart without it.
	Restart bool
	// AfterPause marks the first report after the trial was paused or
	// preempted to 0 nodes: a start, which costs the allocator nothing, so
	// no rescale cost is measured across the pause (it would count the
	// hours at 0 nodes as lost time). Implies Restart.
	AfterPause bool
}

// Config tunes a Profiler. The zero value (or a nil *Config) uses the
// defaults documented on each field.
type Config struct {
	// WarmupIntervals is how many report intervals after every (re)start
	// are dropped (data-loader start-up, compilation, the first
	// all-reduces); 0 means 2, negative means none.
	WarmupIntervals int
	// Warmup additionally drops intervals that end within this long of the
	// first report of a (re)start; 0 means none.
	Warmup time.Duration
	// Window is how many recent intervals are kept per (node count, node
	// type), and how many recent rescale costs per direction; 0 means 20.
	Window int
}

func (c *Config) withDefaults() (Config, error) {
	var o Config
	if c != nil {
		o = *c
	}
	if o.WarmupIntervals == 0 {
		o.WarmupIntervals = 2
	}
	if o.WarmupIntervals < 0 {
		o.WarmupIntervals = 0
	}
	if o.Window == 0 {
		o.Window = 20
	}
	if o.Window < 1 {
		return o, fmt.Errorf("%w: Window is %d, want ≥ 1", ErrInvalidSettings, o.Window)
	}
	if o.Warmup < 0 {
		return o, fmt.Errorf("%w: Warmup is %v, want ≥ 0", ErrInvalidSettings, o.Warmup)
	}
	return o, nil
}

// Outcome says what Ingest did with a report.
type Outcome string

const (
	// OutcomeInterval: the report closed an interval whose rate was kept.
	OutcomeInterval Outcome = "interval"
	// OutcomeStart: the report opened a run segment (first report of the
	// trial, or a restart); no rate yet.
	OutcomeStart Outcome = "start"
	// OutcomeWarmup: the interval fell in a warm-up and was dropped.
	OutcomeWarmup Outcome = "warmup"
	// OutcomeInvalid: empty trial id, Nodes ≤ 0, zero time, or Samples
	// negative or not finite.
	OutcomeInvalid Outcome = "invalid"
	// OutcomeOutOfOrder: the report is older than the last one accepted.
	OutcomeOutOfOrder Outcome = "out-of-order"
	// OutcomeDuplicate: same time and samples as the last report.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeZeroInterval: same time as the last report, other samples.
	OutcomeZeroInterval Outcome = "zero-interval"
)

// Estimate is a robust throughput estimate at one node count and type.
type Estimate struct {
	Nodes    int
	NodeType string
	// Throughput is the median samples/s of the recent intervals.
	Throughput float64
	// Spread is 1.4826 × the median absolute deviation, a robust standard
	// deviation of one interval's rate.
	Spread float64
	// StdErr is the standard error of the median, √(π/2)·Spread/√n.
	StdErr float64
	// Intervals is how many intervals the estimate is made of.
	Intervals int
}

// RescaleCost is the measured cost of one direction of rescale.
type RescaleCost struct {
	// Seconds is the median lost time of the recent rescales; see
	// Profiler.RescaleCosts for its definition.
	Seconds float64
	// Spread is 1.4826 × the median absolute deviation of the costs.
	Spread float64
	// Count is how many rescales were measured.
	Count int
}

type rateKey struct {
	nodes int
	typ   string
}

// pendingRescale is a rescale waiting for the new segment to leave its
// warm-up.
type pendingRescale struct {
	up          bool
	lastTime    time.Time // last report before the rescale
	lastSamples float64
}

type trialState struct {
	started      bool
	last         Progress
	segStart     time.Time
	segIntervals int
	rates        map[rateKey][]float64
	pending      *pendingRescale
	up, down     []float64
}

// Profiler turns the reports of many trials into throughput estimates and
// rescale costs. It is a pure state machine: no clock, no I/O; feed it
// reports in arrival order. It is not safe for concurrent use.
type Profiler struct {
	cfg    Config
	trials map[string]*trialState
	counts map[Outcome]int
}

// NewProfiler returns an empty profiler; errors name the bad Config field.
func NewProfiler(cfg *Config) (*Profiler, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Profiler{cfg: c, trials: map[string]*trialState{}, counts: map[Outcome]int{}}, nil
}

// Counts returns how many reports ended in each outcome.
func (p *Profiler) Counts() map[Outcome]int {
	out := make(map[Outcome]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Forget drops everything known about a trial.
func (p *Profiler) Forget(trialID string) { delete(p.trials, trialID) }

// Ingest takes one report. Bad reports are counted and skipped, never
// fatal: the outcome says what happened to it.
func (p *Profiler) Ingest(r Progress) Outcome {
	o := p.ingest(r)
	p.counts[o]++
	return o
}

func (p *Profiler) ingest(r Progress) Outcome {
	if r.TrialID == "" || r.Nodes <= 0 || r.Time.IsZero() || math.IsNaN(r.Samples) || math.IsInf(r.Samples, 0) || r.Samples < 0 {
		return OutcomeInvalid
	}
	st, ok := p.trials[r.TrialID]
	if !ok {
		st = &trialState{rates: map[rateKey][]float64{}}
		p.trials[r.TrialID] = st
	}
	if st.started {
		switch {
		case r.Time.Before(st.last.Time):
			return OutcomeOutOfOrder
		case r.Time.Equal(st.last.Time) && r.Samples == st.last.Samples && r.Nodes == st.last.Nodes && r.NodeType == st.last.NodeType:
			return OutcomeDuplicate
		case r.Time.Equal(st.last.Time):
			return OutcomeZeroInterval
		}
	}
	restart := !st.started || r.Restart || r.AfterPause || r.Nodes != st.last.Nodes || r.NodeType != st.last.NodeType || r.Samples < st.last.Samples
	if restart {
		if st.started && r.Nodes != st.last.Nodes && !r.AfterPause {
			st.pending = &pendingRescale{up: r.Nodes > st.last.Nodes, lastTime: st.last.Time, lastSamples: st.last.Samples}
		} else if st.started {
			st.pending = nil
		}
		st.started = true
		st.last = r
		st.segStart = r.Time
		st.segIntervals = 0
		return OutcomeStart
	}
	dt := r.Time.Sub(st.last.Time).Seconds()
	rate := (r.Samples - st.last.Samples) / dt
	prev := st.last
	st.last = r
	st.segIntervals++
	if st.segIntervals <= p.cfg.WarmupIntervals || r.Time.Sub(st.segStart) < p.cfg.Warmup {
		return OutcomeWarmup
	}
	if math.IsNaN(rate) || math.IsInf(rate, 0) {
		return OutcomeInvalid
	}
	if pr := st.pending; pr != nil {
		// The first steady interval starts at prev: throughput resumed there.
		st.pending = nil
		if rate > 0 {
			lost := prev.Time.Sub(pr.lastTime).Seconds() - (prev.Samples-pr.lastSamples)/rate
			lost = math.Max(lost, 0)
			if pr.up {
				st.up = pushWindow(st.up, lost, p.cfg.Window)
			} else {
				st.down = pushWindow(st.down, lost, p.cfg.Window)
			}
		}
	}
	k := rateKey{r.Nodes, r.NodeType}
	st.rates[k] = pushWindow(st.rates[k], rate, p.cfg.Window)
	return OutcomeInterval
}

func pushWindow(w []float64, v float64, n int) []float64 {
	w = append(w, v)
	if len(w) > n {
		w = append(w[:0], w[len(w)-n:]...)
	}
	return w
}

// Estimates returns the trial's estimates sorted by node type then count.
func (p *Profiler) Estimates(trialID string) []Estimate {
	st, ok := p.trials[trialID]
	if !ok {
		return nil
	}
	out := make([]Estimate, 0, len(st.rates))
	for k, w := range st.rates {
		if len(w) > 0 {
			out = append(out, estimateOf(k, w))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].NodeType != out[j].NodeType {
			return out[i].NodeType < out[j].NodeType
		}
		return out[i].Nodes < out[j].Nodes
	})
	return out
}

// Estimate returns the trial's estimate at one count and node type (its
// entry of Estimates), false if it has none there.
func (p *Profiler) Estimate(trialID string, nodes int, nodeType string) (Estimate, bool) {
	st, ok := p.trials[trialID]
	if !ok {
		return Estimate{}, false
	}
	k := rateKey{nodes, nodeType}
	w := st.rates[k]
	if len(w) == 0 {
		return Estimate{}, false
	}
	return estimateOf(k, w), true
}

// Rate is the trial's throughput estimate at one count and node type —
// Estimate's Throughput, without the cost of its spread — false if it has
// none there.
func (p *Profiler) Rate(trialID string, nodes int, nodeType string) (float64, bool) {
	st, ok := p.trials[trialID]
	if !ok {
		return 0, false
	}
	w := st.rates[rateKey{nodes, nodeType}]
	if len(w) == 0 {
		return 0, false
	}
	return math.Max(median(w), 0), true
}

// estimateOf is the robust estimate of one window of interval rates.
func estimateOf(k rateKey, w []float64) Estimate {
	m := math.Max(median(w), 0)
	s := 1.4826 * mad(w)
	return Estimate{
		Nodes: k.nodes, NodeType: k.typ, Throughput: m, Spread: s,
		StdErr: math.Sqrt(math.Pi/2) * s / math.Sqrt(float64(len(w))), Intervals: len(w),
	}
}

// Observations returns the trial's estimates as Predict's input.
func (p *Profiler) Observations(trialID string) []Observation {
	ests := p.Estimates(trialID)
	out := make([]Observation, 0, len(ests))
	for _, e := range ests {
		out = append(out, Observation{Nodes: e.Nodes, NodeType: e.NodeType, Throughput: e.Throughput, Sigma: e.StdErr})
	}
	return out
}

// RescaleCosts returns the measured cost of growing (up) and shrinking
// (down) the trial. One rescale's cost is the time it lost:
//
//	C = (t₁ − t₀) − (s₁ − s₀) / r₁,  clamped at 0,
//
// where t₀, s₀ are the time and cumulative samples of the last report
// before the node count changed, t₁, s₁ those of the report where the new
// run's first steady (post-warm-up) interval starts, and r₁ that
// interval's rate. C is how far the trial is behind one that switched to
// the new rate instantly at t₀: stopping, restarting, warm-up, and any
// samples rolled back to the checkpoint (s₁ < s₀) all count. It is in
// seconds, like the allocator's RescaleUpCost and RescaleDownCost. The
// median of the recent costs is robust to one slow restart.
func (p *Profiler) RescaleCosts(trialID string) (up, down RescaleCost) {
	st, ok := p.trials[trialID]
	if !ok {
		return
	}
	summ := func(w []float64) RescaleCost {
		if len(w) == 0 {
			return RescaleCost{}
		}
		return RescaleCost{Seconds: median(w), Spread: 1.4826 * mad(w), Count: len(w)}
	}
	return summ(st.up), summ(st.down)
}
