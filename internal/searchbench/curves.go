package searchbench

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// goMLPFile is the learning-curve table gencurves wrote (its header says
// how): examples/go-mlp on a grid of its parameters.
const goMLPFile = "curves/go-mlp.csv"

// curveKey is a configuration of the table.
type curveKey struct {
	lr       float64
	hidden   int
	batch    int
	momentum float64
}

// curveTable is the parsed table and the grid values of each parameter.
type curveTable struct {
	curves                map[curveKey][]Point
	lrs, momenta          []float64
	hiddens, batches      []int
	budget, best, optimum float64
}

var (
	tableOnce sync.Once
	table     *curveTable
	tableErr  error
)

func loadTable() (*curveTable, error) {
	tableOnce.Do(func() {
		b, err := curveFiles.ReadFile(goMLPFile)
		if err != nil {
			tableErr = err
			return
		}
		table, tableErr = parseCurves(b)
	})
	return table, tableErr
}

// parseCurves reads "lr,hidden,batch,momentum,samples,val_loss" rows
// (after # comments and the header); errors name the line.
func parseCurves(b []byte) (*curveTable, error) {
	t := &curveTable{curves: map[curveKey][]Point{}, optimum: math.Inf(1)}
	sc := bufio.NewScanner(bytes.NewReader(b))
	seen := map[string]map[float64]bool{"lr": {}, "hidden": {}, "batch": {}, "momentum": {}}
	n, header := 0, false
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !header {
			if line != "lr,hidden,batch,momentum,samples,val_loss" {
				return nil, fmt.Errorf("curves line %d: header %q, want lr,hidden,batch,momentum,samples,val_loss", n, line)
			}
			header = true
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 6 {
			return nil, fmt.Errorf("curves line %d: %d fields, want 6", n, len(f))
		}
		var v [6]float64
		for i, s := range f {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("curves line %d: field %d: %q is not a finite number", n, i+1, s)
			}
			v[i] = x
		}
		k := curveKey{lr: v[0], hidden: int(v[1]), batch: int(v[2]), momentum: v[3]}
		t.curves[k] = append(t.curves[k], Point{Samples: v[4], Value: v[5]})
		t.budget = max(t.budget, v[4])
		for i, name := range []string{"lr", "hidden", "batch", "momentum"} {
			seen[name][v[i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.curves) == 0 {
		return nil, fmt.Errorf("curves: no rows")
	}
	t.lrs, t.momenta = sortedKeys(seen["lr"]), sortedKeys(seen["momentum"])
	for _, h := range sortedKeys(seen["hidden"]) {
		t.hiddens = append(t.hiddens, int(h))
	}
	for _, b := range sortedKeys(seen["batch"]) {
		t.batches = append(t.batches, int(b))
	}
	for k, c := range t.curves {
		if len(c) == 0 || c[len(c)-1].Samples != t.budget {
			return nil, fmt.Errorf("curves: %+v does not reach the budget %v", k, t.budget)
		}
		t.optimum = min(t.optimum, c[len(c)-1].Value)
	}
	if len(t.curves) != len(t.lrs)*len(t.hiddens)*len(t.batches)*len(t.momenta) {
		return nil, fmt.Errorf("curves: %d configurations, not a full grid", len(t.curves))
	}
	return t, nil
}

func sortedKeys(m map[float64]bool) []float64 {
	var out []float64
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// nearest is the value of grid closest to x, in log distance when log.
func nearest(grid []float64, x float64, log bool) float64 {
	best, bd := grid[0], math.Inf(1)
	for _, g := range grid {
		d := math.Abs(g - x)
		if log {
			d = math.Abs(math.Log(g) - math.Log(x))
		}
		if d < bd {
			best, bd = g, d
		}
	}
	return best
}

// goMLP is the learning-curve objective: a trial at p reports the
// validation loss of the table's configuration nearest to p (log distance
// for lr and hidden) after each number of samples. Its optimum is the
// best final loss in the table.
func goMLP() Objective {
	t, err := loadTable()
	if err != nil {
		panic(fmt.Sprintf("searchbench: the embedded curves: %v", err)) // a build defect: the test catches it
	}
	ints := func(xs []int) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = float64(x)
		}
		return out
	}
	var batches, momenta []string
	for _, b := range t.batches {
		batches = append(batches, strconv.Itoa(b))
	}
	for _, m := range t.momenta {
		momenta = append(momenta, strconv.FormatFloat(m, 'g', -1, 64))
	}
	space := hpo.Space{
		{Name: "lr", Type: hpo.ParamFloat, Min: t.lrs[0], Max: t.lrs[len(t.lrs)-1], Log: true},
		{Name: "hidden", Type: hpo.ParamInt, Min: float64(t.hiddens[0]), Max: float64(t.hiddens[len(t.hiddens)-1]), Log: true},
		{Name: "batch", Type: hpo.ParamChoice, Choices: batches},
		{Name: "momentum", Type: hpo.ParamChoice, Choices: momenta},
	}
	return Objective{
		Name: "go-mlp", Doc: fmt.Sprintf("learning curves of examples/go-mlp: %d configurations, %g samples each (curves/go-mlp.csv)", len(t.curves), t.budget),
		Space: space, Optimum: t.optimum, FullBudget: t.budget,
		Curve: func(p hpo.Params) []Point {
			b, _ := strconv.Atoi(p["batch"].Str)
			m, _ := strconv.ParseFloat(p["momentum"].Str, 64)
			k := curveKey{lr: nearest(t.lrs, p["lr"].Num, true), hidden: int(nearest(ints(t.hiddens), p["hidden"].Num, true)), batch: b, momentum: m}
			return t.curves[k]
		},
	}
}
