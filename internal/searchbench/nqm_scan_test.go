package searchbench

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func envf(k string, d float64) float64 {
	if v := os.Getenv(k); v != "" {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return d
}

func TestNQMScan(t *testing.T) {
	if os.Getenv("SCAN") == "" {
		t.Skip()
	}
	d := int(envf("D", 5))
	hmin := envf("HMIN", 0.1)
	curv := make([]float64, d)
	for i := range curv {
		curv[i] = 1
		if d > 1 {
			curv[i] = math.Pow(hmin, float64(i)/float64(d-1))
		}
	}
	q := nqmModel{curv: curv, noise: envf("C", 0.01), start: 1, steps: envf("T", 500), every: envf("E", 5)}
	o := q.objective("nqm", "", envf("LO", 1e-4), envf("HI", 1))
	// constant scan
	run := func(lr func(k int) float64) float64 {
		m := o.Trainer.Init()
		for k := range int(q.steps) {
			q.step(m, lr(k))
		}
		return q.loss(m)
	}
	best, ba := math.Inf(1), 0.0
	for k := 0; k <= 400; k++ {
		a := math.Pow(10, -4+4*float64(k)/400)
		if l := run(func(int) float64 { return a }); l < best {
			best, ba = l, a
		}
	}
	fmt.Printf("const %.4g at %.4g, bound %.4g\n", best, ba, o.Optimum)
	pbt := hpo.PBTSettings{Interval: q.steps * envf("INT", 0.1), MaxBudget: q.steps, Population: 8, Quantile: envf("Q", 0.25)}
	if s := os.Getenv("PERTURB"); s != "" {
		pbt.Perturb = nil
		for _, f := range strings.Split(s, ",") {
			x, _ := strconv.ParseFloat(f, 64)
			pbt.Perturb = append(pbt.Perturb, x)
		}
	}
	if s := os.Getenv("RESAMPLE"); s != "" {
		r := envf("RESAMPLE", 0)
		pbt.ResampleProbability = &r
	}
	b := int(envf("B", 8))
	for _, alg := range []string{"random", "pbt"} {
		s := Setup{Algorithm: alg, Objective: o, Workers: 8, Trials: 100, CostSigma: 0.3}
		if alg == "pbt" {
			s.Settings = hpo.Settings{PBT: &pbt}
		}
		c, err := Measure(s, 1, 20)
		if err != nil {
			t.Fatal(err)
		}
		var tot []float64
		for _, r := range c.Runs {
			tot = append(tot, r[len(r)-1].Budget)
		}
		fmt.Printf("%s total %.3g\n", alg, quartiles(tot))
		fmt.Printf("%s at B=%d: %+v   at 25: %+v\n", alg, b, c.AtBudget(b), c.AtBudget(25))
	}
}
