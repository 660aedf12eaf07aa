package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
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
	// DefaultJPAProfileChange is how far (relative) a job's throughput
	// estimate at a count must move before the allocator sees the new
	// value: the trial workflow's threshold for sending the pool a
	// profile (workflows.profileChange).
	DefaultJPAProfileChange = 0.05
)

// JPAOptions shape the JPA mode (NewJPA, Attach). Zero fields take the
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
	// train one model and lend each other their curves (as siblings only
	// where their Models agree, as production: jpa.Query). Nil: the
	// job's Model, and DefaultJPAGroup for jobs without one (a BFTrainer
	// workload of one model is one campaign).
	Group func(Job) string
	// Prior is a library of profiled curves (production's configured
	// prior, e.g. jpa.PriorFromScaling), added to the jobs' own.
	Prior []jpa.PriorCurve
	// JobPrior, if set, predicts a job's own curve before it runs
	// (jpa.Query.Prior, e.g. from its architecture: nas.ThroughputModel);
	// nil or an empty result: none, the n^0.9 prior and siblings as
	// before. JobPriorSigma is its log-uncertainty (0:
	// jpa.DefaultPriorSigma).
	JobPrior      func(Job) []jpa.Point
	JobPriorSigma float64
	// ProfileChange is the relative move of an estimate that is
	// published to the allocator (0: DefaultJPAProfileChange; negative:
	// every move).
	ProfileChange float64
	// SiblingsPerGroup caps the library's curves per group (0:
	// jpa.DefaultSiblingsPerGroup, as production; negative: no cap).
	SiblingsPerGroup int
	// Speeds are single-node throughputs of models on node types (a
	// GPU-ratio table, as a worker's --gpu-ratios): on a mixed pool a job
	// measured on one type is predicted on another from them; nil: by
	// the library's curves alone, or as fast as where it was measured.
	Speeds *jpa.TypeSpeeds
	// Profiler, Predict and Explore tune the JPA (nil: its defaults, as
	// production's).
	Profiler *jpa.Config
	Predict  *jpa.Settings
	Explore  *jpa.Explore
}

// JPA learns the jobs' curves online, as production does: it turns the
// engine's view of each running job (Config.Measure) into noisy progress
// reports every Interval seconds, ingests them into one jpa.Profiler, and
// tells the allocator (Config.Curves) each job's optimistic JPA
// prediction over [MinNodes, MaxNodes] — predicted with a library of the
// unfinished jobs' current measurements (at most SiblingsPerGroup per
// group), its group's siblings weighted up, exactly like
// activities.Allocate — or, while nothing is known of it or its group,
// the prior n^0.9 (scaled to the samples/s measured so far, so that it is
// comparable with measured curves under the throughput objective).
// A job's prediction is redone only when its profile or the library
// changed, which gives production's answers at a fraction of its cost.
// One JPA serves one Run.
type JPA struct {
	jobs      []Job
	opts      JPAOptions
	groups    []string
	prof      *jpa.Profiler
	rng       *rand.Rand
	epoch     time.Time
	st        []jpaJob
	dirty     bool // a job measured something since the library was built
	seen      int  // stats.Published when Changed was last asked
	lib       *jpa.Library
	libCurves []jpa.PriorCurve // the jobs' curves in lib
	libGen    int              // bumped by every rebuild of lib
	priorTop  jpa.PriorScales  // the prior's scales (samples/s)
	// unmeasured caches the prediction of a job with no measurement,
	// the same for every such job of a group and bounds.
	unmeasured      map[unmeasuredKey]cachedCurve
	shareUnmeasured bool // no job name holds "@" (see NewJPA)
	stats           JPAStats
	priors          [][]jpa.Point // JobPrior's, per job
	// uncached, set by tests, rebuilds the library and predicts every
	// job at every call: what the caches must not change.
	uncached bool
}

