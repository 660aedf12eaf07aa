package allocator

import (
	"fmt"
	"math"
)

// Validate checks the problem and returns an error wrapping
// ErrInvalidProblem that names the trial or node and the field at fault.
func (p *Problem) Validate() error {
	if p.Lookahead <= 0 {
		return invalid("lookahead: %v must be positive", p.Lookahead)
	}
	switch p.objective() {
	case ObjectiveThroughput, ObjectiveEfficiency, ObjectiveWeighted:
	default:
		return invalid("objective: %q is not one of throughput, efficiency, weighted", p.Objective)
	}
	nodeIdx := make(map[string]int, len(p.Nodes))
	for i, n := range p.Nodes {
		if n.ID == "" {
			return invalid("nodes[%d].id: empty", i)
		}
		if j, dup := nodeIdx[n.ID]; dup {
			return invalid("node %q: duplicate id (nodes[%d] and nodes[%d])", n.ID, j, i)
		}
		nodeIdx[n.ID] = i
	}
	trialIdx := make(map[string]int, len(p.Trials))
	held := 0
	for i := range p.Trials {
		held += len(p.Trials[i].Nodes)
	}
	holder := make(map[string]int, held) // node id → index of the trial holding it
	for i := range p.Trials {
		t := &p.Trials[i]
		if t.ID == "" {
			return invalid("trials[%d].id: empty", i)
		}
		if j, dup := trialIdx[t.ID]; dup {
			return invalid("trial %q: duplicate id (trials[%d] and trials[%d])", t.ID, j, i)
		}
		trialIdx[t.ID] = i
		if err := t.validate(); err != nil {
			return err
		}
		for _, id := range t.Nodes {
			if other, ok := holder[id]; ok {
				if other == i {
					return invalid("trial %q: nodes: %q listed twice", t.ID, id)
				}
				return invalid("node %q: held by trial %q and trial %q", id, p.Trials[other].ID, t.ID)
			}
			holder[id] = i
		}
		if err := t.validateCurrentTypes(p.Nodes, nodeIdx); err != nil {
			return err
		}
	}
	return nil
}

func (t *Trial) validate() error {
	switch {
	case t.MinNodes < 1:
		return invalid("trial %q: min_nodes: %d must be at least 1", t.ID, t.MinNodes)
	case t.MaxNodes < t.MinNodes:
		return invalid("trial %q: min_nodes %d > max_nodes %d", t.ID, t.MinNodes, t.MaxNodes)
	case !finiteNonNeg(t.RescaleUpCost):
		return invalid("trial %q: rescale_up_s: %v must be a finite non-negative number of seconds", t.ID, t.RescaleUpCost)
	case !finiteNonNeg(t.RescaleDownCost):
		return invalid("trial %q: rescale_down_s: %v must be a finite non-negative number of seconds", t.ID, t.RescaleDownCost)
	case !finiteNonNeg(t.Weight):
		return invalid("trial %q: weight: %v must be finite and non-negative", t.ID, t.Weight)
	}
	if len(t.CurvesByType) == 0 {
		return validateCurve(t.Curve, t, "")
	}
	if len(t.Curve) > 0 {
		return invalid("trial %q: curve and curves_by_type are both set; give one", t.ID)
	}
	for typ, c := range t.CurvesByType {
		if err := validateCurve(c, t, typ); err != nil {
			return err
		}
	}
	return nil
}

// validateCurve checks the curve c of trial t for node type typ ("" for
// Trial.Curve). The field name is formatted only on failure: problems of
// 10,000 trials with a curve per type are validated before every solve.
func validateCurve(c Curve, t *Trial, typ string) error {
	field := func() string {
		if len(t.CurvesByType) == 0 {
			return "curve"
		}
		return fmt.Sprintf("curves_by_type[%q]", typ)
	}
	if len(c) == 0 {
		return invalid("trial %q: %s: empty", t.ID, field())
	}
	prev := 0
	for i, pt := range c {
		if pt.Nodes <= prev {
			return invalid("trial %q: %s[%d].nodes: %d must be positive and greater than the previous point's %d", t.ID, field(), i, pt.Nodes, prev)
		}
		if !finiteNonNeg(pt.Throughput) {
			return invalid("trial %q: %s[%d].throughput: %v must be finite and non-negative", t.ID, field(), i, pt.Throughput)
		}
		prev = pt.Nodes
	}
	if last := c[len(c)-1].Nodes; last < t.MaxNodes {
		return invalid("trial %q: %s: ends at %d nodes and does not cover max_nodes %d", t.ID, field(), last, t.MaxNodes)
	}
	return nil
}

// validateCurrentTypes checks that a trial's current nodes still in the
// pool are of one type the trial can use.
func (t *Trial) validateCurrentTypes(nodes []Node, nodeIdx map[string]int) error {
	typ, first := "", ""
	for _, id := range t.Nodes {
		i, ok := nodeIdx[id]
		if !ok {
			continue // departed
		}
		nt := nodes[i].Type
		if first == "" {
			typ, first = nt, id
			continue
		}
		if nt != typ {
			return invalid("trial %q: nodes: holds %q of type %q and %q of type %q (one type per trial)", t.ID, first, typ, id, nt)
		}
	}
	if first != "" && len(t.CurvesByType) > 0 {
		if _, ok := t.CurvesByType[typ]; !ok {
			return invalid("trial %q: nodes: holds %q of type %q but curves_by_type has no curve for it", t.ID, first, typ)
		}
	}
	return nil
}

func (p *Problem) objective() Objective {
	if p.Objective == "" {
		return ObjectiveThroughput
	}
	return p.Objective
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidProblem}, args...)...)
}
