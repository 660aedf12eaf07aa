package searchproto

// The best of a session: the trials no other dominates, with their
// parameters, kept as results come in so that a front request can answer
// them at any time. Memory is bounded: the front (at most MaxFront
// trials), the parameters of the trials in flight, and those of paused
// trials a continue may resume (at most MaxPaused).

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// MaxFront bounds the trials a session keeps on its front, as a
// campaign's (gleaner.MaxParetoFront): beyond it the most crowded goes
// (the smallest crowding distance, NSGA-II's), so the front's extremes
// stay. A front request's exact hypervolume is quadratic in the front's
// size and more above two objectives, which a larger bound would make
// slow.
const MaxFront = 1000

// MaxPaused bounds the paused trials (completed at a create's or a
// continue's budget) whose parameters a session keeps for a continue:
// beyond it the longest paused loses them, and if continued it shows on
// the front without parameters.
const MaxPaused = 10_000

// Front is what a front request answers: the search's best trials. For a
// search of several objectives or with constraints they are its Pareto
// front under constrained domination (rank 0: a feasible trial dominates
// every infeasible one, the least violation wins among infeasible ones),
// with the front's hypervolume; for a search of one objective, the best
// trial (the first to reach the best value).
type Front struct {
	// Trials are best first by the first objective (feasible ones first),
	// then by id.
	Trials []FrontTrial `json:"trials"`
	// Thinned counts the trials dropped from a front of more than
	// MaxFront, the most crowded first.
	Thinned int `json:"thinned,omitempty"`
	// Hypervolume is the volume of objective space that the front's
	// feasible trials dominate up to ReferencePoint (0 without one);
	// only for a search of several objectives or with constraints.
	Hypervolume *float64 `json:"hypervolume,omitempty"`
	// ReferencePoint is the config's reference_point, or, with
	// ReferenceDerived, one derived from the front (hpo.Goals.
	// ReferencePoint); nil while the front has no feasible trial.
	ReferencePoint   []float64 `json:"reference_point,omitempty"`
	ReferenceDerived bool      `json:"reference_derived,omitempty"`
}

// FrontTrial is one trial of the front and its best result, written as
// the caller reported it: metric (one objective) or values (several),
// and constraints with whether it meets them all.
type FrontTrial struct {
	ID          string     `json:"id"`
	Params      hpo.Params `json:"params,omitempty"`
	Metric      *float64   `json:"metric,omitempty"`
	Values      []float64  `json:"values,omitempty"`
	Constraints []*float64 `json:"constraints,omitempty"`
	Feasible    *bool      `json:"feasible,omitempty"`
}

// pending is a trial whose parameters the session keeps: in flight, or
// paused at a budget.
type pending struct {
	Params hpo.Params `json:"params,omitempty"`
	Budget float64    `json:"budget,omitempty"`
}

// pausedTrial is a paused trial's parameters, oldest first.
type pausedTrial struct {
	ID     string     `json:"id"`
	Params hpo.Params `json:"params,omitempty"`
}

// frontEntry is a front's trial as the session compares it: its result,
// and once computed its total violation and its values to minimise
// (each offer compares with every entry).
type frontEntry struct {
	id     string
	params hpo.Params
	result hpo.Result
	viol   float64
	key    []float64
}

// best keeps a session's front and the parameters it needs to fill it.
type best struct {
	objs     *objectives
	ref      []float64 // the config's reference point; nil: derived
	front    []frontEntry
	thinned  int
	answered *Front             // the last answer, until the front changes
	inFlight map[string]pending // asked or running
	paused   []pausedTrial      // oldest first, at most MaxPaused
}

func newBest(objs *objectives, ref []float64) *best {
	return &best{objs: objs, ref: ref, inFlight: map[string]pending{}}
}

