package searchbench

import (
	"embed"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/nas"
)

// curveFiles are the learning-curve tables. The NAS table is read from
// here on first use rather than embedded by name, so that a build without
// it (gennas takes half an hour to write it) still has the other
// objectives; nasCell says why it is missing.
//
//go:embed curves/*.csv
var curveFiles embed.FS

// NASCell names the tabular NAS objective.
const NASCell = "nas-cell"

// nasCellFile is the table gennas writes (internal/searchbench/gennas).
const nasCellFile = "curves/nas-cell.csv"

// nasCellSpace is the cell space the table covers, the one gennas trains
// whole: NAS-Bench-201's cell without avg_pool_3x3, 4^6 = 4,096 cells,
// 1,948 after package nas's canonical form.
var nasCellSpace = hpo.CellSpace{Nodes: 4, Ops: []string{"none", "skip_connect", "conv_1x1", "conv_3x3"}, Stacks: 2, Cells: 1, Channels: 8}

// nasCellHeader is the table's header (gennas writes it).
const nasCellHeader = nas.BenchmarkHeader

// nasTable is the parsed NAS table, by architecture hash (nas.Hash).
type nasTable struct {
	curves map[string][]Point // validation loss after each epoch count, in samples
	names  map[string]string  // NAS-Bench-201 notation
	epochs []int              // the epoch counts, shared by every row
	// budget is a curve's last samples; optimum the best loss there;
	// seconds the training time of the whole table on one core.
	budget, optimum, seconds float64
}

var (
	nasOnce  sync.Once
	nasTab   *nasTable
	nasErr   error
	hashForm = regexp.MustCompile(`^[0-9a-f]{12}$`)
)

// loadNASTable parses the embedded NAS table once.
func loadNASTable() (*nasTable, error) {
	nasOnce.Do(func() {
		b, err := curveFiles.ReadFile(nasCellFile)
		if err != nil {
			nasErr = fmt.Errorf("%s is not in the build (%w): go run ./internal/searchbench/gennas writes it", nasCellFile, err)
			return
		}
		if nasTab, err = parseNASCurves(b); err != nil {
			nasErr = fmt.Errorf("%s: %w", nasCellFile, err)
		}
	})
	return nasTab, nasErr
}

// parseNASCurves reads gennas's rows (after # comments and the header):
// one per architecture and epoch count, an architecture's rows in
// increasing samples, every architecture at the same epochs and samples.
// Errors name the line.
func parseNASCurves(b []byte) (*nasTable, error) {
	t := &nasTable{curves: map[string][]Point{}, names: map[string]string{}, optimum: math.Inf(1)}
	epochs, seconds := map[string][]int{}, map[string]float64{}
	err := scanTable(b, nasCellHeader, 9, func(n int, f []string) error {
		hash, name := f[0], f[1]
		if !hashForm.MatchString(hash) {
			return fmt.Errorf("line %d: hash %q is not 12 hex digits (nas.Hash)", n, hash)
		}
		var v [7]float64 // params, flops, epochs, samples, val_loss, val_accuracy, seconds
		for i, s := range f[2:] {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("line %d: field %d: %q is not a finite number", n, i+3, s)
			}
			v[i] = x
		}
		c := t.curves[hash]
		switch {
		case len(c) > 0 && t.names[hash] != name:
			return fmt.Errorf("line %d: hash %s is %s here, %s above", n, hash, name, t.names[hash])
		case len(c) > 0 && v[3] <= c[len(c)-1].Samples:
			return fmt.Errorf("line %d: %s at %g samples after %g: want them increasing", n, hash, v[3], c[len(c)-1].Samples)
		}
		t.names[hash] = name
		t.curves[hash] = append(c, Point{Samples: v[3], Value: v[4]})
		epochs[hash] = append(epochs[hash], int(v[2]))
		seconds[hash] = v[6] // training time so far: the last row's is the curve's
		return nil
	})
	if err != nil {
		return nil, err
	}
	hashes := make([]string, 0, len(t.curves))
	for h := range t.curves {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	first := t.curves[hashes[0]]
	t.epochs, t.budget = epochs[hashes[0]], first[len(first)-1].Samples
	for _, h := range hashes {
		c := t.curves[h]
		same := len(c) == len(first) && slices.Equal(epochs[h], t.epochs)
		for i := 0; same && i < len(c); i++ {
			same = c[i].Samples == first[i].Samples
		}
		if !same {
			return nil, fmt.Errorf("%s (%s) is at epochs %v, samples %v; %s at %v, %v: want every architecture at the same",
				h, t.names[h], epochs[h], samplesOf(c), hashes[0], t.epochs, samplesOf(first))
		}
		t.optimum = min(t.optimum, c[len(c)-1].Value)
		t.seconds += seconds[h]
	}
	return t, nil
}

func samplesOf(c []Point) []float64 {
	out := make([]float64, len(c))
	for i, p := range c {
		out[i] = p.Samples
	}
	return out
}

// nasCell is the tabular NAS benchmark (in the manner of NAS-Bench-101 and
// -201: Ying et al. 2019, Dong & Yang 2020): one architecture parameter,
// arch, over nasCellSpace, and a trial at arch reports the validation
// loss the table holds for it (found by nas.Hash, so any of its
// isomorphic forms) after each epoch count, progress in training
// samples. Its optimum is the best loss after the last epoch count. The
// table's training times are not the trials' durations: the simulated
// workers draw those from their cost model, as for every objective.
func nasCell() (Objective, error) {
	t, err := loadNASTable()
	if err != nil {
		return Objective{}, fmt.Errorf("objective %s: %w", NASCell, err)
	}
	space := nasCellSpace
	space.Ops = slices.Clone(space.Ops)
	eps := make([]string, len(t.epochs))
	for i, e := range t.epochs {
		eps[i] = strconv.Itoa(e)
	}
	return Objective{
		Name: NASCell,
		Doc: fmt.Sprintf("tabular NAS: validation loss on digits of every one of %d canonical NAS-Bench-201-style cells (4 nodes; %s) "+
			"after %s epochs, %g samples in all (%s, %.0f s of training on one core)",
			len(t.curves), strings.Join(space.Ops, ", "), strings.Join(eps, ", "), t.budget, nasCellFile, t.seconds),
		Space:      hpo.Space{{Name: "arch", Type: hpo.ParamArch, Architecture: &hpo.ArchSpec{Cell: &space}}},
		Optimum:    t.optimum,
		FullBudget: t.budget,
		Curve: func(p hpo.Params) []Point {
			arch := p["arch"].Str
			c, ok := t.curves[nas.Hash(arch)]
			if !ok { // the table covers the space (TestNASCellTable): a searcher proposed outside it
				panic(fmt.Sprintf("searchbench: %s: architecture %s is not in %s", NASCell, hpo.DescribeValue(p["arch"]), nasCellFile))
			}
			return c
		},
	}, nil
}
