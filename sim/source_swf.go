package sim

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/gleaner-hpc/gleaner/internal/swf"
)

// swfCounts are the fields that must be -1 (unknown) or not negative.
var swfCounts = []swf.Field{swf.JobID, swf.SubmitTime, swf.WaitTime, swf.RunTime, swf.AllocProcs, swf.ReqProcs}

// swfJob is one replayable job: it holds nodes nodes over [start, end).
type swfJob struct {
	start, end float64
	nodes      float64
	assigned   []int32
}

// ReadSWF reads a job log in the Standard Workload Format (Parallel
// Workloads Archive) and replays it into idle-node events.
//
// Header comments ("; Key: value") give MaxNodes (the machine size;
// SourceOptions.MaxNodes overrides it and is required without it) and
// UnixStartTime (added to submit times). Every other line has 18
// whitespace-separated numeric fields, -1 meaning unknown, on lines of at
// most swf.MaxLineBytes; processor counts are node counts. A job occupies field 5 nodes (field 8 if field 5
// is -1) over [submit+wait, submit+wait+run); a wait time of -1 (a model's
// log: the standard calls it relevant to real logs only) means the job
// started when submitted, counted in Report.UnknownWaits; jobs with an
// unknown submit time, run time or size, or a zero run time or size, are
// skipped and counted.
//
// Jobs are replayed at their recorded start times: at each instant the
// jobs ending there free their nodes first, then the jobs starting there,
// in file order, take the lowest-numbered free nodes (first fit, ids
// "n0000".."nNNNN"). A job asking for more nodes than are free
// (oversubscription in the log) gets the free ones and the rest is counted
// in Report.ClippedJobs and ClippedNodeSeconds. Every node is idle when
// the first job starts, which is when the trace starts; the first Event
// makes idle all the nodes not taken at that instant.
func ReadSWF(r io.Reader, opts SourceOptions) (*Trace, error) {
	rd := swf.NewReader(r, swf.Limits{MaxNodes: maxMachineNodes})
	var (
		rep  TraceReport
		jobs []swfJob
	)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		var vals [swf.NumFields + 1]float64 // vals[f] is field f
		for f := swf.Field(1); f <= swf.NumFields; f++ {
			v, err := rec.Number(f)
			if err != nil {
				return nil, err
			}
			if v < 0 && v != swf.Unknown && slices.Contains(swfCounts, f) {
				return nil, rec.Errorf(f, "%q is negative and not -1 (unknown)", rec.Text(f))
			}
			vals[f] = v
		}
		rep.Records++
		rep.Jobs++
		for _, f := range []swf.Field{swf.AllocProcs, swf.ReqProcs} {
			if v := vals[f]; v != math.Trunc(v) {
				return nil, rec.Errorf(f, "%q is not a whole number of nodes", rec.Text(f))
			}
		}
		submit, wait, run, nodes := vals[swf.SubmitTime], vals[swf.WaitTime], vals[swf.RunTime], vals[swf.AllocProcs]
		if nodes == swf.Unknown {
			nodes = vals[swf.ReqProcs]
		}
		if submit == swf.Unknown || run == swf.Unknown || nodes == swf.Unknown || run == 0 || nodes == 0 {
			rep.SkippedJobs++
			continue
		}
		if wait == swf.Unknown {
			// The standard's "only relevant to real logs": a model's job
			// starts when it is submitted.
			wait = 0
			rep.UnknownWaits++
		}
		start := rd.Header().UnixStartTime + submit + wait
		end := start + run
		if math.IsInf(end, 0) || end <= start {
			return nil, rec.Errorf(0, "job runs over [%v, %v), not a representable interval", start, end)
		}
		jobs = append(jobs, swfJob{start: start, end: end, nodes: nodes})
	}
	rep.Lines = rd.Line()
	rep.DeclaredNodes = rd.Header().MaxNodes
	size := rep.DeclaredNodes
	if opts.MaxNodes != 0 {
		if opts.MaxNodes < 0 || opts.MaxNodes > maxMachineNodes {
			return nil, fmt.Errorf("SourceOptions.MaxNodes is %d, want 1..%d", opts.MaxNodes, maxMachineNodes)
		}
		size = opts.MaxNodes
	}
	if size == 0 {
		return nil, ErrNoMaxNodes
	}
	var span [2]float64
	for i, j := range jobs {
		if i == 0 {
			span = [2]float64{j.start, j.end}
		}
		span = [2]float64{min(span[0], j.start), max(span[1], j.end)}
	}
	evs := replay(jobs, size, &rep)
	return finish(evs, span, swfNodeNames(size), size, opts, rep)
}

// swfNodeNames is n0000..nNNNN, zero-padded so that names sort like ids.
func swfNodeNames(size int) []string {
	width := max(4, len(strconv.Itoa(size-1)))
	names := make([]string, size)
	for i := range names {
		names[i] = fmt.Sprintf("n%0*d", width, i)
	}
	return names
}

// replay runs the jobs on size nodes, first fit, and returns the idle-set
// changes.
func replay(jobs []swfJob, size int, rep *TraceReport) []rawEvent {
	if len(jobs) == 0 {
		return nil
	}
	type step struct {
		t     float64
		start bool // ends (false) before starts at one instant
		job   int
	}
	steps := make([]step, 0, 2*len(jobs))
	for i, j := range jobs {
		steps = append(steps, step{j.start, true, i}, step{j.end, false, i})
	}
	slices.SortFunc(steps, func(a, b step) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.start != b.start {
			if a.start {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.job, b.job)
	})
	var b builder
	b.grow(size)
	t0 := steps[0].t
	for x := range size {
		b.set(t0, int32(x), true)
	}
	free := size
	for _, s := range steps {
		j := &jobs[s.job]
		if !s.start {
			for _, x := range j.assigned {
				b.set(s.t, x, true)
			}
			free += len(j.assigned)
			j.assigned = nil
			continue
		}
		want := j.nodes
		if want > float64(free) {
			rep.ClippedJobs++
			rep.ClippedNodeSeconds += (want - float64(free)) * (j.end - j.start)
			want = float64(free)
		}
		n := int(want)
		j.assigned = make([]int32, 0, n)
		for x := 0; len(j.assigned) < n; x++ {
			if b.idle[x] {
				j.assigned = append(j.assigned, int32(x))
				b.set(s.t, int32(x), false)
			}
		}
		free -= n
	}
	b.flush()
	return b.evs
}
