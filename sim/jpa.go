package sim

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/jpa"
)

// Defaults of JPAOptions.
const (
	// DefaultJPANoise is the log-normal sigma of a simulated measurement.
	DefaultJPANoise = 0.05
	// DefaultJPAInterval is the seconds between two progress reports of a
	// running job.
	DefaultJPAInterval = 30
	// DefaultJPAGroup is every job's Query.Group by default: the jobs of
	// a BFTrainer workload are one HPO campaign, they train one model.
	DefaultJPAGroup = "workload"
)

// priorExponent is production's speedup n^0.9 for a job nothing is known
// of (activities.priorCurve).
const priorExponent = 0.9

// JPAOptions shape the JPA mode (JPACurves). Zero fields take the
// documented defaults.
type JPAOptions struct {
	// Seed seeds the measurement noise: the same seed, jobs and events
	// give the same run.
	Seed uint64
	// Noise is the sigma of the multiplicative log-normal noise on each
	// report interval's sample count (0: DefaultJPANoise, 5 %; negative:
	// exact measurements).
	Noise float64
	// Interval is the seconds between reports while a job runs (0:
	// DefaultJPAInterval).
	Interval float64
	// Group names a job's campaign (jpa.Query.Group): jobs of one group
	// train one model and lend each other their curves. Nil: all jobs
	// are one group, DefaultJPAGroup.
	Group func(Job) string
	// Prior is a library of profiled curves (production's configured
	// prior, e.g. jpa.PriorFromScaling), added to the jobs' own.
	Prior []jpa.PriorCurve
	// Profiler and Predict tune the JPA (nil: its defaults).
	Profiler *jpa.Config
	Predict  *jpa.Settings
}

// JPA learns the jobs' curves online, as production does: it turns the
// engine's view of each running job (Config.Measure) into noisy progress
// reports every Interval seconds, ingests them into one jpa.Profiler, and
// tells the allocator (Config.Curves) each job's optimistic JPA
// prediction over [MinNodes, MaxNodes] — predicted with a library of the
// other jobs' current measurements, its group's siblings weighted up,
// exactly like activities.Allocate — or, while nothing is known of it or
// its group, the prior n^0.9 (scaled to the samples/s measured so far, so
// that it is comparable with measured curves under the throughput
// objective). One JPA serves one Run.
type JPA struct {
	jobs     []Job
	opts     JPAOptions
	groups   []string
	prof     *jpa.Profiler
	rng      *rand.Rand
	epoch    time.Time
	st       []jpaJob
	gen      int // bumped by every new steady interval
	lib      *jpa.Library
	libGen   int
	priorTop float64 // the prior's scale (samples/s at 1 node)
}

type jpaJob struct {
	nodes      int     // count of the current segment, 0: none
	lastTo     float64 // end of the last step seen
	lastTrue   float64 // true samples at lastTo
	lastReport float64 // time of the last report
	reportTrue float64 // true samples at lastReport
	reported   float64 // noisy cumulative samples reported
	obs        []jpa.Observation
	obsGen     int // gen when obs was read; -1: never
	curve      allocator.Curve
	curveGen   int // libGen when curve was computed; -1: never
}

// NewJPA prepares the JPA mode for jobs (the slice given to Run).
func NewJPA(jobs []Job, opts JPAOptions) (*JPA, error) {
	if opts.Noise == 0 {
		opts.Noise = DefaultJPANoise
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultJPAInterval
	}
	prof, err := jpa.NewProfiler(opts.Profiler)
	if err != nil {
		return nil, err
	}
	a := &JPA{
		jobs:   jobs,
		opts:   opts,
		groups: make([]string, len(jobs)),
		prof:   prof,
		rng:    rand.New(rand.NewPCG(opts.Seed, 0x6a7061)),
		epoch:  time.Unix(0, 0).UTC(),
		st:     make([]jpaJob, len(jobs)),
		libGen: -1,
	}
	for i, j := range jobs {
		a.groups[i] = DefaultJPAGroup
		if opts.Group != nil {
			a.groups[i] = opts.Group(j)
		}
		a.st[i].obsGen, a.st[i].curveGen = -1, -1
	}
	// Validate the prior once, so Curve cannot fail on it later.
	if _, err := jpa.NewLibrary(opts.Prior); err != nil {
		return nil, err
	}
	return a, nil
}

// JPACurves is the JPA mode in one call: use the results as
// Config{Curves: cs, Measure: mf}, for one Run over jobs.
func JPACurves(jobs []Job, opts JPAOptions) (CurveSource, MeasureFunc, error) {
	a, err := NewJPA(jobs, opts)
	if err != nil {
		return nil, nil, err
	}
	return a.Curve, a.Measure, nil
}

// Profiler is the JPA's profiler (for inspection).
func (a *JPA) Profiler() *jpa.Profiler { return a.prof }

func (a *JPA) at(t float64) time.Time {
	return a.epoch.Add(time.Duration(math.Round(t * float64(time.Second))))
}

