package benchgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
)

// Config describes one family of random instances. Zero fields take the
// documented defaults.
type Config struct {
	Trials, Nodes int
	// Curves are the measured curves trials draw from; each trial gets one
	// (app, cluster, local batch size) curve, so throughputs, scalability
	// and noise are real.
	Curves []dataset.ScalingCurve
	// RunningFraction of trials hold nodes already (default 0.5).
	RunningFraction float64
	// DepartedFraction of held node ids have left the pool (default 0.05).
	DepartedFraction float64
	// Lookahead is T_fwd (default 5 minutes).
	Lookahead time.Duration
	// Scarcity is the target Σ_j max_j / |N| (default 2): nodes are
	// contested. Real curves stop at 16 nodes, so to reach it every curve
	// is stretched by one factor g: a trial measured at n nodes is taken
	// to run at g·n nodes with the same throughput (as if each of its
	// nodes were g times smaller), its bounds scaled alike and throughput
	// interpolated in between. Negative: no stretching (g = 1).
	Scarcity float64
	// Types is the number of node types (0 or 1: one, untyped). With K ≥ 2
	// the types are the first K clusters of Curves (sorted by name), node
	// i is of type i mod K, and a trial has a curve on every type: its
	// application's curve measured on that cluster, at the local batch
	// nearest its own, so per-type throughputs and scaling are real.
	Types int
}

// Demand returns Σ_j max_j / |N| of a problem: above 1, trials compete.
func Demand(p *allocator.Problem) float64 {
	total := 0
	for _, t := range p.Trials {
		total += t.MaxNodes
	}
	return float64(total) / float64(max(1, len(p.Nodes)))
}

// Problem returns the instance of cfg for seed: same seed, same problem.
//
// Trials: a random curve; bounds 1 ≤ min ≤ max ≤ the curve's largest
// measured count (min is 1 half of the time), then curve and bounds
// stretched by Scarcity's factor; rescale costs around
// BFTrainer's measured 18 s up and 12 s down. Nodes: idle-until times
// spread over the next hour, a fifth unknown. Running trials hold a random
// count within their bounds, of nodes drawn without replacement while
// nodes last, with some ids that have departed the pool.
func Problem(cfg Config, seed uint64) (*allocator.Problem, error) {
	if cfg.Trials < 1 || cfg.Nodes < 1 {
		return nil, fmt.Errorf("benchgen: trials %d and nodes %d must be positive", cfg.Trials, cfg.Nodes)
	}
	curves := usable(cfg.Curves)
	if len(curves) == 0 {
		return nil, fmt.Errorf("benchgen: no curve with measured points")
	}
	running := orDefault(cfg.RunningFraction, 0.5)
	departed := orDefault(cfg.DepartedFraction, 0.05)
	lookahead := cfg.Lookahead
	if lookahead <= 0 {
		lookahead = 5 * time.Minute
	}
	types, err := nodeTypes(curves, cfg.Types)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(cfg.Trials)<<32|uint64(cfg.Nodes)))
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &allocator.Problem{Lookahead: lookahead, Objective: allocator.ObjectiveThroughput}
	p.Nodes = make([]allocator.Node, cfg.Nodes)
	for i := range p.Nodes {
		n := allocator.Node{ID: fmt.Sprintf("n%05d", i)}
		if len(types) > 0 {
			n.Type = types[i%len(types)]
		}
		if rng.Float64() >= 0.2 {
			n.IdleUntil = epoch.Add(time.Duration(rng.IntN(3600)) * time.Second)
		}
		p.Nodes[i] = n
	}
	free := rng.Perm(cfg.Nodes)
	freeByType := make([][]int, len(types)) // free, split by type, same order
	for _, i := range free {
		if len(types) > 0 {
			freeByType[i%len(types)] = append(freeByType[i%len(types)], i)
		}
	}
	p.Trials = make([]allocator.Trial, cfg.Trials)
	drawn := make([][]dataset.ScalingCurve, cfg.Trials) // one per type (one if untyped)
	sumMax := 0
	for j := range p.Trials {
		c := curves[rng.IntN(len(curves))]
		drawn[j] = []dataset.ScalingCurve{c}
		top := c.MaxNodes()
		if len(types) > 0 {
			drawn[j] = drawn[j][:0]
			for _, typ := range types {
				ct, ok := sibling(curves, c, typ)
				if !ok {
					return nil, fmt.Errorf("benchgen: %s has no curve on cluster %s", c.App, typ)
				}
				drawn[j] = append(drawn[j], ct)
				top = min(top, ct.MaxNodes())
			}
		}
		lo := 1
		if rng.IntN(2) == 0 {
			lo = 1 + rng.IntN(top)
		}
		hi := lo + rng.IntN(top-lo+1)
		sumMax += hi
		p.Trials[j] = allocator.Trial{
			ID:              fmt.Sprintf("t%04d", j),
			MinNodes:        lo,
			MaxNodes:        hi,
			RescaleUpCost:   12 + 12*rng.Float64(),
			RescaleDownCost: 8 + 8*rng.Float64(),
		}
	}
	g := stretch(cfg.Scarcity, cfg.Nodes, sumMax)
	for j := range p.Trials {
		t := p.Trials[j]
		t.MinNodes, t.MaxNodes = g*t.MinNodes, g*t.MaxNodes
		if len(types) == 0 {
			t.Curve = toCurve(drawn[j][0], g)
		} else {
			t.CurvesByType = make(map[string]allocator.Curve, len(types))
			for k, typ := range types {
				t.CurvesByType[typ] = toCurve(drawn[j][k], g)
			}
		}
		lo, hi := t.MinNodes, t.MaxNodes
		if rng.Float64() < running {
			k := lo + rng.IntN(hi-lo+1)
			pool := &free // a running trial holds nodes of one type
			if len(types) > 0 {
				pool = &freeByType[rng.IntN(len(types))]
			}
			for ; k > 0 && len(*pool) > 0; k-- {
				if rng.Float64() < departed {
					t.Nodes = append(t.Nodes, fmt.Sprintf("gone-%d-%d", j, k))
					continue
				}
				t.Nodes = append(t.Nodes, p.Nodes[(*pool)[0]].ID)
				*pool = (*pool)[1:]
			}
		}
		p.Trials[j] = t
	}
	return p, nil
}

