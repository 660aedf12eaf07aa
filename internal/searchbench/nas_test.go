package searchbench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/nas"
)

// nasCellArchs enumerates nasCellSpace by brute force, as gennas does:
// every assignment of an operation to each of the 6 edges, through the
// space's canonical form. It returns the canonical architectures, each
// with one raw (not canonical) form of it.
func nasCellArchs(t *testing.T) map[string]string {
	t.Helper()
	d := hpo.Param{Name: "arch", Type: hpo.ParamArch, Architecture: &hpo.ArchSpec{Cell: &nasCellSpace}}
	space, err := d.Architectures()
	if err != nil {
		t.Fatal(err)
	}
	ops := nasCellSpace.Ops
	out := map[string]string{}
	for code := range int(math.Pow(float64(len(ops)), 6)) {
		var e [6]string
		for k, c := 0, code; k < 6; k, c = k+1, c/len(ops) {
			e[k] = ops[c%len(ops)]
		}
		raw := fmt.Sprintf(`{"cell":{"nodes":4,"edges":[[%q],[%q,%q],[%q,%q,%q]],"stacks":2,"cells":1,"channels":8}}`,
			e[0], e[1], e[2], e[3], e[4], e[5])
		canon, err := space.Canonical(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if _, ok := out[canon]; !ok {
			out[canon] = raw
		}
	}
	return out
}

// The NAS table is in the build, covers the space exactly (every
// canonical cell once, under its nas.Hash, in its NAS-Bench-201
// notation), and the objective replays it: a trial at any form of an
// architecture reports that architecture's curve.
func TestNASCellTable(t *testing.T) {
	o, err := nasCell()
	if err != nil {
		t.Fatalf("%v\n(the table is part of the build: commit %s once gennas has written it)", err, nasCellFile)
	}
	tab, _ := loadNASTable()
	archs := nasCellArchs(t)
	if len(archs) != 1948 || len(tab.curves) != len(archs) {
		t.Errorf("%d canonical cells in the space (want 1948), %d in the table", len(archs), len(tab.curves))
	}
	if !slices.Equal(tab.epochs, []int{1, 2, 4, 8}) || o.FullBudget != tab.budget {
		t.Errorf("epochs %v, budget %v: want 1, 2, 4, 8", tab.epochs, o.FullBudget)
	}
	best := math.Inf(1)
	for canon, raw := range archs {
		h := nas.Hash(canon)
		a, err := nas.Parse(canon)
		if err != nil {
			t.Fatal(err)
		}
		if got := tab.names[h]; got != a.String() {
			t.Errorf("%s: the table names it %q, want %q", h, got, a.String())
		}
		pts := o.Points(hpo.Params{"arch": hpo.String(raw)})
		if !slices.Equal(pts, tab.curves[h]) || len(pts) != 4 {
			t.Errorf("%s from %s: %v, want its 4 points %v", h, raw, pts, tab.curves[h])
			continue
		}
		best = min(best, pts[3].Value)
	}
	if o.Optimum != best || !(best > 0 && best < 0.2) {
		t.Errorf("optimum %v, best final loss %v: want them equal, and a trained net's (under 0.2)", o.Optimum, best)
	}
	if err := o.Space.Validate(); err != nil {
		t.Error(err)
	}
	if err := CanRun(hpo.AlgorithmGrid, o); err == nil {
		t.Error("grid on an architecture space: no reason to skip it")
	}
	t.Log(o.Doc)
}

func TestParseNASCurvesRejects(t *testing.T) {
	const row = "c10d12431913,|conv_1x1~0|,6146,111264,"
	for _, bad := range []string{
		"hash,arch\n",
		nasCellHeader + "\n",
		nasCellHeader + "\n" + row + "1,1408,2.2,0.2\n",
		nasCellHeader + "\nC10D12431913,|x|,1,1,1,1408,2.2,0.2,0.3\n",
		nasCellHeader + "\n" + row + "1,1408,NaN,0.2,0.3\n",
		nasCellHeader + "\n" + row + "2,2816,1.1,0.7,0.6\n" + row + "1,1408,2.2,0.2,0.3\n",
		nasCellHeader + "\n" + row + "1,1408,2.2,0.2,0.3\n" + "c10d12431913,|skip_connect~0|,1,1,2,2816,1.1,0.7,0.6\n",
		nasCellHeader + "\n" + row + "1,1408,2.2,0.2,0.3\n" + row + "2,2816,1.1,0.7,0.6\n" + "03c36f071166,|conv_3x3~0|,1,1,1,1408,2.2,0.2,0.3\n",
	} {
		if _, err := parseNASCurves([]byte(bad)); err == nil {
			t.Errorf("parseNASCurves(%q): no error", bad)
		}
	}
	tab, err := parseNASCurves([]byte("# a comment\n" + nasCellHeader + "\n" + row + "1,1408,2.2,0.2,0.3\n" + row + "2,2816,1.1,0.7,0.6\n" +
		"03c36f071166,|conv_3x3~0|,1,1,1,1408,2.5,0.2,0.4\n03c36f071166,|conv_3x3~0|,1,1,2,2816,0.9,0.7,0.8\n"))
	if err != nil || tab.optimum != 0.9 || tab.budget != 2816 || math.Abs(tab.seconds-1.4) > 1e-12 || !slices.Equal(tab.epochs, []int{1, 2}) {
		t.Errorf("two architectures: %+v, %v", tab, err)
	}
}

// Regularized evolution against random search on the tabular benchmark,
// in the manner of Real et al.'s comparison on NAS-Bench-101 (E. Real et
// al., "Regularized Evolution for Image Classifier Architecture Search",
// AAAI 2019, figure 8): the median over 30 seeds of the best validation
// loss after N trials, with the quartiles, for N = 25, 50, 100 and 150.
// The runs use the bench's defaults (DefaultWorkers trials at once,
// DefaultCostSigma, DefaultSettings), as `gleaner bench search
// --objectives nas-cell` does. Local search and TPE are reported beside
// them: TPE does not model an architecture parameter, so it samples at
// random and matches random search.
//
// Issue 13's target, asserted (the runs are seeded simulations, no
// timing): evolution's median best is below random search's after 100
// and after 150 trials. It needs the table's two training seeds and lr
// 0.01 (gennas's defaults): at lr 0.05 and one seed the 8-epoch loss was
// mostly seed noise (rank correlation 0.40 between two seeds' losses on
// 50 cells, 0.90 at lr 0.01), a good cell said little about its
// neighbours, and every method tied (docs/nas.md).
func TestEvolutionVsRandomOnNASCell(t *testing.T) {
	o, err := nasCell()
	if err != nil {
		t.Fatal(err)
	}
	const seeds, trials = 30, 150
	at := []int{25, 50, 100, 150}
	curves := map[string]Curve{}
	var b strings.Builder
	fmt.Fprintf(&b, "nas-cell, optimum %.4g: best validation loss after N trials, median [q1, q3] over %d seeds, %d workers\n", o.Optimum, seeds, DefaultWorkers)
	for _, alg := range []string{hpo.AlgorithmRandom, hpo.AlgorithmEvolution, hpo.AlgorithmLocal, hpo.AlgorithmTPE} {
		s := Setup{Algorithm: alg, Settings: DefaultSettings(alg, o), Objective: o, Workers: DefaultWorkers, Trials: trials, CostSigma: DefaultCostSigma}
		c, err := Measure(s, 1, seeds)
		if err != nil {
			t.Fatal(err)
		}
		curves[alg] = c
		fmt.Fprintf(&b, "%-10s", alg)
		for _, n := range at {
			q := c.At(n)
			fmt.Fprintf(&b, "  N=%d %.5f [%.5f, %.5f]", n, q.Median, q.Q1, q.Q3)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "rank correlation of the final loss between neighbouring cells: %.3f", neighbourRankCorrelation(t, o))
	t.Log(b.String())
	for _, n := range []int{100, trials} {
		evo, rnd := curves[hpo.AlgorithmEvolution].At(n), curves[hpo.AlgorithmRandom].At(n)
		if evo.Median >= rnd.Median {
			t.Errorf("after %d trials evolution's median best %.4f, random's %.4f: want evolution's lower", n, evo.Median, rnd.Median)
		}
	}
}

// neighbourRankCorrelation is Spearman's ρ between the final loss of each
// canonical cell of o and that of each of its neighbours (one edge's
// operation away), over every such pair: how much a good cell says about
// its mutations.
func neighbourRankCorrelation(t *testing.T, o Objective) float64 {
	t.Helper()
	space, err := o.Space[0].Architectures()
	if err != nil {
		t.Fatal(err)
	}
	final := func(arch string) float64 {
		pts := o.Points(hpo.Params{"arch": hpo.String(arch)})
		return pts[len(pts)-1].Value
	}
	var xs, ys []float64
	for canon := range nasCellArchs(t) {
		for _, n := range space.Neighbors(canon) {
			xs, ys = append(xs, final(canon)), append(ys, final(n))
		}
	}
	return pearson(ranks(xs), ranks(ys))
}

// ranks are the ranks of xs (ties in index order; a table has few).
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for k, i := range idx {
		r[i] = float64(k)
	}
	return r
}

func pearson(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(len(xs)), my/float64(len(ys))
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	return sxy / math.Sqrt(sxx*syy)
}
