package activities

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Allocate predicts every trial's curve with the JPA and decides the
// allocation with the allocator. Pools mix models whose samples are not
// comparable (an ImageNet sample is not a CIFAR one), so it maximises
// total speedup (allocator.ObjectiveEfficiency). The curves are
// jpa.Advisor's, the policy the simulator follows too: optimistic on
// uncertain counts (bounded per trial), so the allocator sometimes tries
// them, and the scaled n^0.9 prior for a trial nothing is known of.
func (a *Activities) Allocate(ctx context.Context, in workflows.AllocateInput) (workflows.AllocateResult, error) {
	start := a.now()
	p := allocator.Problem{Lookahead: in.Lookahead, Objective: allocator.ObjectiveEfficiency}
	if p.Lookahead <= 0 {
		p.Lookahead = workflows.DefaultLookahead
	}
	for _, n := range in.Nodes {
		p.Nodes = append(p.Nodes, allocator.Node{ID: n.ID, Type: n.Type, IdleUntil: n.IdleUntil, Host: n.Host})
	}
	views := make([]jpa.TrialView, len(in.Trials))
	for i, t := range in.Trials {
		views[i] = a.trialView(t)
		a.calibrate(t.Registration.Arch, views[i])
	}
	adv := a.advisor(in)
	lib, err := adv.Library(views)
	if err != nil {
		return workflows.AllocateResult{}, fmt.Errorf("building the JPA library: %w", err)
	}
	scale := jpa.PriorScale(views)
	types := nodeTypes(in)
	preds := make([]map[string]*jpa.Prediction, len(in.Trials))
	for i, t := range in.Trials {
		var tr allocator.Trial
		tr, preds[i] = problemTrial(t, views[i], adv, lib, scale, types)
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
	points := min(workflows.MaxPredicted, max(4, predictedBudget/max(len(p.Trials), 1)))
	for i, al := range res.Allocations { // in p.Trials order
		out.Summary.NodesUsed += al.Count
		pred := predicted(in.Trials[i], p.Trials[i], preds[i], al, types, points)
		if slices.Equal(pred, in.Trials[i].Predicted) {
			pred = nil // unchanged: the pool keeps it
		}
		ta := workflows.TrialAssignment{
			TrialID: al.TrialID, Nodes: al.Nodes, NodeType: al.NodeType, Reason: string(al.Reason),
			Predicted: pred,
		}
		if len(al.Nodes) > 0 {
			ta.PredictedMetrics = assignedMetrics(a.predictedMetrics(a.archPrediction(in.Trials[i].Registration.Arch), al.NodeType),
				in.Trials[i].PredictedMetrics)
		}
		out.Assignments = append(out.Assignments, ta)
	}
	return out, nil
}

// assignedMetrics are the predicted metrics an assignment carries (m,
// rounded to 4 significant digits), nil where they are the ones the pool
// keeps (kept): each allocation's result is recorded in the pool's
// history, and a calibration that moved in the fifth digit changes
// nothing a trial reports.
func assignedMetrics(m, kept map[string]float64) map[string]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = round4(v)
	}
	if maps.Equal(out, kept) {
		return nil
	}
	return out
}

// predictedBudget bounds the predicted points of one allocation's
// result (about 34 bytes each, recorded in the pool's history): past
// predictedBudget/MaxPredicted trials, each gets fewer (at least 4).
const predictedBudget = 8192

// predicted is the curve the allocator used for a trial (tr, given al)
// at up to k counts spread over [min_nodes, max_nodes], the count given
// among them; on the type of the nodes given, else the first the trial
// may use. Sigma is the JPA's uncertainty at each count (0 where the
// curve is the prior, which has none); the throughput is what the
// allocator used, optimistic where the count is uncertain (jpa.Explore).
// Throughputs are rounded to 4 significant digits: the
// allocation's result is recorded in the pool's history at every solve,
// and a prediction that did not change is left out of it.
func predicted(t workflows.PoolTrial, tr allocator.Trial, preds map[string]*jpa.Prediction, al allocator.Allocation, types []string, k int) []workflows.PredictedThroughput {
	c, typ := tr.Curve, al.NodeType
	if tr.CurvesByType != nil {
		if _, ok := tr.CurvesByType[typ]; !ok {
			switch {
			case t.Registration.NodeType != "":
				typ = t.Registration.NodeType
			case len(types) > 0:
				typ = types[0]
			}
		}
		c = tr.CurvesByType[typ]
	}
	if len(c) == 0 {
		return nil
	}
	lo := max(tr.MinNodes, 1)
	hi := max(tr.MaxNodes, lo)
	counts := spread(lo, hi, k)
	if n := len(al.Nodes); n >= lo && n <= hi && !slices.Contains(counts, n) {
		// Only when the counts are spread out (hi−lo+1 > k): n replaces
		// the nearest inner one, both ends stay.
		j := 1
		for i := 1; i < len(counts)-1; i++ {
			if abs(counts[i]-n) < abs(counts[j]-n) {
				j = i
			}
		}
		counts[j] = n
		slices.Sort(counts)
	}
	measured := map[int]bool{}
	for _, pt := range t.Profile {
		if pt.NodeType == typ {
			measured[pt.Nodes] = true
		}
	}
	out := make([]workflows.PredictedThroughput, 0, len(counts))
	for _, n := range counts {
		pt := workflows.PredictedThroughput{Nodes: n, Throughput: round4(c.At(n)), Measured: measured[n]}
		if pr := preds[typ]; pr != nil {
			if at, ok := pr.At(n); ok && !measured[n] {
				pt.Sigma = round4(at.Sigma)
			}
		}
		out = append(out, pt)
	}
	return out
}