type unmeasuredKey struct {
	group, model, nodeType string
	minNodes, maxNodes     int
}

// cachedCurve is a prediction and what it was made with.
type cachedCurve struct {
	curve      allocator.Curve
	libGen     int
	profileGen int
	prior      jpa.PriorScales // the prior's scales if curve is the prior, else zero
}

type jpaJob struct {
	nodes      int     // count of the current segment, 0: none
	nodeType   string  // type of the current segment's nodes
	lastTo     float64 // end of the last step seen
	lastTrue   float64 // true samples at lastTo
	lastReport float64 // time of the last report
	reported   float64 // noisy cumulative samples reported
	// profile is what the allocator knows of the job, one observation
	// per node type and count, sorted by type then count: each published
	// when new or moved by more than ProfileChange, as the trial workflow
	// sends it to the pool. profileGen is bumped by every change.
	profile    []jpa.Observation
	profileGen int
	cached     cachedCurve            // the last prediction (untyped jobs)
	byType     map[string]cachedCurve // the last prediction per type (jobs with CurvesByType)
}

// JPAStats count the JPA's work in one run.
type JPAStats struct {
	// Published is how many estimates reached the allocator.
	Published int `json:"published"`
	// LibraryBuilds and Predictions count rebuilds of the library and
	// predictions made (jpa.Predict calls).
	LibraryBuilds int `json:"library_builds"`
	Predictions   int `json:"predictions"`
}

// NewJPA prepares the JPA mode for jobs (the slice given to Run).
func NewJPA(jobs []Job, opts JPAOptions) (*JPA, error) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Noise", opts.Noise}, {"Interval", opts.Interval}, {"ProfileChange", opts.ProfileChange}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return nil, fmt.Errorf("%w: JPAOptions.%s is %v, want a finite number", ErrInvalidInput, f.name, f.v)
		}
	}
	if opts.Noise == 0 {
		opts.Noise = DefaultJPANoise
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultJPAInterval
	}
	prof, err := jpa.NewProfiler(opts.Profiler)
	if err != nil {
		return nil, fmt.Errorf("%w: JPAOptions.Profiler: %w", ErrInvalidInput, err)
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

		unmeasured:      map[unmeasuredKey]cachedCurve{},
		shareUnmeasured: true,
	}
	if a.opts.ProfileChange == 0 {
		a.opts.ProfileChange = DefaultJPAProfileChange
	}
	if a.opts.SiblingsPerGroup == 0 {
		a.opts.SiblingsPerGroup = jpa.DefaultSiblingsPerGroup
	}
	for i, j := range jobs {
		// jpa.Query.Self also excludes curves named Self+"@…": with such
		// names about, one unmeasured job's prediction may not serve
		// another's.
		a.shareUnmeasured = a.shareUnmeasured && !strings.Contains(j.Name, "@")
		switch {
		case opts.Group != nil:
			a.groups[i] = opts.Group(j)
		case j.Model != "":
			a.groups[i] = j.Model
		default:
			a.groups[i] = DefaultJPAGroup
		}
	}
	if opts.JobPrior != nil {
		a.priors = make([][]jpa.Point, len(jobs))
		for i, j := range jobs {
			a.priors[i] = opts.JobPrior(j)
			q := jpa.Query{MinNodes: 1, MaxNodes: 1, Prior: a.priors[i], PriorSigma: opts.JobPriorSigma}
			if len(q.Prior) == 0 {
				continue
			}
			if _, err := jpa.Predict(nil, nil, q, opts.Predict); err != nil {
				return nil, fmt.Errorf("%w: JPAOptions.JobPrior of job %s: %w", ErrInvalidInput, j.Name, err)
			}
		}
	}
	// Validate the prior once, so Curve cannot fail on it later.
	if _, err := jpa.NewLibrary(opts.Prior); err != nil {
		return nil, fmt.Errorf("%w: JPAOptions.Prior: %w", ErrInvalidInput, err)
	}
	return a, nil
}

