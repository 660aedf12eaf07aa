package curve

import "fmt"

// Scaling is a measured throughput curve: one application on one cluster
// at one per-GPU (local) batch size, sorted by node count. The reference
// data's data/scaling folder holds such curves (one <app>__<cluster>.csv
// per application and cluster, a curve per batch size); the JPA is
// evaluated on them (jpa.Evaluate) and profiles its priors from them
// (jpa.PriorFromScaling), and the simulator draws workloads from them.
type Scaling struct {
	File        string // base name, e.g. "cifar10__aws.csv"
	App         string // "cifar10"
	Cluster     string // "aws"
	GPUsPerNode int
	LocalBatch  int
	Points      []ScalingPoint
}

// ScalingPoint is one measured (node count, samples/s) pair of a Scaling
// curve.
type ScalingPoint struct {
	Nodes       int
	SamplesPerS float64
}

// Name identifies the curve in reports: "cifar10__aws.csv@bsz=64".
func (c Scaling) Name() string {
	return fmt.Sprintf("%s@bsz=%d", c.File, c.LocalBatch)
}

// MaxNodes is the largest measured node count.
func (c Scaling) MaxNodes() int {
	if len(c.Points) == 0 {
		return 0
	}
	return c.Points[len(c.Points)-1].Nodes
}
