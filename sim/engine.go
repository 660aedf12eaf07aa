package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// Run replays events with jobs under cfg in simulated time and measures
// the run (see Metrics). It is deterministic except for solver times.
//
// The model: idle nodes come from events (and cfg.Initial); jobs become
// active at their Submit time and leave when done. At every instant where
// a node event, a submission or a completion happens, the allocator
// re-decides the node ids of every active job (over all idle nodes, with
// each job's current nodes, bounds, curve, rescale costs and weight), and
// its decision is applied as given (no migration: the allocator's
// mapping). A job on k nodes trains at Curve(k) samples/s (at its curve
// on their type with CurvesByType: cfg.NodeTypes). Changing the
// count of a running job from c to k ≠ c loses RescaleUp (k > c) or
// RescaleDown (k < c) seconds of progress at the old rate Curve(c) — the
// cost the allocation problem charges (DESIGN.md); starting from 0 is
// free. Lost progress is re-trained before the job's sample count moves
// again, so samples never decrease, and a job completes at the exact
// instant its useful samples reach TotalSamples. A busy event that takes
// nodes from a job shrinks it at that instant, before the allocator runs:
// to the nodes it keeps, or to 0 (releasing them) if fewer than MinNodes
// remain, at the same RescaleDown cost. The allocator is told when each
// idle node will be taken back as cfg.IdleEstimate says (nothing by
// default), with T_fwd = cfg.Lookahead or, with cfg.DeriveLookahead,
// allocator.LookaheadFromIdle over those estimates.
func Run(events []Event, jobs []Job, cfg Config) (*Result, error) {
	e, err := newEngine(events, jobs, cfg)
	if err != nil {
		return nil, err
	}
	if err := e.run(); err != nil {
		return nil, err
	}
	e.res.finish(jobs, e.solverMs, e.lookaheads)
	return e.res, nil
}

type jobState struct {
	nodes []string
	// rate is the true samples/s at len(nodes).
	rate float64
	// debt is progress lost to rescales, still to be re-trained.
	debt float64
	// finishAt is the predicted completion instant (+Inf when not
	// running).
	finishAt float64
	active   bool
	done     bool
	ran      bool // has held nodes
}

type engine struct {
	cfg      Config
	events   []Event
	jobs     []Job
	settings allocator.Settings
	tfwd     time.Duration
	start    float64
	end      float64

	now      float64
	idle     map[string]struct{}
	idleList []allocator.Node // sorted by id; nil until first asked for
	owner    map[string]int   // node id → index of the job holding it
	st       []jobState
	active   []int // active jobs in submission order
	order    []int // job indices by submit time
	nextSub  int
	nextEv   int
	res      *Result
	solverMs []float64
	// estimator tells the allocator when idle nodes are taken back (nil:
	// it is told nothing); lookaheads are the T_fwd of every decision,
	// in seconds.
	estimator  *idleEstimator
	lookaheads []float64
	// lastDecision is when the allocator last had its chance (an event,
	// a submission, a completion, or an allocation period).
	lastDecision float64
}

func newEngine(events []Event, jobs []Job, cfg Config) (*engine, error) {
	if err := validateInput(events, jobs, &cfg); err != nil {
		return nil, err
	}
	e := &engine{
		cfg:       cfg,
		events:    events,
		jobs:      jobs,
		settings:  allocator.Settings{Formulation: cfg.Policy, TimeLimit: cfg.TimeLimit},
		tfwd:      time.Duration(cfg.Lookahead * float64(time.Second)),
		start:     cfg.Start,
		end:       cfg.End,
		idle:      map[string]struct{}{},
		owner:     map[string]int{},
		st:        make([]jobState, len(jobs)),
		order:     make([]int, len(jobs)),
		res:       &Result{PerJob: make([]JobMetrics, len(jobs))},
		estimator: newIdleEstimator(events, cfg.IdleEstimate),
	}
	if e.cfg.Clock == nil {
		e.cfg.Clock = time.Now
	}
	if e.settings.Formulation == "" {
		e.settings.Formulation = allocator.FormulationCompact
	}
	for i := range jobs {
		e.order[i] = i
		e.st[i].finishAt = math.Inf(1)
		e.res.PerJob[i].Name = jobs[i].Name
	}
	sort.SliceStable(e.order, func(a, b int) bool { return jobs[e.order[a]].Submit < jobs[e.order[b]].Submit })
	for _, id := range cfg.Initial {
		e.makeIdle(id, -1)
	}
	e.res.Metrics.Policy = e.settings.Formulation
	e.res.Metrics.Start, e.res.Metrics.End = e.start, e.end
	return e, nil
}

