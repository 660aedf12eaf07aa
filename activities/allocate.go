package activities

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Allocate predicts every trial's curve with the JPA and decides the
// allocation with the allocator. Pools mix models whose samples are not
// comparable (an ImageNet sample is not a CIFAR one), so it maximises
// total speedup (allocator.ObjectiveEfficiency), which is also what makes
// a trial's unmeasured prior (priorCurve) comparable with measured ones. Curves carry the JPA's optimism on uncertain counts (bounded per
// trial), so the allocator sometimes tries them.
func (a *Activities) Allocate(ctx context.Context, in workflows.AllocateInput) (workflows.AllocateResult, error) {
	start := a.now()
	p := allocator.Problem{Lookahead: in.Lookahead, Objective: allocator.ObjectiveEfficiency}
	if p.Lookahead <= 0 {
		p.Lookahead = workflows.DefaultLookahead
	}
	for _, n := range in.Nodes {
		p.Nodes = append(p.Nodes, allocator.Node{ID: n.ID, Type: n.Type, IdleUntil: n.IdleUntil, Host: n.Host})
	}
	lib, err := a.library(in.Trials)
	if err != nil {
		return workflows.AllocateResult{}, err
	}
	types := nodeTypes(in)
	for _, t := range in.Trials {
		tr, err := a.problemTrial(t, lib, types)
		if err != nil {
			return workflows.AllocateResult{}, err
		}
		p.Trials = append(p.Trials, tr)
	}
	res, err := allocator.Solve(&p, &allocator.Settings{Formulation: allocator.Formulation(in.Formulation), TimeLimit: 10 * time.Second})
	if err != nil {
		return workflows.AllocateResult{}, fmt.Errorf("pool %s: %w", in.Pool, err)
	}
	out := workflows.AllocateResult{Summary: workflows.SolveSummary{
		At:          start,
		Formulation: string(res.Formulation),
		Status:      string(res.Status),
		Objective:   res.Objective,
		SolveMillis: float64(res.SolveTime.Microseconds()) / 1000,
		Trials:      len(p.Trials),
		Nodes:       len(p.Nodes),
	}}
	for _, al := range res.Allocations {
		out.Summary.NodesUsed += al.Count
		out.Assignments = append(out.Assignments, workflows.TrialAssignment{
			TrialID: al.TrialID, Nodes: al.Nodes, NodeType: al.NodeType, Reason: string(al.Reason),
		})
	}
	return out, nil
}

func nodeTypes(in workflows.AllocateInput) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range in.Nodes {
		if !seen[n.Type] {
			seen[n.Type] = true
			out = append(out, n.Type)
		}
	}
	return out
}

// library is the configured prior plus the measured trials of the pool
// as curves of their campaigns (siblings share a model), at most
// jpa.DefaultSiblingsPerGroup per campaign and node type.
func (a *Activities) library(trials []workflows.PoolTrial) (*jpa.Library, error) {
	var curves []jpa.PriorCurve
	for _, t := range trials {
		byType := map[string][]jpa.Point{}
		var order []string
		for _, pt := range t.Profile {
			if _, ok := byType[pt.NodeType]; !ok {
				order = append(order, pt.NodeType)
			}
			byType[pt.NodeType] = append(byType[pt.NodeType], jpa.Point{Nodes: pt.Nodes, Throughput: pt.Throughput})
		}
		for _, typ := range order {
			curves = append(curves, jpa.PriorCurve{
				Name:     t.Registration.TrialID + "@" + typ,
				NodeType: typ,
				Group:    t.Registration.CampaignID,
				Points:   byType[typ],
			})
		}
	}
	curves = append(append([]jpa.PriorCurve(nil), a.Library...), jpa.Representatives(curves, jpa.DefaultSiblingsPerGroup)...)
	lib, err := jpa.NewLibrary(curves)
	if err != nil {
		return nil, fmt.Errorf("building the JPA library: %w", err)
	}
	return lib, nil
}

