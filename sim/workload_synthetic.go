package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/curve"
)

// SyntheticOptions shape a synthetic workload. Zero fields take the
// documented defaults.
type SyntheticOptions struct {
	// Start and Window: submit times are drawn uniformly from
	// [Start, Start+Window] seconds (Window default 0: all at Start).
	Start, Window float64
	// NodeHours is how long a job lasts, in node-hours, when run at its
	// best fixed scale (Job.BestScale) (default 1). NodeHoursSpread draws
	// each job's node-hours uniformly from NodeHours × [1−s, 1+s]
	// (default 0, clamped to [0, 1)).
	NodeHours, NodeHoursSpread float64
	// Stretch multiplies every curve's node counts and the bounds, as if
	// each node were Stretch times smaller (default 1): real curves stop
	// at 16 nodes.
	Stretch int
	// RescaleUp and RescaleDown are the mean rescale costs in seconds;
	// each job draws uniformly from [0.5, 1.5] × the mean (defaults 18
	// and 12, BFTrainer's measurements).
	RescaleUp, RescaleDown float64
}

// SyntheticJobs draws n jobs from the real curves (seeded: the same seed
// gives the same jobs). Each job takes a random curve (app, cluster, batch
// size); its bounds lie within the curve's measured counts (min is 1 half
// of the time, else random; max is random in [min, largest measured]);
// TotalSamples makes it last opts.NodeHours node-hours at its best scale.
// Jobs are returned in submit order, named S00000, S00001, …. Curves with
// no points are ignored; with none left, SyntheticJobs returns nil.
func SyntheticJobs(curves []curve.Scaling, n int, seed uint64, opts SyntheticOptions) []Job {
	var usable []curve.Scaling
	for _, c := range curves {
		if len(c.Points) > 0 {
			usable = append(usable, c)
		}
	}
	if len(usable) == 0 || n <= 0 {
		return nil
	}
	opts = opts.withDefaults()
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	jobs := make([]Job, n)
	for i := range jobs {
		c := usable[rng.IntN(len(usable))]
		curve := make(allocator.Curve, len(c.Points))
		for p, pt := range c.Points {
			curve[p] = allocator.Point{Nodes: opts.Stretch * pt.Nodes, Throughput: pt.SamplesPerS}
		}
		jobs[i] = opts.draw(rng, c.MaxNodes(), Job{Model: c.Name(), Curve: curve})
	}
	return inSubmitOrder(jobs, "S")
}

// withDefaults fills in the documented defaults.
func (o SyntheticOptions) withDefaults() SyntheticOptions {
	if o.NodeHours <= 0 {
		o.NodeHours = 1
	}
	o.NodeHoursSpread = min(max(o.NodeHoursSpread, 0), 0.999)
	o.Stretch = max(o.Stretch, 1)
	if o.RescaleUp <= 0 {
		o.RescaleUp = 18
	}
	if o.RescaleDown <= 0 {
		o.RescaleDown = 12
	}
	return o
}

// draw completes j, whose curves span 1..top nodes before the stretch:
// bounds within them (min is 1 half of the time, else random; max is
// random in [min, top]), stretched; submit time; rescale costs; and
// TotalSamples for its node-hours at its best placement. o has its
// defaults.
func (o SyntheticOptions) draw(rng *rand.Rand, top int, j Job) Job {
	lo := 1
	if rng.IntN(2) == 0 {
		lo = 1 + rng.IntN(top)
	}
	hi := lo + rng.IntN(top-lo+1)
	j.Submit = o.Start + o.Window*rng.Float64()
	j.MinNodes, j.MaxNodes = o.Stretch*lo, o.Stretch*hi
	j.RescaleUp = o.RescaleUp * (0.5 + rng.Float64())
	j.RescaleDown = o.RescaleDown * (0.5 + rng.Float64())
	h := o.NodeHours * (1 - o.NodeHoursSpread + 2*o.NodeHoursSpread*rng.Float64())
	_, _, perNode := j.BestPlacement()
	j.TotalSamples = h * 3600 * perNode
	return j
}

// inSubmitOrder sorts jobs by submit time (stably) and names them
// prefix00000, prefix00001, ….
func inSubmitOrder(jobs []Job, prefix string) []Job {
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	for i := range jobs {
		jobs[i].Name = fmt.Sprintf("%s%05d", prefix, i)
	}
	return jobs
}