func (e *engine) run() error {
	// Events before the window only shape the idle set.
	for e.nextEv < len(e.events) && e.events[e.nextEv].Time < e.start {
		ev := e.events[e.nextEv]
		for _, id := range ev.Busy {
			delete(e.idle, id)
		}
		for _, id := range ev.Idle {
			e.makeIdle(id, e.nextEv)
		}
		e.nextEv++
	}
	e.now = e.start
	e.sample()
	e.lastDecision = e.start
	for {
		happens := min(e.nextEventTime(), e.nextSubmitTime(), e.nextFinishTime())
		t := min(happens, e.nextReconsiderTime(), e.end)
		e.advance(t)
		e.completeDue()
		if t >= e.end {
			break
		}
		if t < happens {
			// Only the allocation period is due: decide again if what the
			// allocator is told changed (production allocates every
			// period; with unchanged inputs it would decide the same).
			if e.cfg.Reconsider() {
				if err := e.decide(); err != nil {
					return err
				}
				e.sample()
			}
			e.lastDecision = t
			continue
		}
		for e.nextEv < len(e.events) && e.events[e.nextEv].Time <= t {
			e.applyEvent(e.events[e.nextEv])
			e.nextEv++
		}
		for e.nextSub < len(e.order) && e.nextSubmitTime() <= t {
			j := e.order[e.nextSub]
			e.st[j].active = true
			e.res.PerJob[j].Submitted = true
			e.active = append(e.active, j)
			e.nextSub++
		}
		if err := e.decide(); err != nil {
			return err
		}
		e.lastDecision = t
		e.sample()
		if e.cfg.Progress != nil {
			e.cfg.Progress(t, e.start, e.end)
		}
	}
	e.sample()
	return nil
}

func (e *engine) nextEventTime() float64 {
	if e.nextEv < len(e.events) {
		return e.events[e.nextEv].Time
	}
	return math.Inf(1)
}

// nextReconsiderTime is when the allocation period after the last
// decision ends (+Inf without Config.AllocatePeriod and Reconsider).
func (e *engine) nextReconsiderTime() float64 {
	if e.cfg.AllocatePeriod <= 0 || e.cfg.Reconsider == nil || len(e.active) == 0 {
		return math.Inf(1)
	}
	return e.lastDecision + e.cfg.AllocatePeriod
}

func (e *engine) nextSubmitTime() float64 {
	if e.nextSub < len(e.order) {
		return max(e.jobs[e.order[e.nextSub]].Submit, e.start)
	}
	return math.Inf(1)
}

func (e *engine) nextFinishTime() float64 {
	t := math.Inf(1)
	for _, j := range e.active {
		t = min(t, e.st[j].finishAt)
	}
	return t
}

// advance moves simulated time to t, accruing node-time and progress.
func (e *engine) advance(t float64) {
	dt := t - e.now
	if dt <= 0 {
		return
	}
	m := &e.res.Metrics
	m.IdleNodeSeconds += float64(len(e.idle)) * dt
	for _, j := range e.active {
		st := &e.st[j]
		n := len(st.nodes)
		if n == 0 {
			continue
		}
		held := float64(n) * dt
		e.res.PerJob[j].NodeSeconds += held
		m.AllocatedNodeSeconds += held
		if e.cfg.NodeTypes != nil {
			if e.res.NodeSecondsByType == nil {
				e.res.NodeSecondsByType = map[string]float64{}
			}
			e.res.NodeSecondsByType[e.cfg.NodeTypes[st.nodes[0]]] += held
		}
		pj := &e.res.PerJob[j]
		if t >= st.finishAt {
			pj.Samples, st.debt = e.jobs[j].TotalSamples, 0
		} else {
			trained := st.rate * dt
			repaid := min(trained, st.debt)
			st.debt -= repaid
			pj.Samples = min(pj.Samples+(trained-repaid), e.jobs[j].TotalSamples)
		}
		if e.cfg.Measure != nil {
			e.cfg.Measure(j, n, e.cfg.NodeTypes[st.nodes[0]], e.now, t, pj.Samples)
		}
	}
	e.now = t
}

// completeDue retires the jobs whose completion instant has come.
func (e *engine) completeDue() {
	kept := e.active[:0]
	for _, j := range e.active {
		st := &e.st[j]
		if st.finishAt > e.now {
			kept = append(kept, j)
			continue
		}
		pj := &e.res.PerJob[j]
		pj.Samples, st.debt = e.jobs[j].TotalSamples, 0
		pj.Completed, pj.Finish = true, e.now
		e.setNodes(j, nil)
		st.active, st.done = false, true
	}
	e.active = kept
}