// spread is at most k counts over [lo, hi], both ends among them, evenly
// spaced.
func spread(lo, hi, k int) []int {
	if hi-lo+1 <= k {
		out := make([]int, 0, hi-lo+1)
		for n := lo; n <= hi; n++ {
			out = append(out, n)
		}
		return out
	}
	out := make([]int, 0, k)
	for i := range k {
		n := lo + int(math.Round(float64(i)*float64(hi-lo)/float64(k-1)))
		if len(out) == 0 || n > out[len(out)-1] {
			out = append(out, n)
		}
	}
	return out
}

func abs(x int) int { return max(x, -x) }

// round4 rounds x to 4 significant digits.
func round4(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
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

// advisor is the JPA policy with this worker's library of profiled
// models and the pool's learned curves (LearnedPriors).
func (a *Activities) advisor(in workflows.AllocateInput) jpa.Advisor {
	base := a.Library
	if learned := LearnedPriors(in.Library, in.Trials); len(learned) > 0 {
		base = append(slices.Clone(a.Library), learned...)
	}
	return jpa.Advisor{Base: base, Speeds: a.Speeds}
}

// LearnedPriors are a pool's learned curves as the JPA's profiled
// models: each named as the trial's own measurements (ID@type), of its
// campaign (Group: a sibling of its campaign's later trials), with its
// model and batch (a profile of that model for any campaign). A curve of
// a trial registered now that has measurements on that node type is left
// out: its live measurements stand in for it. Invalid curves (a state
// edited by hand) are left out too, never failing the allocation.
func LearnedPriors(lib []workflows.LearnedCurve, live []workflows.PoolTrial) []jpa.PriorCurve {
	measured := map[string]bool{}
	for _, t := range live {
		for _, p := range t.Profile {
			measured[t.Registration.TrialID+"@"+p.NodeType] = true
		}
	}
	out := make([]jpa.PriorCurve, 0, len(lib))
	for _, c := range lib {
		if measured[c.Name()] {
			continue
		}
		pc := jpa.PriorCurve{Name: c.Name(), Model: c.Model, Batch: c.Batch, NodeType: c.NodeType, Group: c.Campaign}
		ok := len(c.Points) > 0
		for i, p := range c.Points {
			ok = ok && p.Nodes > 0 && p.Throughput > 0 && !math.IsInf(p.Throughput, 0) && (i == 0 || p.Nodes > c.Points[i-1].Nodes)
			pc.Points = append(pc.Points, jpa.Point{Nodes: p.Nodes, Throughput: p.Throughput})
		}
		if ok {
			out = append(out, pc)
		}
	}
	return out
}

// trialView is what the JPA knows of a registered trial: its profile and
// its architecture's predicted curve, if the worker has a throughput
// model.
func (a *Activities) trialView(t workflows.PoolTrial) jpa.TrialView {
	reg := t.Registration
	v := jpa.TrialView{ID: reg.TrialID, Group: reg.CampaignID, MinNodes: reg.MinNodes, MaxNodes: reg.MaxNodes, Model: reg.Model, Batch: reg.Batch}
	for _, pt := range t.Profile {
		v.Observations = append(v.Observations, jpa.Observation{Nodes: pt.Nodes, NodeType: pt.NodeType, Throughput: pt.Throughput, Sigma: pt.Spread})
	}
	if v.Prior = a.archPrior(reg); v.Prior != nil {
		v.PriorSigma = a.ArchPriorSigma
	}
	return v
}

// problemTrial turns a registered trial into the allocator's view, with a
// curve per node type it may use.
// problemTrial is the trial as the allocator sees it, and the JPA's
// predictions its curves came from, by node type (nil where the prior).
func problemTrial(t workflows.PoolTrial, v jpa.TrialView, adv jpa.Advisor, lib *jpa.Library, scale jpa.PriorScales, types []string) (allocator.Trial, map[string]*jpa.Prediction) {
	reg := t.Registration
	tr := allocator.Trial{
		ID:              reg.TrialID,
		Nodes:           t.Nodes,
		MinNodes:        reg.MinNodes,
		MaxNodes:        reg.MaxNodes,
		RescaleUpCost:   reg.RescaleUpCost.Seconds(),
		RescaleDownCost: reg.RescaleDownCost.Seconds(),
		Weight:          reg.Weight,
	}
	if t.RescaleUpCost > 0 {
		tr.RescaleUpCost = t.RescaleUpCost
	}
	if t.RescaleDownCost > 0 {
		tr.RescaleDownCost = t.RescaleDownCost
	}
	use := types
	if reg.NodeType != "" {
		use = []string{reg.NodeType}
	}
	if len(use) == 0 {
		// No idle node at all: any curve will do, nothing can be given.
		tr.Curve = jpa.PriorAllocatorCurve(reg.MinNodes, reg.MaxNodes, scale)
		return tr, nil
	}
	tr.CurvesByType = map[string]allocator.Curve{}
	preds := map[string]*jpa.Prediction{}
	for _, typ := range use {
		tr.CurvesByType[typ], preds[typ], _ = adv.CurveAndPrediction(v, lib, typ, scale)
	}
	return tr, preds
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