// DefaultAllocatePeriod is production's allocation period in seconds
// (workflows.DefaultAllocatePeriod): the longest a new measurement waits
// before the allocator uses it.
const DefaultAllocatePeriod = 30

// Attach is cfg in the JPA mode, run as production runs: the allocator
// is told a's curves, a measures every running job, and the allocator
// decides again DefaultAllocatePeriod seconds after a decision when a
// published a measurement meanwhile (Config.AllocatePeriod, Reconsider;
// a period already set is kept).
func (a *JPA) Attach(cfg Config) Config {
	cfg.Curves, cfg.CurvesByType, cfg.Measure, cfg.Reconsider = a.Curve, a.CurvesByType, a.Measure, a.Changed
	if cfg.AllocatePeriod == 0 {
		cfg.AllocatePeriod = DefaultAllocatePeriod
	}
	return cfg
}

// Changed reports whether a published a measurement since it was last
// asked (Config.Reconsider).
func (a *JPA) Changed() bool {
	changed := a.stats.Published != a.seen
	a.seen = a.stats.Published
	return changed
}

// Profiler is the JPA's profiler (for inspection).
func (a *JPA) Profiler() *jpa.Profiler { return a.prof }

// Stats counts the JPA's work so far.
func (a *JPA) Stats() JPAStats { return a.stats }

// Published is what the allocator knows of job: its published estimates,
// one per count (what production's pool holds as the trial's profile).
func (a *JPA) Published(job int) []jpa.Observation {
	return slices.Clone(a.st[job].profile)
}

func (a *JPA) at(t float64) time.Time {
	return a.epoch.Add(time.Duration(math.Round(t * float64(time.Second))))
}

// Measure is the MeasureFunc: it reports job's progress every Interval
// seconds of (from, to], with noise on each interval's samples.
func (a *JPA) Measure(job, nodes int, nodeType string, from, to, samples float64) {
	if job < 0 || job >= len(a.st) || nodes <= 0 || !(to > from) {
		return
	}
	s := &a.st[job]
	name := a.jobs[job].Name
	if nodes != s.nodes || nodeType != s.nodeType || from != s.lastTo {
		// A new run segment: the job starts, resumes or was rescaled.
		// After a gap it held no nodes, so its samples did not move.
		paused := from != s.lastTo || s.nodes == 0
		if s.nodes > 0 && s.lastTo > s.lastReport {
			// The old segment trained until lastTo: its partial interval
			// counts towards the position.
			s.reported += a.noisy(max(a.trueRate(job, s.nodeType, s.nodes), 0) * (s.lastTo - s.lastReport))
		}
		s.nodes, s.nodeType, s.lastReport, s.lastTo = nodes, nodeType, from, from
		a.ingest(job, jpa.Progress{TrialID: name, Nodes: nodes, NodeType: nodeType, Samples: s.reported, Time: a.at(from), Restart: true, AfterPause: paused})
	}
	// What a trainer reports is its position in the data. After a
	// restart it resumes from its checkpoint and re-trains what the
	// rescale lost (the engine's stall of useful samples) at its full
	// rate, so the position advances at the true rate throughout: that
	// is what production's profiler sees, the restart report marking the
	// new baseline.
	rate := max(a.trueRate(job, nodeType, nodes), 0)
	for next := s.lastReport + a.opts.Interval; next <= to; next = s.lastReport + a.opts.Interval {
		s.reported += a.noisy(rate * (next - s.lastReport))
		s.lastReport = next
		a.ingest(job, jpa.Progress{TrialID: name, Nodes: nodes, NodeType: nodeType, Samples: s.reported, Time: a.at(next)})
	}
	if samples >= a.jobs[job].TotalSamples && s.lastTrue < a.jobs[job].TotalSamples {
		a.dirty = true // it leaves the library
	}
	s.lastTo, s.lastTrue = to, samples
}

