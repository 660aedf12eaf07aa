package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
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
func SyntheticJobs(curves []dataset.ScalingCurve, n int, seed uint64, opts SyntheticOptions) []Job {
	var usable []dataset.ScalingCurve
	for _, c := range curves {
		if len(c.Points) > 0 {
			usable = append(usable, c)
		}
	}
	if len(usable) == 0 || n <= 0 {
		return nil
	}
	hours := opts.NodeHours
	if hours <= 0 {
		hours = 1
	}
	spread := min(max(opts.NodeHoursSpread, 0), 0.999)
	g := max(opts.Stretch, 1)
	up, down := opts.RescaleUp, opts.RescaleDown
	if up <= 0 {
		up = 18
	}
	if down <= 0 {
		down = 12
	}
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	jobs := make([]Job, n)
	for i := range jobs {
		c := usable[rng.IntN(len(usable))]
		top := c.MaxNodes()
		lo := 1
		if rng.IntN(2) == 0 {
			lo = 1 + rng.IntN(top)
		}
		hi := lo + rng.IntN(top-lo+1)
		curve := make(allocator.Curve, len(c.Points))
		for p, pt := range c.Points {
			curve[p] = allocator.Point{Nodes: g * pt.Nodes, Throughput: pt.SamplesPerS}
		}
		j := Job{
			Model:       c.Name(),
			Submit:      opts.Start + opts.Window*rng.Float64(),
			MinNodes:    g * lo,
			MaxNodes:    g * hi,
			RescaleUp:   up * (0.5 + rng.Float64()),
			RescaleDown: down * (0.5 + rng.Float64()),
			Curve:       curve,
		}
		h := hours * (1 - spread + 2*spread*rng.Float64())
		_, perNode := j.BestScale()
		j.TotalSamples = h * 3600 * perNode
		jobs[i] = j
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	for i := range jobs {
		jobs[i].Name = fmt.Sprintf("S%05d", i)
	}
	return jobs
}