// problemTrial turns a registered trial into the allocator's view, with a
// curve per node type it may use.
func (a *Activities) problemTrial(t workflows.PoolTrial, lib *jpa.Library, types []string) (allocator.Trial, error) {
	reg := t.Registration
	tr := allocator.Trial{
		ID:              reg.TrialID,
		Nodes:           t.Nodes,
		MinNodes:        reg.MinNodes,
		MaxNodes:        reg.MaxNodes,
		RescaleUpCost:   reg.RescaleUpCost.Seconds(),
		RescaleDownCost: reg.RescaleDownCost.Seconds(),
	}
	if t.RescaleUpCost > 0 {
		tr.RescaleUpCost = t.RescaleUpCost
	}
	if t.RescaleDownCost > 0 {
		tr.RescaleDownCost = t.RescaleDownCost
	}
	var obs []jpa.Observation
	for _, pt := range t.Profile {
		obs = append(obs, jpa.Observation{Nodes: pt.Nodes, NodeType: pt.NodeType, Throughput: pt.Throughput, Sigma: pt.Spread})
	}
	use := types
	if reg.NodeType != "" {
		use = []string{reg.NodeType}
	}
	prior := a.archPrior(reg)
	if len(use) == 0 {
		// No idle node at all: any curve will do, nothing can be given.
		tr.Curve = priorCurve(reg.MaxNodes)
		return tr, nil
	}
	tr.CurvesByType = map[string]allocator.Curve{}
	for _, typ := range use {
		c, err := predictCurve(obs, lib, reg, typ, prior, a.ArchPriorSigma)
		if err != nil {
			return tr, err
		}
		tr.CurvesByType[typ] = c
	}
	return tr, nil
}

// archPrior is the trial's curve predicted from its architecture, nil
// without an ArchPrior, an architecture, or a usable prediction.
func (a *Activities) archPrior(reg workflows.RegisterTrial) []jpa.Point {
	if a.ArchPrior == nil || reg.Arch == "" {
		return nil
	}
	c, err := a.ArchPrior.Curve(reg.Arch, reg.MaxNodes)
	if err != nil || len(c) != reg.MaxNodes {
		return nil
	}
	pts := make([]jpa.Point, len(c))
	for i, x := range c {
		if !(x > 0) || math.IsInf(x, 0) {
			return nil
		}
		pts[i] = jpa.Point{Nodes: i + 1, Throughput: x}
	}
	return pts
}

// predictCurve is the trial's optimistic curve on one node type: the
// JPA's prediction (from prior, its architecture's curve, before it is
// measured), or the n^0.9 prior while nothing is known of it or its
// campaign.
func predictCurve(obs []jpa.Observation, lib *jpa.Library, reg workflows.RegisterTrial, typ string, prior []jpa.Point, priorSigma float64) (allocator.Curve, error) {
	q := jpa.Query{MinNodes: reg.MinNodes, MaxNodes: reg.MaxNodes, NodeType: typ, Group: reg.CampaignID, Self: reg.TrialID}
	if len(prior) > 0 {
		q.Prior, q.PriorSigma = prior, priorSigma
	}
	pred, err := jpa.Predict(obs, lib, q, nil)
	switch {
	case err == nil:
		// AllocatorCurve(true) applies the JPA's bounded optimism once.
		return pred.AllocatorCurve(true), nil
	case errors.Is(err, jpa.ErrNoData), errors.Is(err, jpa.ErrNoTypeRatio):
		return priorCurve(reg.MaxNodes), nil
	default:
		return nil, fmt.Errorf("trial %s: predicting its curve on %q: %w", reg.TrialID, typ, err)
	}
}

// priorCurve is what a trial is assumed to do before anything is measured:
// speedup n^0.9, mildly sublinear as most data-parallel training is, so
// that unmeasured trials share nodes (and all get measured) rather than
// tie.
func priorCurve(maxNodes int) allocator.Curve {
	c := make(allocator.Curve, 0, maxNodes)
	for n := 1; n <= maxNodes; n++ {
		c = append(c, allocator.Point{Nodes: n, Throughput: math.Pow(float64(n), 0.9)})
	}
	return c
}
