package sim

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// swfFields names the SWF fields this reader uses (1-based).
var swfFields = map[int]string{
	1: "job id",
	2: "submit time",
	3: "wait time",
	4: "run time",
	5: "allocated processors",
	8: "requested processors",
}

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
// whitespace-separated numeric fields, -1 meaning unknown; processor
// counts are node counts. A job occupies field 5 nodes (field 8 if field 5
// is -1) over [submit+wait, submit+wait+run); jobs with an unknown start,
// run time or size, or a zero run time or size, are skipped and counted.
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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var (
		rep       TraceReport
		jobs      []swfJob
		unixStart float64
		vals      [18]float64
	)
	for sc.Scan() {
		rep.Lines++
		ln := rep.Lines
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line[0] == ';' {
			key, val, ok := strings.Cut(strings.TrimSpace(line[1:]), ":")
			if !ok {
				continue
			}
			val = strings.TrimSpace(val)
			switch strings.TrimSpace(key) {
			case "MaxNodes":
				n, err := strconv.Atoi(val)
				if err != nil || n <= 0 || n > maxMachineNodes {
					return nil, fmt.Errorf("line %d: header MaxNodes: %q is not a node count in 1..%d", ln, val, maxMachineNodes)
				}
				rep.DeclaredNodes = n
			case "UnixStartTime":
				v, err := strconv.ParseFloat(val, 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("line %d: header UnixStartTime: %q is not a finite number", ln, val)
				}
				unixStart = v
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != len(vals) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", ln, len(fields), len(vals))
		}
		for i, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("line %d: field %d%s: %q is not a number", ln, i+1, fieldName(i+1), f)
			}
			if v < 0 && v != -1 && swfFields[i+1] != "" {
				return nil, fmt.Errorf("line %d: field %d%s: %q is negative and not -1 (unknown)", ln, i+1, fieldName(i+1), f)
			}
			vals[i] = v
		}
		rep.Records++
		rep.Jobs++
		submit, wait, run, nodes := vals[1], vals[2], vals[3], vals[4]
		if nodes == -1 {
			nodes = vals[7]
		}
		for _, i := range []int{5, 8} {
			if v := vals[i-1]; v != math.Trunc(v) {
				return nil, fmt.Errorf("line %d: field %d%s: %q is not a whole number of nodes", ln, i, fieldName(i), fields[i-1])
			}
		}
		if submit == -1 || wait == -1 || run == -1 || nodes == -1 || run == 0 || nodes == 0 {
			rep.SkippedJobs++
			continue
		}
		start := unixStart + submit + wait
		end := start + run
		if math.IsInf(end, 0) || end <= start {
			return nil, fmt.Errorf("line %d: job runs over [%v, %v), not a representable interval", ln, start, end)
		}
		jobs = append(jobs, swfJob{start: start, end: end, nodes: nodes})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", rep.Lines+1, err)
	}
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

func fieldName(i int) string {
	if n := swfFields[i]; n != "" {
		return " (" + n + ")"
	}
	return ""
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