// asked books the parameters of the trials the searcher's actions ask
// for: a create's own, a continue's those it had.
func (b *best) asked(acts []Action) {
	for _, a := range acts {
		switch {
		case a.Create != nil:
			b.inFlight[a.Create.ID] = pending{Params: a.Create.Params, Budget: a.Create.Budget}
		case a.Continue != nil:
			id := a.Continue.TrialID
			b.inFlight[id] = pending{Params: b.params(id), Budget: a.Continue.Budget}
			b.paused = slices.DeleteFunc(b.paused, func(p pausedTrial) bool { return p.ID == id })
		}
	}
}

// params finds a trial's parameters: in flight, on the front or paused.
func (b *best) params(id string) hpo.Params {
	if p, ok := b.inFlight[id]; ok {
		return p.Params
	}
	if i := slices.IndexFunc(b.front, func(e frontEntry) bool { return e.id == id }); i >= 0 {
		return b.front[i].params
	}
	if i := slices.IndexFunc(b.paused, func(p pausedTrial) bool { return p.ID == id }); i >= 0 {
		return b.paused[i].Params
	}
	return nil
}

// ended forgets a trial's parameters, unless it paused at its budget
// (completed there: a continue may resume it).
func (b *best) ended(id string, outcome hpo.Outcome) {
	p, ok := b.inFlight[id]
	delete(b.inFlight, id)
	if !ok || outcome != hpo.OutcomeCompleted || p.Budget <= 0 {
		return
	}
	b.paused = append(b.paused, pausedTrial{ID: id, Params: p.Params})
	if len(b.paused) > MaxPaused {
		b.paused = slices.Delete(b.paused, 0, len(b.paused)-MaxPaused)
	}
}

// offer enters a trial's result in the front when it has every
// objective and nothing there dominates it or equals it (the earlier
// trial keeps its place), and drops what it dominates. The trial's own
// earlier result stays when it dominates or equals the new one, as one
// objective's best never gets worse.
func (b *best) offer(id string, r hpo.Result) {
	if !r.Complete() {
		return
	}
	g := b.objs.goals
	e := b.entry(id, b.params(id), r)
	for _, f := range b.front {
		if dominates(f, e) || f.viol == e.viol && slices.Equal(f.key, e.key) {
			return
		}
	}
	b.front = slices.DeleteFunc(b.front, func(f frontEntry) bool { return f.id == id || dominates(e, f) })
	b.front = append(b.front, e)
	b.answered = nil
	for len(b.front) > MaxFront {
		rs := make([]hpo.Result, len(b.front))
		for i, f := range b.front {
			rs[i] = f.result
		}
		d := g.Crowding(rs)
		worst := 0
		for i := range d {
			if d[i] < d[worst] || d[i] == d[worst] && idCompare(b.front[i].id, b.front[worst].id) > 0 {
				worst = i
			}
		}
		b.front = slices.Delete(b.front, worst, worst+1)
		b.thinned++
	}
}

// entry is a result as the front compares it.
func (b *best) entry(id string, params hpo.Params, r hpo.Result) frontEntry {
	e := frontEntry{id: id, params: params, result: r, viol: b.objs.goals.Violation(r), key: make([]float64, len(r.Values))}
	for i, v := range r.Values {
		if b.objs.goals.Modes[i] == "max" {
			v = -v
		}
		e.key[i] = v
	}
	return e
}

// dominates is hpo.Goals.Dominates (constrained domination) on entries'
// precomputed violations and values, for results with every value.
func dominates(a, b frontEntry) bool {
	if a.viol != b.viol {
		return a.viol < b.viol
	}
	if a.viol > 0 {
		return false // equally infeasible
	}
	better := false
	for i := range a.key {
		if a.key[i] > b.key[i] {
			return false
		}
		better = better || a.key[i] < b.key[i]
	}
	return better
}

// answer is the front as a front request answers it, computed again only
// when the front has changed (its exact hypervolume takes a while for a
// large front of three objectives or more).
func (b *best) answer() *Front {
	if b.answered == nil {
		b.answered = b.compute()
	}
	return b.answered
}

