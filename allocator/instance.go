package allocator

import (
	"math"
	"sort"
	"time"
)

// instance is a validated problem prepared for the formulations: node
// types indexed, departed nodes dropped, and the value of every allowed
// (type, count) of every trial computed once.
type instance struct {
	p        *Problem
	types    []string       // distinct node types in the pool, sorted
	typeIdx  map[string]int // type → index into types
	capacity []int          // idle nodes per type
	nodeIdx  map[string]int // node id → index into p.Nodes
	trials   []trialInstance
}

type trialInstance struct {
	cur      int   // nodes held now that are still idle (|C_j|)
	curType  int   // type index of those nodes, -1 when cur == 0
	curNodes []int // indices into p.Nodes
	// zero is the value of preempting to (or staying at) 0 nodes:
	// −w·R_dw·r when the trial runs now, else 0.
	zero float64
	// choices are the node types the trial may use now, each with the
	// values of counts min..max that fit the type's capacity.
	choices []typeChoice
	// usableTypes counts the types the trial has a curve for that exist
	// in the pool (for reason codes).
	usableTypes int
}

type typeChoice struct {
	typ    int
	weight float64
	curve  Curve
	min    int
	values []float64 // values[i] = v(min+i)
}

func (c *typeChoice) max() int            { return c.min + len(c.values) - 1 }
func (c *typeChoice) value(k int) float64 { return c.values[k-c.min] }