// trueRate is job's true throughput on n nodes of type typ.
func (a *JPA) trueRate(job int, typ string, n int) float64 {
	c, _ := a.jobs[job].curveOn(typ)
	return c.At(n)
}

// noisy is d samples as measured: with multiplicative log-normal noise.
func (a *JPA) noisy(d float64) float64 {
	if a.opts.Noise > 0 {
		d *= math.Exp(a.opts.Noise * a.rng.NormFloat64())
	}
	return d
}

func (a *JPA) ingest(job int, r jpa.Progress) {
	if a.prof.Ingest(r) == jpa.OutcomeInterval {
		a.publish(job, r.Nodes, r.NodeType)
	}
}

// publish updates what the allocator knows of job at count n when the
// estimate is new or moved by more than ProfileChange (as the trial
// workflow's sendProfile does), with its spread as the sigma (as the
// pool's ProfilePoint carries it).
func (a *JPA) publish(job, n int, typ string) {
	name := a.jobs[job].Name
	rate, found := a.prof.Rate(name, n, typ)
	if !found || !(rate > 0) {
		return
	}
	s := &a.st[job]
	i := sort.Search(len(s.profile), func(i int) bool {
		p := s.profile[i]
		return p.NodeType > typ || p.NodeType == typ && p.Nodes >= n
	})
	known := i < len(s.profile) && s.profile[i].Nodes == n && s.profile[i].NodeType == typ
	if known && math.Abs(rate-s.profile[i].Throughput) <= a.opts.ProfileChange*s.profile[i].Throughput {
		return
	}
	est, _ := a.prof.Estimate(name, n, typ) // its spread, computed only to publish
	o := jpa.Observation{Nodes: n, NodeType: typ, Throughput: est.Throughput, Sigma: est.Spread}
	if known {
		s.profile[i] = o
	} else {
		s.profile = slices.Insert(s.profile, i, o)
	}
	s.profileGen++
	a.dirty = true
	a.stats.Published++
}

// finished: the job trained all its samples (it has left the pool).
func (a *JPA) finished(j int) bool {
	return a.st[j].lastTrue >= a.jobs[j].TotalSamples
}

// refreshLibrary rebuilds the library after a profile changed: the prior
// plus every measured job, finished or not, as a curve of its group
// (siblings share a model), capped per group: jpa.Advisor's library, as
// activities.Allocate's is with the pool's learned curves.
func (a *JPA) refreshLibrary() {
	if a.lib != nil && !a.dirty && !a.uncached {
		return
	}
	// A finished job's curve stays, as production's pool keeps a
	// finished trial's (its learned library); the prior's scale is the
	// running jobs', as production's is the registered trials'.
	var views, running []jpa.TrialView
	for j := range a.jobs {
		if len(a.st[j].profile) == 0 {
			continue
		}
		v := jpa.TrialView{ID: a.jobs[j].Name, Group: a.groups[j], Model: a.jobs[j].Model, Observations: a.st[j].profile}
		views = append(views, v)
		if !a.finished(j) {
			running = append(running, v)
		}
	}
	adv := a.advisor()
	curves := adv.Curves(views)
	a.dirty, a.priorTop = false, jpa.PriorScale(running)
	if a.lib != nil && !a.uncached && sameCurves(curves, a.libCurves) {
		// The changes were outside the library (jobs it does not keep):
		// every prediction made with it stands.
		return
	}
	lib, err := jpa.NewLibrary(append(append([]jpa.PriorCurve(nil), a.opts.Prior...), curves...))
	if err != nil {
		// Observations are positive and sorted by count, the prior was
		// validated: fall back to the prior alone rather than fail.
		lib, _ = jpa.NewLibrary(a.opts.Prior)
	}
	if a.opts.Speeds != nil {
		lib.Speeds().Merge(a.opts.Speeds)
	}
	a.lib, a.libCurves = lib, curves
	a.libGen++
	a.stats.LibraryBuilds++
}

