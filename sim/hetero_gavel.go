package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// GavelJobType is one (model, batch size) job type of Gavel's isolated-
// throughput table (data/gpus/gavel-isolated-throughputs.csv in the
// repository; Narayanan et al., OSDI'20): its throughput on each GPU type, in steps/s,
// at each measured scale factor (1, 2, 4, 8 GPUs, or 1 only), as a curve
// over node counts with one GPU per node.
type GavelJobType struct {
	Name   string
	Curves map[string]allocator.Curve
}

// ReadGavel parses Gavel's isolated-throughput table: a header
// job_type,scale_factor,<one column per GPU type>, then one line per job
// type and scale factor. Unlike jpa.ParseGavel, which keeps the scale
// factor 1 (per-GPU speed ratios), it keeps every scale factor: the
// multi-GPU curves. Job types come in the order of their first line.
// Errors name the line and the column.
func ReadGavel(r io.Reader) ([]GavelJobType, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("gavel table: reading the header: %w", err)
	}
	if len(header) < 3 || strings.TrimSpace(header[0]) != "job_type" || strings.TrimSpace(header[1]) != "scale_factor" {
		return nil, fmt.Errorf("gavel table: line 1: header %q, want job_type,scale_factor,<gpu types>", strings.Join(header, ","))
	}
	gpus := make([]string, len(header)-2)
	for i := range gpus {
		gpus[i] = strings.TrimSpace(header[i+2])
	}
	var out []GavelJobType
	index := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gavel table: %w", err)
		}
		line, _ := cr.FieldPos(0)
		name := strings.TrimSpace(rec[0])
		if name == "" {
			return nil, fmt.Errorf("gavel table: line %d, column 1 (job_type): empty", line)
		}
		scale, err := strconv.Atoi(strings.TrimSpace(rec[1]))
		if err != nil || scale < 1 {
			return nil, fmt.Errorf("gavel table: line %d, column 2 (scale_factor): %q is not a positive integer", line, rec[1])
		}
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, GavelJobType{Name: name, Curves: map[string]allocator.Curve{}})
		}
		for g, gpu := range gpus {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[g+2]), 64)
			if err != nil || !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("gavel table: line %d, column %d (%s): %q is not a finite non-negative number", line, g+3, gpu, rec[g+2])
			}
			c := out[i].Curves[gpu]
			for _, p := range c {
				if p.Nodes == scale {
					return nil, fmt.Errorf("gavel table: line %d: %s at scale factor %d repeats an earlier line", line, name, scale)
				}
			}
			out[i].Curves[gpu] = append(c, allocator.Point{Nodes: scale, Throughput: v})
		}
	}
	for _, jt := range out {
		for _, c := range jt.Curves {
			sort.Slice(c, func(a, b int) bool { return c[a].Nodes < c[b].Nodes })
		}
	}
	return out, nil
}

// runsEverywhere reports whether the job type has a positive throughput
// at every scale factor on every one of gpus (and a curve for each).
// Gavel's 0 means the job did not run there (ResNet-50 at batch size 128
// on 2 or more K80s).
func (jt GavelJobType) runsEverywhere(gpus []string) bool {
	for _, gpu := range gpus {
		c, ok := jt.Curves[gpu]
		if !ok || len(c) == 0 {
			return false
		}
		for _, p := range c {
			if !(p.Throughput > 0) {
				return false
			}
		}
	}
	return true
}

// GavelJobs draws n jobs from Gavel's job types, as SyntheticJobs draws
// from the scaling curves (seeded; opts as there, Stretch multiplying the
// node counts), each with its true curve on every one of gpus
// (CurvesByType, steps/s: a Gavel job's "samples" are its steps). Job
// types measured at scale factor 1 only run on one node (× Stretch); a job
// type with no throughput at some scale on some GPU of gpus is left out.
// TotalSamples makes a job last opts.NodeHours node-hours at its best
// placement (Job.BestPlacement: its best GPU at its best scale). Jobs are
// named G00000, G00001, … in submit order; Model is the job type. Nil when
// no job type runs on all of gpus, or gpus is empty.
func GavelJobs(types []GavelJobType, gpus []string, n int, seed uint64, opts SyntheticOptions) []Job {
	var usable []GavelJobType
	for _, jt := range types {
		if jt.runsEverywhere(gpus) {
			usable = append(usable, jt)
		}
	}
	if len(usable) == 0 || len(gpus) == 0 || n <= 0 {
		return nil
	}
	opts = opts.withDefaults()
	rng := rand.New(rand.NewPCG(seed, uint64(n)^0x9a7e1))
	jobs := make([]Job, n)
	for i := range jobs {
		jt := usable[rng.IntN(len(usable))]
		top := math.MaxInt // the largest count every GPU's curve reaches
		byType := make(map[string]allocator.Curve, len(gpus))
		for _, gpu := range gpus {
			c := make(allocator.Curve, len(jt.Curves[gpu]))
			for p, pt := range jt.Curves[gpu] {
				c[p] = allocator.Point{Nodes: opts.Stretch * pt.Nodes, Throughput: pt.Throughput}
			}
			byType[gpu] = c
			top = min(top, jt.Curves[gpu][len(c)-1].Nodes)
		}
		jobs[i] = opts.draw(rng, top, Job{Model: jt.Name, CurvesByType: byType})
	}
	return inSubmitOrder(jobs, "G")
}