// applyEvent changes the idle set; nodes taken back preempt their jobs.
func (e *engine) applyEvent(ev Event) {
	var hit map[int][]string
	var removed, added []string
	for _, id := range ev.Busy {
		if _, ok := e.idle[id]; !ok {
			e.res.Metrics.IgnoredNodeEvents++
			continue
		}
		delete(e.idle, id)
		removed = append(removed, id)
		if j, ok := e.owner[id]; ok {
			if hit == nil {
				hit = map[int][]string{}
			}
			hit[j] = append(hit[j], id)
		}
	}
	for _, id := range ev.Idle {
		if !e.makeIdle(id, e.nextEv) {
			e.res.Metrics.IgnoredNodeEvents++
			continue
		}
		added = append(added, id)
	}
	e.updateIdleList(removed, added)
	if hit == nil {
		return
	}
	js := make([]int, 0, len(hit))
	for j := range hit {
		js = append(js, j)
	}
	sort.Ints(js)
	for _, j := range js {
		gone := make(map[string]bool, len(hit[j]))
		for _, id := range hit[j] {
			gone[id] = true
		}
		var keep []string
		for _, id := range e.st[j].nodes {
			if !gone[id] {
				keep = append(keep, id)
			}
		}
		if len(keep) < e.jobs[j].MinNodes {
			keep = nil
		}
		e.res.PerJob[j].Preemptions++
		e.loseProgress(j, e.jobs[j].RescaleDown)
		e.setNodes(j, keep)
	}
	if e.cfg.observe != nil {
		e.cfg.observe(e)
	}
}

// makeIdle adds node id to the idle set, idle since events[i] (−1: before
// the first event), and reports whether it was not idle already.
func (e *engine) makeIdle(id string, i int) bool {
	if _, ok := e.idle[id]; ok {
		return false
	}
	e.idle[id] = struct{}{}
	e.estimator.opened(id, i)
	return true
}

// loseProgress charges job j cost seconds of progress at its current rate.
func (e *engine) loseProgress(j int, cost float64) {
	lost := cost * e.st[j].rate
	e.st[j].debt += lost
	e.res.PerJob[j].ProgressLost += lost
}

// setNodes gives job j exactly nodes (nil: none) and updates its rate and
// predicted completion.
func (e *engine) setNodes(j int, nodes []string) {
	st := &e.st[j]
	for _, id := range st.nodes {
		if e.owner[id] == j {
			delete(e.owner, id)
		}
	}
	st.nodes = nodes
	for _, id := range nodes {
		e.owner[id] = j
	}
	st.rate = 0
	st.finishAt = math.Inf(1)
	if k := len(nodes); k > 0 {
		// One type per job (the allocator's rule, kept by preemptions,
		// which only remove nodes); decide checks the job can run on it.
		curve, _ := e.jobs[j].curveOn(e.cfg.NodeTypes[nodes[0]])
		st.rate = curve.At(k)
		if st.rate > 0 {
			need := e.jobs[j].TotalSamples - e.res.PerJob[j].Samples + st.debt
			st.finishAt = e.now + need/st.rate
		}
		if !st.ran {
			st.ran = true
			e.res.PerJob[j].Started = e.now
		}
	}
}

