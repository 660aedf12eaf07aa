package nas

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// BenchmarkHeader is the header of a tabular NAS benchmark as
// internal/searchbench/gennas writes it: one row per architecture and
// epoch count; samples, validation loss and accuracy, and the training
// seconds so far, at that epoch count.
const BenchmarkHeader = "hash,arch,params,flops,epochs,samples,val_loss,val_accuracy,seconds"

// BenchmarkArch is one architecture of a tabular NAS benchmark and its
// measured single-node training throughput.
type BenchmarkArch struct {
	// Hash is Hash(Arch); Name the cell in NAS-Bench-201's notation;
	// Arch its JSON.
	Hash, Name, Arch string
	// Params and Flops are the trainer's counts (Flops: convolutions' and
	// the dense layer's multiply–adds).
	Params, Flops float64
	// Rate is the fastest of the timed intervals after the first epoch
	// count's, in samples/s: a table timed on a machine others shared ran
	// slower for a while, never faster, so the fastest interval is the
	// closest to the architecture's own speed (as timeit reports the
	// minimum). Median is their median, Spread their relative range.
	Rate, Median, Spread float64
}

// ReadBenchmark reads a tabular NAS benchmark (BenchmarkHeader, after
// lines of # comments) whose cells are stacks × cells at channels, and
// returns its architectures in the table's order with their throughput.
// Errors name the line.
func ReadBenchmark(r io.Reader, stacks, cells, channels int) ([]BenchmarkArch, error) {
	type point struct{ samples, seconds float64 }
	points := map[string][]point{}
	var order []BenchmarkArch
	sc := bufio.NewScanner(r)
	header := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !header {
			if line != BenchmarkHeader {
				return nil, fmt.Errorf("line %d: header %q, want %s", n, line, BenchmarkHeader)
			}
			header = true
			continue
		}
		fs := strings.Split(line, ",")
		if len(fs) != 9 {
			return nil, fmt.Errorf("line %d: %d fields, want 9", n, len(fs))
		}
		params, err1 := strconv.ParseFloat(fs[2], 64)
		flops, err2 := strconv.ParseFloat(fs[3], 64)
		samples, err3 := strconv.ParseFloat(fs[5], 64)
		seconds, err4 := strconv.ParseFloat(fs[8], 64)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, seen := points[fs[0]]; !seen {
			c, err := ParseNB201(fs[1], stacks, cells, channels)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			arch := Architecture{Cell: &c}.JSON()
			if h := Hash(arch); h != fs[0] {
				return nil, fmt.Errorf("line %d: %s hashes to %s, the table says %s", n, fs[1], h, fs[0])
			}
			order = append(order, BenchmarkArch{Hash: fs[0], Name: fs[1], Arch: arch, Params: params, Flops: flops})
		}
		points[fs[0]] = append(points[fs[0]], point{samples, seconds})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, errors.New("no rows")
	}
	for i := range order {
		p := points[order[i].Hash]
		var rates []float64
		for k := 1; k < len(p); k++ {
			ds, dt := p[k].samples-p[k-1].samples, p[k].seconds-p[k-1].seconds
			if r := ds / dt; ds > 0 && dt > 0 && !math.IsInf(r, 0) {
				rates = append(rates, r)
			}
		}
		if len(rates) == 0 {
			return nil, fmt.Errorf("%s has no interval with samples and seconds both increasing after its first row", order[i].Name)
		}
		order[i].Rate, order[i].Median = slices.Max(rates), stats.Quantile(rates, 0.5)
		order[i].Spread = (slices.Max(rates) - slices.Min(rates)) / order[i].Median
	}
	return order, nil
}

// ParseNB201 reads a cell in NAS-Bench-201's notation
// (|op~0|+|op~0|op~1|+…, Cell.String) at the given size.
func ParseNB201(s string, stacks, cells, channels int) (Cell, error) {
	c := Cell{Stacks: stacks, Cells: cells, Channels: channels}
	for r, node := range strings.Split(s, "+") {
		node = strings.TrimSuffix(strings.TrimPrefix(node, "|"), "|")
		var row []string
		for j, e := range strings.Split(node, "|") {
			op, from, ok := strings.Cut(e, "~")
			if !ok || from != strconv.Itoa(j) {
				return Cell{}, fmt.Errorf("%q: node %d's edge %q, want op~%d", s, r+1, e, j)
			}
			row = append(row, op)
		}
		if len(row) != r+1 {
			return Cell{}, fmt.Errorf("%q: node %d has %d edges, want %d", s, r+1, len(row), r+1)
		}
		c.Edges = append(c.Edges, row)
	}
	c.Nodes = len(c.Edges) + 1
	return c, c.Validate()
}