// prepare validates p and builds its instance.
func prepare(p *Problem) (*instance, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	in := &instance{p: p, typeIdx: map[string]int{}, nodeIdx: make(map[string]int, len(p.Nodes))}
	for i, n := range p.Nodes {
		in.nodeIdx[n.ID] = i
		if _, ok := in.typeIdx[n.Type]; !ok {
			in.typeIdx[n.Type] = -1
			in.types = append(in.types, n.Type)
		}
	}
	sort.Strings(in.types)
	for i, t := range in.types {
		in.typeIdx[t] = i
	}
	in.capacity = make([]int, len(in.types))
	for _, n := range p.Nodes {
		in.capacity[in.typeIdx[n.Type]]++
	}
	lookahead := p.Lookahead.Seconds()
	in.trials = make([]trialInstance, len(p.Trials))
	for j := range p.Trials {
		in.trials[j] = in.prepareTrial(&p.Trials[j], lookahead)
		if err := in.trials[j].checkFinite(&p.Trials[j], in.types); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func (in *instance) prepareTrial(t *Trial, lookahead float64) trialInstance {
	ti := trialInstance{curType: -1}
	for _, id := range t.Nodes {
		if i, ok := in.nodeIdx[id]; ok {
			ti.curNodes = append(ti.curNodes, i)
			ti.curType = in.typeIdx[in.p.Nodes[i].Type]
		}
	}
	ti.cur = len(ti.curNodes)
	for typ := range in.types {
		curve, ok := t.curveFor(in.types[typ])
		if !ok {
			continue
		}
		ti.usableTypes++
		if ti.curType >= 0 && typ != ti.curType {
			continue // a running trial never migrates to another type
		}
		w := in.weight(t, curve)
		rate := 0.0
		if ti.cur >= t.MinNodes {
			rate = curve.At(ti.cur)
		}
		if ti.curType == typ {
			ti.zero = -w * t.RescaleDownCost * rate
		}
		hi := min(t.MaxNodes, in.capacity[typ])
		if hi < t.MinNodes {
			continue
		}
		c := typeChoice{typ: typ, weight: w, curve: curve, min: t.MinNodes, values: make([]float64, hi-t.MinNodes+1)}
		for k := t.MinNodes; k <= hi; k++ {
			cost := 0.0
			switch {
			case k > ti.cur:
				cost = t.RescaleUpCost * rate
			case k < ti.cur:
				cost = t.RescaleDownCost * rate
			}
			c.values[k-t.MinNodes] = w * (lookahead*curve.At(k) - cost)
		}
		ti.choices = append(ti.choices, c)
	}
	return ti
}

func (t *Trial) curveFor(typ string) (Curve, bool) {
	if len(t.CurvesByType) == 0 {
		return t.Curve, true
	}
	c, ok := t.CurvesByType[typ]
	return c, ok
}

// weight is w_j for the problem's objective (see Objective).
func (in *instance) weight(t *Trial, c Curve) float64 {
	switch in.p.objective() {
	case ObjectiveWeighted:
		if t.Weight == 0 {
			return 1
		}
		return t.Weight
	case ObjectiveEfficiency:
		perNode := referenceRate(t, c)
		if perNode <= 0 {
			return 0
		}
		w := t.Weight
		if w == 0 {
			w = 1
		}
		return w / perNode
	default:
		return 1
	}
}

// referenceRate is the per-node throughput at MinNodes on the trial's
// reference type, the one of its curves where that is lowest (c alone
// without CurvesByType): every type's curve is valued in units of it, so
// a type the trial runs faster on is worth more to it (heterogeneity-
// aware placement), while a one-type trial's value is its speedup.
func referenceRate(t *Trial, c Curve) float64 {
	if len(t.CurvesByType) == 0 {
		return c.At(t.MinNodes) / float64(t.MinNodes)
	}
	ref := 0.0
	for _, cv := range t.CurvesByType {
		if r := cv.At(t.MinNodes) / float64(t.MinNodes); r > 0 && (ref == 0 || r < ref) {
			ref = r
		}
	}
	return ref
}

// choice returns the trial's choice for type typ, or nil.
func (ti *trialInstance) choice(typ int) *typeChoice {
	for i := range ti.choices {
		if ti.choices[i].typ == typ {
			return &ti.choices[i]
		}
	}
	return nil
}

// value is the trial's value at k nodes of type typ (any type when k == 0).
func (ti *trialInstance) value(typ, k int) float64 {
	if k == 0 {
		return ti.zero
	}
	return ti.choice(typ).value(k)
}

// decision is what a formulation returns: a count and a type per trial.
type decision struct {
	counts []int
	types  []int // type index; ignored where counts[j] == 0
}

func newDecision(n int) decision {
	return decision{counts: make([]int, n), types: make([]int, n)}
}

// objective sums the trial values of d.
func (in *instance) objective(d decision) float64 {
	total := 0.0
	for j := range in.trials {
		total += in.trials[j].value(d.types[j], d.counts[j])
	}
	return total
}

// result maps d onto node ids and fills in reasons and the objective.
func (in *instance) result(d decision, status Status, f Formulation, start time.Time) *Result {
	r := &Result{
		Allocations: mapNodes(in, d),
		Objective:   in.objective(d),
		Status:      status,
		Formulation: f,
	}
	for j := range r.Allocations {
		if r.Allocations[j].Count == 0 {
			r.Allocations[j].Reason = in.reason(j)
		}
	}
	r.SolveTime = time.Since(start)
	return r
}

// reason says why trial j, left at 0 nodes, got none.
func (in *instance) reason(j int) Reason {
	ti := &in.trials[j]
	if len(in.types) == 0 {
		return ReasonPoolTooSmall
	}
	if ti.usableTypes == 0 {
		return ReasonNoNodeOfType
	}
	if len(ti.choices) == 0 {
		return ReasonPoolTooSmall
	}
	for i := range ti.choices {
		for _, v := range ti.choices[i].values {
			if v > ti.zero {
				return ReasonOutcompeted
			}
		}
	}
	return ReasonNoGain
}

// checkFinite rejects problems whose values overflow (huge throughputs or
// look-aheads, or an efficiency weight from a near-zero throughput): a NaN
// or infinite value would make every comparison in the solvers meaningless.
func (ti *trialInstance) checkFinite(t *Trial, types []string) error {
	if math.IsNaN(ti.zero) || math.IsInf(ti.zero, 0) {
		return invalid("trial %q: rescale_down_s %v × current throughput overflows", t.ID, t.RescaleDownCost)
	}
	for _, c := range ti.choices {
		if math.IsNaN(c.weight) || math.IsInf(c.weight, 0) {
			return invalid("trial %q: curve for type %q: efficiency weight min_nodes / throughput at min_nodes is not finite", t.ID, types[c.typ])
		}
		for i, v := range c.values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return invalid("trial %q: value at %d nodes of type %q is %v: throughput × lookahead or rescale cost × throughput overflows", t.ID, c.min+i, types[c.typ], v)
			}
		}
	}
	return nil
}
