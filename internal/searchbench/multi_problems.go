package searchbench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/nas"
)

// The problems of bench search-multi. scripts/multi_vs_optuna.py defines
// each again, for Optuna; TestMultiProblemsMatchPython holds the two to
// the same values.
const (
	ProblemZDT1    = "zdt1"
	ProblemDTLZ2   = "dtlz2"
	ProblemTNK     = "tnk"
	ProblemNASCell = "nas-cell-latency"
)

// Problems are the multi bench's problems, in a fixed order. The NAS
// problem is left out of a build without its table (LookupProblems says
// why).
func Problems() []Problem {
	ps := []Problem{zdt1(6), dtlz2(3, 7), tnk()}
	if p, err := nasCellLatency(); err == nil {
		ps = append(ps, p)
	}
	return ps
}

// ProblemNames lists Problems' names.
func ProblemNames() []string {
	var names []string
	for _, p := range Problems() {
		names = append(names, p.Name)
	}
	return names
}

// LookupProblems returns the named problems, in the order given.
func LookupProblems(names []string) ([]Problem, error) {
	all := Problems()
	var out []Problem
	for _, n := range names {
		i := slices.IndexFunc(all, func(p Problem) bool { return p.Name == n })
		if i < 0 && n == ProblemNASCell {
			if _, err := nasCellLatency(); err != nil {
				return nil, err
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("problem %q is not one of %s", n, strings.Join(ProblemNames(), ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func minimise(names ...string) []hpo.Objective {
	out := make([]hpo.Objective, len(names))
	for i, n := range names {
		out[i] = hpo.Objective{Metric: n, Mode: "min"}
	}
	return out
}

// zdt1 is ZDT1 (Zitzler, Deb and Thiele, Evol. Comput. 8(2), 2000) in n
// dimensions, x ∈ [0, 1]ⁿ: f₁ = x₁, g = 1 + 9·Σᵢ₌₂ⁿ xᵢ/(n−1), f₂ =
// g·(1 − √(f₁/g)), both minimised. Its Pareto front is f₂ = 1 − √f₁ (g =
// 1: x₂…xₙ = 0), whose hypervolume at (1.1, 1.1) is ∫₀¹(0.1 + √f)df + 0.1
// ·1.1 = 0.1 + 2/3 + 0.11.
func zdt1(n int) Problem {
	return Problem{
		Name: ProblemZDT1,
		Doc: fmt.Sprintf("ZDT1, %d floats in [0, 1], 2 objectives minimised; front f2 = 1 − √f1; reference point (1.1, 1.1), "+
			"front hypervolume 0.876667", n),
		Space:      floats(xnames(n), 0, 1),
		Objectives: minimise("f1", "f2"),
		Ref:        []float64{1.1, 1.1},
		FrontHV:    0.1 + 2.0/3 + 0.11,
		F: func(p hpo.Params) hpo.Result {
			x := xs(p, n)
			g := 0.0
			for _, v := range x[1:] {
				g += v
			}
			g = 1 + 9*g/float64(n-1)
			return hpo.Result{Values: []float64{x[0], g * (1 - math.Sqrt(x[0]/g))}}
		},
	}
}

// dtlz2 is DTLZ2 (Deb, Thiele, Laumanns and Zitzler, CEC 2002) with m
// objectives in n dimensions, x ∈ [0, 1]ⁿ: g = Σᵢ₌ₘⁿ (xᵢ − ½)² over the
// last k = n − m + 1 variables, and
//
//	fⱼ = (1+g) · Πᵢ₌₁^{m−j} cos(xᵢπ/2) · (sin(x_{m−j+1}π/2) if j > 1),
//
// all minimised. Its front is the unit sphere's positive orthant (g = 0);
// at (1.1, …, 1.1) in three objectives its hypervolume is 1.1³ − π/6, the
// box less the eighth of the unit ball.
func dtlz2(m, n int) Problem {
	names := make([]string, m)
	ref := make([]float64, m)
	for j := range names {
		names[j], ref[j] = fmt.Sprintf("f%d", j+1), 1.1
	}
	front := math.NaN()
	if m == 3 {
		front = 1.1*1.1*1.1 - math.Pi/6
	}
	return Problem{
		Name: ProblemDTLZ2,
		Doc: fmt.Sprintf("DTLZ2, %d floats in [0, 1], %d objectives minimised; front the unit sphere's positive orthant; "+
			"reference point (1.1, 1.1, 1.1), front hypervolume 1.1³ − π/6 = %.6f", n, m, front),
		Space:      floats(xnames(n), 0, 1),
		Objectives: minimise(names...),
		Ref:        ref,
		FrontHV:    front,
		F: func(p hpo.Params) hpo.Result {
			x := xs(p, n)
			g := 0.0
			for _, v := range x[m-1:] {
				g += (v - 0.5) * (v - 0.5)
			}
			f := make([]float64, m)
			for j := range f {
				v := 1 + g
				for _, xi := range x[:m-1-j] {
					v *= math.Cos(xi * math.Pi / 2)
				}
				if j > 0 {
					v *= math.Sin(x[m-1-j] * math.Pi / 2)
				}
				f[j] = v
			}
			return hpo.Result{Values: f}
		},
	}
}

// tnkFrontHV is the hypervolume of TNK's Pareto front at (1.2, 1.2), of
// 200,001 points along c1's boundary where c2 holds (TestTNKFront).
const tnkFrontHV = 0.655059

// tnk is TNK (Tanaka et al., 1995; Deb, Multi-Objective Optimization
// Using Evolutionary Algorithms, 2001), x ∈ [0, π]²: f₁ = x₁, f₂ = x₂,
// both minimised, under two constraints,
//
//	c1 = x₁² + x₂² − 1 − 0.1·cos(16·atan2(x₁, x₂)) ≥ 0
//	c2 = (x₁ − ½)² + (x₂ − ½)² ≤ ½
//
// (atan2 for the arctan(x₁/x₂) of the papers, defined at x₂ = 0). The
// feasible region is about 5 % of the box, and the front lies on c1's
// wavy boundary, in pieces.
func tnk() Problem {
	lo, hi := 0.0, 0.5
	return Problem{
		Name: ProblemTNK,
		Doc: "TNK, 2 floats in [0, π], 2 objectives (x1, x2) minimised under c1 = x1² + x2² − 1 − 0.1·cos(16·atan2(x1, x2)) ≥ 0 " +
			"and c2 = (x1 − ½)² + (x2 − ½)² ≤ ½; front on c1's boundary; reference point (1.2, 1.2), " +
			fmt.Sprintf("front hypervolume %.4f", tnkFrontHV),
		Space:       floats(xnames(2), 0, math.Pi),
		Objectives:  minimise("f1", "f2"),
		Constraints: []hpo.Constraint{{Metric: "c1", Min: &lo}, {Metric: "c2", Max: &hi}},
		Ref:         []float64{1.2, 1.2},
		FrontHV:     tnkFrontHV,
		F: func(p hpo.Params) hpo.Result {
			x1, x2 := p["x1"].Num, p["x2"].Num
			return hpo.Result{Values: []float64{x1, x2}, Constraints: tnkConstraints(x1, x2)}
		},
	}
}

func tnkConstraints(x1, x2 float64) []float64 {
	return []float64{
		x1*x1 + x2*x2 - 1 - 0.1*math.Cos(16*math.Atan2(x1, x2)),
		(x1-0.5)*(x1-0.5) + (x2-0.5)*(x2-0.5),
	}
}

// nasMultiFile is the NAS problem's table (internal/searchbench/genmulti
// writes it from the nas-cell table and the NAS example's throughput
// model).
const nasMultiFile = "curves/nas-multi.csv"

// nasMultiHeader is its header.
const nasMultiHeader = "edges,hash,val_accuracy,ms_per_sample"

// nasPoint is a cell's two objectives.
type nasPoint struct{ accuracy, latency float64 }

var (
	nasMultiOnce sync.Once
	nasMultiTab  map[string]nasPoint
	nasMultiErr  error
)

// loadNASMulti parses the embedded table once, by nas.Hash.
func loadNASMulti() (map[string]nasPoint, error) {
	nasMultiOnce.Do(func() {
		b, err := curveFiles.ReadFile(nasMultiFile)
		if err != nil {
			nasMultiErr = fmt.Errorf("%s is not in the build (%w): go run ./internal/searchbench/genmulti writes it", nasMultiFile, err)
			return
		}
		if nasMultiTab, err = parseNASMulti(b); err != nil {
			nasMultiErr = fmt.Errorf("%s: %w", nasMultiFile, err)
		}
	})
	return nasMultiTab, nasMultiErr
}

// parseNASMulti reads genmulti's rows; a hash on several rows (isomorphic
// cells) must carry the same values. Errors name the line.
func parseNASMulti(b []byte) (map[string]nasPoint, error) {
	t := map[string]nasPoint{}
	err := scanTable(b, nasMultiHeader, 4, func(n int, f []string) error {
		acc, err1 := strconv.ParseFloat(f[2], 64)
		lat, err2 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil || !(acc >= 0 && acc <= 1) || !(lat > 0) || math.IsInf(lat, 0) {
			return fmt.Errorf("line %d: accuracy %q and latency %q: want a number in [0, 1] and a finite one > 0", n, f[2], f[3])
		}
		p := nasPoint{acc, lat}
		if q, ok := t[f[1]]; ok && q != p {
			return fmt.Errorf("line %d: hash %s is %v here, %v above", n, f[1], p, q)
		}
		t[f[1]] = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// nasCellLatency is the tabular NAS benchmark with two objectives: one
// architecture parameter over nas-cell's space; a trial reports the cell's
// validation accuracy after the table's last epoch count (maximised) and
// its predicted latency, the milliseconds per training sample at a batch
// of 64 on one node by the throughput model (minimised; what a worker
// with that model reports as predicted_ms_per_sample). Its reference
// point is (accuracy 0.95, about the median cell's 0.954, and 0.125 ms,
// past the slowest cell's 0.115 ms): from 0 every run's hypervolume came
// within 0.5 % of the front's, which the cells no better than chance
// fill; its front hypervolume is that of the table's own Pareto front.
func nasCellLatency() (Problem, error) {
	t, err := loadNASMulti()
	if err != nil {
		return Problem{}, fmt.Errorf("problem %s: %w", ProblemNASCell, err)
	}
	space := nasCellSpace
	space.Ops = slices.Clone(space.Ops)
	p := Problem{
		Name:       ProblemNASCell,
		Space:      hpo.Space{{Name: "arch", Type: hpo.ParamArch, Architecture: &hpo.ArchSpec{Cell: &space}}},
		Objectives: []hpo.Objective{{Metric: "accuracy", Mode: "max"}, {Metric: "predicted_ms_per_sample", Mode: "min"}},
		Ref:        []float64{0.95, 0.125},
		F: func(p hpo.Params) hpo.Result {
			arch := p["arch"].Str
			c, ok := t[nas.Hash(arch)]
			if !ok { // the table covers the space (TestNASMultiTable): a searcher proposed outside it
				panic(fmt.Sprintf("searchbench: %s: architecture %s is not in %s", ProblemNASCell, hpo.DescribeValue(p["arch"]), nasMultiFile))
			}
			return hpo.Result{Values: []float64{c.accuracy, c.latency}}
		},
	}
	all := make([]hpo.Result, 0, len(t))
	for _, c := range t {
		all = append(all, hpo.Result{Values: []float64{c.accuracy, c.latency}})
	}
	p.FrontHV = p.Goals().Hypervolume(all, p.Ref)
	p.Doc = fmt.Sprintf("tabular NAS, nas-cell's %d canonical cells: validation accuracy on digits (max) × predicted latency "+
		"per sample, batch 64, one node, by the throughput model (min, ms) (%s); reference point (0.95, 0.125 ms), "+
		"front hypervolume %.6f", len(t), nasMultiFile, p.FrontHV)
	return p, nil
}
