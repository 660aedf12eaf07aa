package cli

import (
	"errors"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/sim"
)

func (o *simOptions) traceFlag() string {
	if o.events != "" {
		return "--events"
	}
	return "--swf"
}

// readTrace reads --events or --swf; a file that cannot be read or parsed
// is a bad argument (exit 2).
func (o *simOptions) readTrace(opts sim.SourceOptions) (*sim.Trace, simTraceReport, error) {
	tr, err := o.parseTrace(opts)
	if err != nil {
		return nil, simTraceReport{}, err
	}
	if o.nodes > 0 {
		if tr, err = tr.Restrict(o.nodes); err != nil {
			return nil, simTraceReport{}, usageErrorf("--nodes: %w", err)
		}
	}
	path, format := o.events, "events"
	if o.swf != "" {
		path, format = o.swf, "swf"
	}
	r := tr.Report
	return tr, simTraceReport{
		File: path, Format: format, Nodes: tr.Size, NodeIDs: len(tr.Nodes), Events: len(tr.Events),
		Start: tr.Start, End: tr.End, Lines: r.Lines, Records: r.Records,
		SWFJobs: r.Jobs, SkippedJobs: r.SkippedJobs, UnknownWaits: r.UnknownWaits, ClippedJobs: r.ClippedJobs, ClippedNodeSeconds: r.ClippedNodeSeconds,
		Inconsistent: r.Inconsistent, DroppedHoles: r.DroppedHoles, DroppedNodeSeconds: r.DroppedNodeSeconds,
		Holes: tr.HoleStats(),
	}, nil
}

// parseTrace reads --events or --swf with opts.
func (o *simOptions) parseTrace(opts sim.SourceOptions) (*sim.Trace, error) {
	flag, path, read := "--events", o.events, sim.ReadIdleEvents
	if o.swf != "" {
		flag, path, read = "--swf", o.swf, sim.ReadSWF
	}
	f, err := data.Open(path)
	if err != nil {
		return nil, usageErrorf("%s: %w", flag, err)
	}
	defer f.Close()
	tr, err := read(f, opts)
	if err != nil {
		if errors.Is(err, sim.ErrNoMaxNodes) {
			return nil, usageErrorf("%s: %s: %w (pass --max-nodes N)", flag, path, err)
		}
		return nil, usageErrorf("%s: %s: %w", flag, path, err)
	}
	return tr, nil
}

// readWorkload reads --jobs or draws --synthetic jobs, submitted at the
// trace's start or uniformly over it (--synthetic-arrivals).
func (o *simOptions) readWorkload(tr *sim.Trace) ([]sim.Job, simWorkloadReport, error) {
	if o.jobs != "" {
		f, err := data.Open(o.jobs)
		if err != nil {
			return nil, simWorkloadReport{}, usageErrorf("--jobs: %w", err)
		}
		defer f.Close()
		jobs, err := sim.ReadJobs(f)
		if err != nil {
			return nil, simWorkloadReport{}, usageErrorf("--jobs: %s: %w", o.jobs, err)
		}
		if len(jobs) == 0 {
			return nil, simWorkloadReport{}, usageErrorf("--jobs: %s: no jobs", o.jobs)
		}
		return jobs, simWorkloadReport{Source: o.jobs, Jobs: len(jobs)}, nil
	}
	opts := sim.SyntheticOptions{Start: tr.Start, NodeHours: o.synNodeHours, Stretch: o.synStretch}
	if o.synArrivals == "uniform" {
		opts.Window = tr.End - tr.Start
	}
	rep := simWorkloadReport{Source: "synthetic", Seed: o.seed,
		Arrivals: o.synArrivals, NodeHours: o.synNodeHours, Stretch: o.synStretch, NodeTypes: o.nodeTypes}
	if o.nodeTypes != "" {
		jobs, err := o.gavelWorkload(opts)
		rep.Jobs = len(jobs)
		return jobs, rep, err
	}
	curves, err := loadScaling(o.dataDir)
	if err != nil {
		return nil, simWorkloadReport{}, withCode(ExitUsage, err)
	}
	jobs := sim.SyntheticJobs(curves, o.synthetic, o.seed, opts)
	if len(jobs) == 0 {
		return nil, simWorkloadReport{}, usageErrorf("--data: no scaling curve with points to draw --synthetic jobs from")
	}
	rep.Jobs = len(jobs)
	return jobs, rep, nil
}