// Measure is the MeasureFunc: it reports job's progress every Interval
// seconds of (from, to], with noise on each interval's samples.
func (a *JPA) Measure(job, nodes int, from, to, samples float64) {
	if job < 0 || job >= len(a.st) || nodes <= 0 || !(to > from) {
		return
	}
	s := &a.st[job]
	name := a.jobs[job].Name
	if nodes != s.nodes || from != s.lastTo {
		// A new run segment: the job starts, resumes or was rescaled.
		// After a gap it held no nodes, so its samples did not move.
		paused := from != s.lastTo || s.nodes == 0
		s.nodes, s.lastReport, s.reportTrue, s.lastTo = nodes, from, s.lastTrue, from
		a.ingest(jpa.Report{TrialID: name, Nodes: nodes, Samples: s.reported, Time: a.at(from), Restart: true, AfterPause: paused})
	}
	// Within a step the job first re-trains what a rescale lost (its
	// samples stall), then trains at its true rate: the stall is what the
	// rate leaves unexplained.
	s0, t0 := s.lastTrue, s.lastTo
	rate := a.jobs[job].Curve.At(nodes)
	stall := to - t0
	if rate > 0 {
		stall = min(max(stall-(samples-s0)/rate, 0), to-t0)
	}
	trueAt := func(t float64) float64 {
		if rate <= 0 {
			return s0
		}
		return min(s0+rate*max(t-t0-stall, 0), samples)
	}
	for next := s.lastReport + a.opts.Interval; next <= to; next = s.lastReport + a.opts.Interval {
		at := trueAt(next)
		d := at - s.reportTrue
		if a.opts.Noise > 0 {
			d *= math.Exp(a.opts.Noise * a.rng.NormFloat64())
		}
		s.reported += max(d, 0)
		s.lastReport, s.reportTrue = next, at
		a.ingest(jpa.Report{TrialID: name, Nodes: nodes, Samples: s.reported, Time: a.at(next)})
	}
	s.lastTo, s.lastTrue = to, samples
}

func (a *JPA) ingest(r jpa.Report) {
	if a.prof.Ingest(r) == jpa.OutcomeInterval {
		a.gen++
	}
}

// observations is job's current estimates (cached per generation).
func (a *JPA) observations(j int) []jpa.Observation {
	s := &a.st[j]
	if s.obsGen != a.gen {
		s.obs, s.obsGen = a.prof.Observations(a.jobs[j].Name), a.gen
	}
	return s.obs
}

// library rebuilds the prior plus every measured job as a curve of its
// group (siblings share a model), as activities.Allocate's library does.
func (a *JPA) library() *jpa.Library {
	if a.libGen == a.gen && a.lib != nil {
		return a.lib
	}
	curves := append([]jpa.PriorCurve(nil), a.opts.Prior...)
	var scales []float64
	for j := range a.jobs {
		var pts []jpa.Point
		for _, o := range a.observations(j) {
			if o.Throughput > 0 && !math.IsInf(o.Throughput, 0) {
				pts = append(pts, jpa.Point{Nodes: o.Nodes, Throughput: o.Throughput})
				scales = append(scales, o.Throughput/math.Pow(float64(o.Nodes), priorExponent))
			}
		}
		if len(pts) == 0 {
			continue
		}
		sort.Slice(pts, func(x, y int) bool { return pts[x].Nodes < pts[y].Nodes })
		curves = append(curves, jpa.PriorCurve{Name: a.jobs[j].Name, Group: a.groups[j], Points: pts})
	}
	lib, err := jpa.NewLibrary(curves)
	if err != nil {
		// Observations are positive and sorted by count, the prior was
		// validated: fall back to the prior alone rather than fail.
		lib, _ = jpa.NewLibrary(a.opts.Prior)
	}
	a.priorTop = 1
	if len(scales) > 0 {
		sort.Float64s(scales)
		a.priorTop = scales[len(scales)/2]
	}
	a.lib, a.libGen = lib, a.gen
	return lib
}

// Curve is the CurveSource: job's optimistic JPA curve at now.
func (a *JPA) Curve(job int, _ float64) allocator.Curve {
	j := a.jobs[job]
	lib := a.library()
	s := &a.st[job]
	if s.curveGen == a.libGen && s.curve != nil {
		return s.curve
	}
	q := jpa.Query{MinNodes: j.MinNodes, MaxNodes: j.MaxNodes, Group: a.groups[job], Self: j.Name}
	pred, err := jpa.Predict(a.observations(job), lib, q, a.opts.Predict)
	var c allocator.Curve
	if err == nil {
		c = pred.AllocatorCurve(true)
	}
	if !usableCurve(c, j.MaxNodes) {
		// Nothing known (jpa.ErrNoData), or any other failure: the prior
		// keeps the job schedulable, as production does.
		c = scaledPrior(j.MaxNodes, a.priorTop)
	}
	s.curve, s.curveGen = c, a.libGen
	return c
}

func usableCurve(c allocator.Curve, maxNodes int) bool {
	if len(c) == 0 || c[len(c)-1].Nodes < maxNodes {
		return false
	}
	for _, p := range c {
		if !(p.Throughput >= 0) || math.IsInf(p.Throughput, 0) {
			return false
		}
	}
	return true
}

// scaledPrior is n^0.9 × top over [1, maxNodes].
func scaledPrior(maxNodes int, top float64) allocator.Curve {
	c := make(allocator.Curve, 0, maxNodes)
	for n := 1; n <= maxNodes; n++ {
		c = append(c, allocator.Point{Nodes: n, Throughput: top * math.Pow(float64(n), priorExponent)})
	}
	return c
}
