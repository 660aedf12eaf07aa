package cli

import (
	"fmt"
	"slices"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/sim"
)

// Mixed pools in `gleaner sim`: --node-types, --curves blind, --objective
// (docs/sim.md).

// curvesBlind is the --curves mode of a type-blind allocator: told each
// job's mean curve on every node type (sim.TypeBlind).
const curvesBlind = "blind"

// typeMix parses --node-types (nil without it).
func (o *simOptions) typeMix() ([]sim.TypeShare, error) {
	if o.nodeTypes == "" {
		return nil, nil
	}
	mix, err := sim.ParseTypeMix(o.nodeTypes)
	if err != nil {
		return nil, usageErrorf("--node-types: %w", err)
	}
	return mix, nil
}

// validateHetero checks the flags of mixed pools against the others.
func (o *simOptions) validateHetero(modes []string) error {
	mix, err := o.typeMix()
	if err != nil {
		return err
	}
	switch allocator.Objective(o.objective) {
	case allocator.ObjectiveThroughput, allocator.ObjectiveEfficiency:
	default:
		return usageErrorf("--objective: %q is not one of throughput, efficiency", o.objective)
	}
	if mix == nil {
		if slices.Contains(modes, curvesBlind) {
			return usageErrorf("--curves: blind only with --node-types (on one type it is oracle)")
		}
		return nil
	}
	if !o.syntheticFlag {
		return usageErrorf("--node-types: only with --synthetic (jobs drawn from Gavel's per-GPU throughputs; the --jobs format has one curve per job)")
	}
	if o.gpuRatios != "" && !slices.Contains(modes, curvesJPA) {
		return usageErrorf("--gpu-ratios: only with --curves jpa (the oracle knows every type's curve)")
	}
	return nil
}

// speeds reads --gpu-ratios (nil without it).
func (o *simOptions) speeds() (*jpa.TypeSpeeds, error) {
	if o.gpuRatios == "" {
		return nil, nil
	}
	f, err := data.Open(o.gpuRatios)
	if err != nil {
		return nil, usageErrorf("--gpu-ratios: %w", err)
	}
	defer f.Close()
	s, err := jpa.ParseGavel(f)
	if err != nil {
		return nil, usageErrorf("--gpu-ratios: %s: %w", o.gpuRatios, err)
	}
	return s, nil
}

// nodeTypesFor types the trace's nodes by --node-types, seeded by --seed
// (nil without it).
func (o *simOptions) nodeTypesFor(tr *sim.Trace) (map[string]string, error) {
	mix, err := o.typeMix()
	if mix == nil || err != nil {
		return nil, err
	}
	types, err := sim.AssignNodeTypes(tr.Nodes, mix, o.seed)
	if err != nil {
		return nil, usageErrorf("--node-types: %w", err)
	}
	return types, nil
}

// gavelWorkload draws --synthetic jobs from Gavel's table under --data,
// with a curve on every type of --node-types.
func (o *simOptions) gavelWorkload(opts sim.SyntheticOptions) ([]sim.Job, error) {
	path := dataPath(o.dataDir, data.Gavel)
	f, err := data.Open(path)
	if err != nil {
		return nil, usageErrorf("--data: %w", err)
	}
	defer f.Close()
	table, err := sim.ReadGavel(f)
	if err != nil {
		return nil, usageErrorf("--data: %s: %w", path, err)
	}
	mix, _ := o.typeMix()
	gpus := make([]string, len(mix))
	for i, m := range mix {
		gpus[i] = m.Type
	}
	jobs := sim.GavelJobs(table, gpus, o.synthetic, o.seed, opts)
	if len(jobs) == 0 {
		var have []string
		if len(table) > 0 {
			for gpu := range table[0].Curves {
				have = append(have, gpu)
			}
			slices.Sort(have)
		}
		return nil, usageErrorf("--node-types: no job type of %s was measured on every one of %v (it has %v)", path, gpus, have)
	}
	return jobs, nil
}

// curvesFor is what the allocator is told in curve mode mode (nil: the
// oracle, or the JPA set up by the caller).
func curvesFor(mode string, jobs []sim.Job) (sim.CurveSource, error) {
	if mode != curvesBlind {
		return nil, nil
	}
	return sim.TypeBlind(jobs, "mean")
}

// typeShares prints node-seconds by type as shares of the total, in the
// order of --node-types.
func typeShares(mix []sim.TypeShare, byType map[string]float64) string {
	total := 0.0
	for _, v := range byType {
		total += v
	}
	out := ""
	for i, m := range mix {
		if i > 0 {
			out += "/"
		}
		share := 0.0
		if total > 0 {
			share = byType[m.Type] / total
		}
		out += fmt.Sprintf("%.0f%%", 100*share)
	}
	return out
}