// nodeTypes are the first k clusters of curves, sorted (nil for k ≤ 1).
func nodeTypes(curves []dataset.ScalingCurve, k int) ([]string, error) {
	if k <= 1 {
		return nil, nil
	}
	seen := map[string]bool{}
	var all []string
	for _, c := range curves {
		if !seen[c.Cluster] {
			seen[c.Cluster] = true
			all = append(all, c.Cluster)
		}
	}
	slices.Sort(all)
	if k > len(all) {
		return nil, fmt.Errorf("benchgen: %d node types asked, the curves cover %d clusters (%v)", k, len(all), all)
	}
	return all[:k], nil
}

// sibling is c's application measured on cluster, at the local batch
// nearest c's (the smaller on ties).
func sibling(curves []dataset.ScalingCurve, c dataset.ScalingCurve, cluster string) (dataset.ScalingCurve, bool) {
	best, found := dataset.ScalingCurve{}, false
	for _, o := range curves {
		if o.App != c.App || o.Cluster != cluster {
			continue
		}
		d, bd := abs(o.LocalBatch-c.LocalBatch), abs(best.LocalBatch-c.LocalBatch)
		if !found || d < bd || (d == bd && o.LocalBatch < best.LocalBatch) {
			best, found = o, true
		}
	}
	return best, found
}

func abs(x int) int { return max(x, -x) }

func usable(curves []dataset.ScalingCurve) []dataset.ScalingCurve {
	var out []dataset.ScalingCurve
	for _, c := range curves {
		if len(c.Points) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// stretch is the factor g that brings Σ max_j to scarcity × |N|.
func stretch(scarcity float64, nodes, sumMax int) int {
	if scarcity < 0 {
		return 1
	}
	if scarcity == 0 {
		scarcity = 2
	}
	return max(1, int(math.Round(scarcity*float64(nodes)/float64(sumMax))))
}

func toCurve(c dataset.ScalingCurve, g int) allocator.Curve {
	out := make(allocator.Curve, len(c.Points))
	for i, p := range c.Points {
		out[i] = allocator.Point{Nodes: g * p.Nodes, Throughput: p.SamplesPerS}
	}
	return out
}

func orDefault(v, d float64) float64 {
	if v <= 0 {
		return d
	}
	return v
}