// advisor is the JPA policy with the options' tuning and prior.
func (a *JPA) advisor() jpa.Advisor {
	return jpa.Advisor{Settings: a.opts.Predict, Explore: a.opts.Explore, Base: a.opts.Prior, Speeds: a.opts.Speeds, SiblingsPerGroup: a.opts.SiblingsPerGroup}
}

func sameCurves(a, b []jpa.PriorCurve) bool {
	return slices.EqualFunc(a, b, func(x, y jpa.PriorCurve) bool {
		return x.Name == y.Name && x.Group == y.Group && slices.Equal(x.Points, y.Points)
	})
}

// Curve is the CurveSource: job's optimistic JPA curve at now.
func (a *JPA) Curve(job int, _ float64) allocator.Curve {
	a.refreshLibrary()
	return a.curve(job, "", &a.st[job].cached)
}

// CurvesByType is the TypedCurveSource: a job with CurvesByType is
// predicted on each of its types from what was measured of it on any
// (jpa.Advisor.Curve with the type), as production's Allocate predicts a
// trial on every node type of the pool.
func (a *JPA) CurvesByType(job int, _ float64) map[string]allocator.Curve {
	a.refreshLibrary()
	s := &a.st[job]
	if s.byType == nil {
		s.byType = map[string]cachedCurve{}
	}
	out := map[string]allocator.Curve{}
	for _, typ := range a.jobs[job].Types() {
		c := s.byType[typ]
		out[typ] = a.curve(job, typ, &c)
		s.byType[typ] = c
	}
	return out
}

// curve is job's curve on node type typ, from *cached when still valid
// (updated otherwise).
func (a *JPA) curve(job int, typ string, cached *cachedCurve) allocator.Curve {
	j := a.jobs[job]
	s := &a.st[job]
	if len(s.profile) == 0 && a.shareUnmeasured && a.priors == nil {
		// Nothing measured: the prediction from the group's siblings,
		// the same for all the group's unmeasured jobs (unless names or
		// jobs' own priors tell them apart: then each job's own cache).
		k := unmeasuredKey{a.groups[job], j.Model, typ, j.MinNodes, j.MaxNodes}
		c := a.unmeasured[k]
		if !a.valid(c, 0) {
			c = a.predict(job, typ, nil, 0)
			a.unmeasured[k] = c
		}
		return c.curve
	}
	if !a.valid(*cached, s.profileGen) {
		*cached = a.predict(job, typ, s.profile, s.profileGen)
	}
	return cached.curve
}

// valid: c was predicted with the current library, the profile of
// generation profileGen and, if it is the prior, the current prior scale.
func (a *JPA) valid(c cachedCurve, profileGen int) bool {
	return c.curve != nil && !a.uncached && c.libGen == a.libGen && c.profileGen == profileGen &&
		(c.prior == jpa.PriorScales{} || c.prior == a.priorTop)
}

// predict is job's curve from obs (its profile of generation profileGen)
// and the current library: jpa.Advisor's.
func (a *JPA) predict(job int, typ string, obs []jpa.Observation, profileGen int) cachedCurve {
	j := a.jobs[job]
	v := jpa.TrialView{ID: j.Name, Group: a.groups[job], Model: j.Model, MinNodes: j.MinNodes, MaxNodes: j.MaxNodes, Observations: obs}
	if a.priors != nil && len(a.priors[job]) > 0 {
		v.Prior, v.PriorSigma = a.priors[job], a.opts.JobPriorSigma
	}
	a.stats.Predictions++
	c := cachedCurve{libGen: a.libGen, profileGen: profileGen}
	var fromPrior bool
	if c.curve, fromPrior = a.advisor().Curve(v, a.lib, typ, a.priorTop); fromPrior {
		c.prior = a.priorTop
	}
	return c
}