func (b *best) compute() *Front {
	g := b.objs.goals
	f := &Front{Trials: []FrontTrial{}, Thinned: b.thinned}
	entries := slices.Clone(b.front)
	max := g.Modes[0] == "max"
	slices.SortStableFunc(entries, func(x, y frontEntry) int {
		fx, fy := g.Feasible(x.result), g.Feasible(y.result)
		if fx != fy {
			if fx {
				return -1
			}
			return 1
		}
		c := cmp.Compare(x.result.Values[0], y.result.Values[0])
		if max {
			c = -c
		}
		return cmp.Or(c, idCompare(x.id, y.id))
	})
	rs := make([]hpo.Result, len(entries))
	for i, e := range entries {
		rs[i] = e.result
		f.Trials = append(f.Trials, b.trial(e))
	}
	if !b.objs.vector() {
		return f
	}
	f.ReferencePoint = b.ref
	if f.ReferencePoint == nil {
		f.ReferencePoint, f.ReferenceDerived = g.ReferencePoint(rs), true
	}
	hv := 0.0
	if f.ReferencePoint != nil {
		hv = g.Hypervolume(rs, f.ReferencePoint)
	}
	f.Hypervolume = &hv
	return f
}

// trial writes an entry as the caller reported its result.
func (b *best) trial(e frontEntry) FrontTrial {
	t := FrontTrial{ID: e.id, Params: e.params}
	if b.objs.several() {
		t.Values = slices.Clone(e.result.Values)
	} else {
		v := e.result.Values[0]
		t.Metric = &v
	}
	if len(b.objs.constraints) > 0 {
		t.Constraints = numbers(e.result.Constraints)
		feasible := b.objs.goals.Feasible(e.result)
		t.Feasible = &feasible
	}
	return t
}

// frontState is the front and the parameters kept, in a session's
// snapshot.
type frontState struct {
	Trials   []FrontTrial       `json:"trials"`
	Thinned  int                `json:"thinned,omitempty"`
	InFlight map[string]pending `json:"in_flight,omitempty"`
	Paused   []pausedTrial      `json:"paused,omitempty"`
}

func (b *best) state() *frontState {
	s := &frontState{Trials: []FrontTrial{}, Thinned: b.thinned, InFlight: b.inFlight, Paused: b.paused}
	for _, e := range b.front {
		s.Trials = append(s.Trials, b.trial(e))
	}
	return s
}

// bestFrom is a session's best as its snapshot had it (nil: a snapshot
// from before sessions kept one: an empty front, no parameters). The
// front's results must be this search's.
func bestFrom(objs *objectives, ref []float64, s *frontState) (*best, error) {
	b := newBest(objs, ref)
	if s == nil {
		return b, nil
	}
	b.thinned, b.paused = s.Thinned, s.Paused
	if s.InFlight != nil {
		b.inFlight = s.InFlight
	}
	for i, t := range s.Trials {
		r := hpo.Result{Values: t.Values}
		if t.Metric != nil {
			r.Values = []float64{*t.Metric}
		}
		if len(objs.constraints) > 0 {
			r.Constraints = floats(t.Constraints)
		}
		if len(r.Values) != len(objs.names) || len(t.Constraints) != len(objs.constraints) || (t.Metric != nil) == objs.several() || !r.Complete() {
			return nil, fmt.Errorf("front: trials[%d] (%s): not a result of this search's %s and %s",
				i, t.ID, count(len(objs.names), "objective"), count(len(objs.constraints), "constraint"))
		}
		b.front = append(b.front, b.entry(t.ID, t.Params, r))
	}
	return b, nil
}

// idCompare orders trial ids by number (t00009 before t100000), other
// ids after them as strings.
func idCompare(a, b string) int {
	na, oka := trialNumber(a)
	nb, okb := trialNumber(b)
	switch {
	case oka && okb:
		return cmp.Compare(na, nb)
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	}
	return cmp.Compare(a, b)
}
