package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// Job is one malleable training job of a workload: it may run on 0 nodes
// or on any count in [MinNodes, MaxNodes], and is done when it has trained
// TotalSamples samples.
type Job struct {
	Name string
	// Model names what the job trains; jobs of one Model are one
	// campaign's siblings to the JPA mode (JPAOptions.Group). In the
	// BFTrainer format, the model column or the model the job's name
	// carries (ModelInName), else empty (the workload is one HPO
	// campaign); a synthetic job's is its curve's name.
	Model string
	// Submit is when the job becomes active (seconds, the events' clock).
	Submit   float64
	MinNodes int
	MaxNodes int
	// RescaleUp and RescaleDown are seconds of progress, at the rate before
	// the change, lost when the job grows or shrinks (a preemption is a
	// shrink). Starting from 0 nodes costs nothing.
	RescaleUp   float64
	RescaleDown float64
	// TotalSamples is the work to do.
	TotalSamples float64
	// Curve is the job's true throughput (samples/s) per node count,
	// without the (0, 0) point; it reaches MaxNodes.
	Curve allocator.Curve
	// CurvesByType, when set, replaces Curve (which must then be empty):
	// the job's true throughput on nodes of each type it can run on
	// (Config.NodeTypes), each reaching MaxNodes. Such a job runs on
	// nodes of one of these types at a time, at that type's curve (see
	// hetero.go: BestPlacement, ReferenceRate).
	CurvesByType map[string]allocator.Curve
	// Weight is the allocator's w_j under allocator.ObjectiveWeighted;
	// 0 means 1.
	Weight float64
}

// BestScale is the best fixed scale of a job with one Curve (a job with
// CurvesByType: BestPlacement): the count k in [MinNodes,
// MaxNodes] with the most samples per node-second, Curve(k)/k (the
// smallest such k on ties), and that rate. DESIGN's "efficiency vs
// dedicated" prices the job's work at this rate: on dedicated nodes a
// user would run the job at the scale that wastes the fewest node-hours.
func (j Job) BestScale() (k int, perNode float64) {
	for n := j.MinNodes; n <= j.MaxNodes; n++ {
		if r := j.Curve.At(n) / float64(n); r > perNode {
			k, perNode = n, r
		}
	}
	return k, perNode
}

// jobColumns is the header of the BFTrainer workload format, and
// modelColumn Gleaner's optional last column.
var jobColumns = []string{"name", "submit_unix", "min_nodes", "max_nodes", "rescale_up_s", "rescale_down_s", "total_samples", "nodes", "samples_per_s", "model"}

// modelColumn is the index of the optional column.
const modelColumn = 9

// modelInName matches a job name that carries its model: BFTrainer's
// Replayer names the jobs of its mixed workloads J<number>-<model>
// (J00003-DenseNet), those of one model J<number> alone.
var modelInName = regexp.MustCompile(`^[A-Za-z]*[0-9]+[-_]([^ ]+)$`)