// decide runs the allocator over the active jobs and applies its decision.
func (e *engine) decide() error {
	if len(e.active) == 0 || len(e.idle) == 0 {
		return nil
	}
	nodes := e.estimator.estimate(e.nodes(), e.now)
	tfwd := e.tfwd
	if e.cfg.DeriveLookahead {
		tfwd = allocator.LookaheadFromIdle(nodes, simTime(e.now), e.tfwd)
	}
	e.lookaheads = append(e.lookaheads, tfwd.Seconds())
	p := &allocator.Problem{
		Nodes:     nodes,
		Trials:    make([]allocator.Trial, len(e.active)),
		Lookahead: tfwd,
		Objective: e.cfg.Objective,
	}
	for i, j := range e.active {
		t := trialOf(e.jobs[j])
		t.Nodes = e.st[j].nodes
		if types := e.jobs[j].Types(); types != nil && e.cfg.CurvesByType != nil {
			t.CurvesByType, t.Curve = e.cfg.CurvesByType(j, e.now), nil
		} else if e.cfg.Curves != nil {
			t.Curve = e.cfg.Curves(j, e.now)
			if types != nil {
				// Told the same curve on every type it can run on.
				t.CurvesByType = make(map[string]allocator.Curve, len(types))
				for _, typ := range types {
					t.CurvesByType[typ] = t.Curve
				}
				t.Curve = nil
			}
		}
		p.Trials[i] = t
	}
	if e.cfg.observeProblem != nil {
		e.cfg.observeProblem(e.now, p)
	}
	t0 := e.cfg.Clock()
	res, err := allocator.Solve(p, &e.settings)
	e.solverMs = append(e.solverMs, float64(e.cfg.Clock().Sub(t0))/float64(time.Millisecond))
	if err != nil {
		return fmt.Errorf("sim: allocator (%s) at t=%v with %d jobs and %d idle nodes: %w", e.settings.Formulation, e.now, len(p.Trials), len(p.Nodes), err)
	}
	// Release every changed job's nodes first, so a node moving from a
	// shrinking job to a growing one is free when it is handed over.
	for i, j := range e.active {
		a := res.Allocations[i]
		old := len(e.st[j].nodes)
		if a.Count == old {
			continue
		}
		if old > 0 {
			cost := e.jobs[j].RescaleDown
			if a.Count > old {
				cost = e.jobs[j].RescaleUp
			}
			e.res.PerJob[j].Rescales++
			e.loseProgress(j, cost)
		}
		e.setNodes(j, nil)
	}
	for i, j := range e.active {
		a := res.Allocations[i]
		if a.Count == len(e.st[j].nodes) {
			continue
		}
		for _, id := range a.Nodes {
			if _, ok := e.jobs[j].curveOn(e.cfg.NodeTypes[id]); !ok {
				return fmt.Errorf("sim: allocator gave job %q node %q of type %q, which it has no curve for", e.jobs[j].Name, id, e.cfg.NodeTypes[id])
			}
			if _, ok := e.idle[id]; !ok {
				return fmt.Errorf("sim: allocator gave job %q node %q, which is not idle", e.jobs[j].Name, id)
			}
			if other, ok := e.owner[id]; ok {
				return fmt.Errorf("sim: allocator gave node %q to job %q and job %q", id, e.jobs[other].Name, e.jobs[j].Name)
			}
		}
		e.setNodes(j, a.Nodes)
	}
	if e.cfg.observe != nil {
		e.cfg.observe(e)
	}
	return nil
}

// nodes is the idle set as the allocator sees it, sorted by id.
// updateIdleList keeps the sorted idle list in step with an event that
// removed and added node ids, without sorting the whole set again (a
// year of SWF events moves thousands of nodes at a time).
func (e *engine) updateIdleList(removed, added []string) {
	if e.idleList == nil || len(removed)+len(added) == 0 {
		return
	}
	gone := make(map[string]struct{}, len(removed))
	for _, id := range removed {
		gone[id] = struct{}{}
	}
	sort.Strings(added)
	// A new slice: the old one was handed to the allocator.
	out := make([]allocator.Node, 0, len(e.idleList)-len(removed)+len(added))
	a := 0
	for _, n := range e.idleList {
		if _, ok := gone[n.ID]; ok {
			continue
		}
		for ; a < len(added) && added[a] < n.ID; a++ {
			out = append(out, e.node(added[a]))
		}
		out = append(out, n)
	}
	for ; a < len(added); a++ {
		out = append(out, e.node(added[a]))
	}
	e.idleList = out
}

// nodes is the idle set as the allocator's nodes, sorted by id.
func (e *engine) nodes() []allocator.Node {
	if e.idleList == nil {
		ids := make([]string, 0, len(e.idle))
		for id := range e.idle {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		e.idleList = make([]allocator.Node, len(ids))
		for i, id := range ids {
			e.idleList[i] = e.node(id)
		}
	}
	return e.idleList
}

// node is idle node id as the allocator sees it, with its type.
func (e *engine) node(id string) allocator.Node {
	return allocator.Node{ID: id, Type: e.cfg.NodeTypes[id]}
}

// sample appends the state at the current instant to the series.
func (e *engine) sample() {
	p := SeriesPoint{Time: e.now, Idle: len(e.idle), Used: len(e.owner), Active: len(e.active)}
	for _, j := range e.active {
		p.Rate += e.st[j].rate
	}
	for i := range e.res.PerJob {
		p.Samples += e.res.PerJob[i].Samples
	}
	if n := len(e.res.Series); n > 0 && e.res.Series[n-1].Time == p.Time {
		e.res.Series[n-1] = p
		return
	}
	e.res.Series = append(e.res.Series, p)
}