// ModelInName is the model a job's name carries, "" if none: the part
// after "<id><digits>-" or "<id><digits>_" (J00003-DenseNet: DenseNet).
func ModelInName(name string) string {
	if m := modelInName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// ReadJobs parses a workload in the BFTrainer job format
// (data/workloads in the repository): a header line naming the columns
// name, submit_unix, min_nodes, max_nodes, rescale_up_s, rescale_down_s,
// total_samples, nodes, samples_per_s, then one job per line; nodes and
// samples_per_s are space-separated lists giving the throughput curve,
// which may include the point (0, 0). An optional last column, model,
// names what each job trains (Job.Model: the JPA mode's siblings are the
// jobs of one model); without it a job's model is the one its name
// carries (ModelInName: BFTrainer's J00003-DenseNet), else none, and
// such jobs are one campaign's. Lines starting with '#' are comments.
// Errors name the line and the column.
func ReadJobs(r io.Reader) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("workload: empty: no header line %s", strings.Join(jobColumns, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	line, _ := cr.FieldPos(0)
	if len(header) != modelColumn && len(header) != len(jobColumns) {
		return nil, fmt.Errorf("workload: line %d: header has %d columns, want %d (%s) or %d (and model)", line, len(header), modelColumn, strings.Join(jobColumns[:modelColumn], ","), len(jobColumns))
	}
	columns := jobColumns[:len(header)]
	for i, want := range columns {
		if got := strings.TrimSpace(header[i]); got != want {
			return nil, fmt.Errorf("workload: line %d, column %d: header is %q, want %q", line, i+1, got, want)
		}
	}
	var jobs []Job
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(columns) {
			return nil, fmt.Errorf("workload: line %d: %d columns, want %d as the header (%s)", line, len(rec), len(columns), strings.Join(columns, ","))
		}
		j, err := parseJob(rec)
		if err != nil {
			return nil, fmt.Errorf("workload: line %d, %w", line, err)
		}
		if prev, dup := seen[j.Name]; dup {
			return nil, fmt.Errorf("workload: line %d, column 1 (name): %q repeats the job of line %d", line, j.Name, prev)
		}
		seen[j.Name] = line
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// colErr names a column by number and name.
func colErr(col int, format string, args ...any) error {
	return fmt.Errorf("column %d (%s): "+format, append([]any{col + 1, jobColumns[col]}, args...)...)
}

func parseJob(rec []string) (Job, error) {
	j := Job{Name: strings.TrimSpace(rec[0])}
	if j.Name == "" {
		return j, colErr(0, "empty")
	}
	var err error
	num := func(col int) float64 {
		if err != nil {
			return 0
		}
		v, perr := strconv.ParseFloat(strings.TrimSpace(rec[col]), 64)
		if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			err = colErr(col, "%q is not a finite number", rec[col])
		}
		return v
	}
	j.Submit = num(1)
	minN, maxN := num(2), num(3)
	j.RescaleUp, j.RescaleDown = num(4), num(5)
	j.TotalSamples = num(6)
	if err != nil {
		return j, err
	}
	switch {
	case minN != math.Trunc(minN) || minN < 1 || minN > 1e9:
		return j, colErr(2, "%q is not a positive integer", rec[2])
	case maxN != math.Trunc(maxN) || maxN < minN || maxN > 1e9:
		return j, colErr(3, "%q is not an integer at least min_nodes %v", rec[3], minN)
	case j.RescaleUp < 0:
		return j, colErr(4, "%v must not be negative", j.RescaleUp)
	case j.RescaleDown < 0:
		return j, colErr(5, "%v must not be negative", j.RescaleDown)
	case !(j.TotalSamples > 0):
		return j, colErr(6, "%v must be positive", j.TotalSamples)
	}
	j.MinNodes, j.MaxNodes = int(minN), int(maxN)
	if len(rec) > modelColumn {
		j.Model = strings.TrimSpace(rec[modelColumn])
	} else {
		j.Model = ModelInName(j.Name)
	}
	j.Curve, err = parseCurve(rec[7], rec[8], j.MaxNodes)
	return j, err
}

// parseCurve reads the nodes and samples_per_s lists (columns 8 and 9).
func parseCurve(nodesField, rateField string, maxNodes int) (allocator.Curve, error) {
	ns, rs := strings.Fields(nodesField), strings.Fields(rateField)
	if len(ns) == 0 {
		return nil, colErr(7, "empty")
	}
	if len(ns) != len(rs) {
		return nil, colErr(8, "%d values for %d node counts", len(rs), len(ns))
	}
	var c allocator.Curve
	prev := -1
	for i := range ns {
		n, err := strconv.Atoi(ns[i])
		if err != nil || n < 0 {
			return nil, colErr(7, "value %d: %q is not a non-negative integer", i+1, ns[i])
		}
		if n <= prev {
			return nil, colErr(7, "value %d: %d does not increase on %d", i+1, n, prev)
		}
		prev = n
		r, err := strconv.ParseFloat(rs[i], 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
			return nil, colErr(8, "value %d: %q is not a finite non-negative number", i+1, rs[i])
		}
		if n == 0 {
			if r != 0 {
				return nil, colErr(8, "value %d: throughput at 0 nodes is %v, want 0", i+1, r)
			}
			continue
		}
		c = append(c, allocator.Point{Nodes: n, Throughput: r})
	}
	if len(c) == 0 || c[len(c)-1].Nodes < maxNodes {
		return nil, colErr(7, "the curve ends at %d nodes and does not reach max_nodes %d", max(prev, 0), maxNodes)
	}
	return c, nil
}
