package hpo

import (
	"math"
	"slices"
	"testing"
)

// Multivariate TPE's joint l and g against Optuna 3.1's, frozen:
// TPESampler(multivariate=True, constant_liar=True)'s split and
// _ParzenEstimator.log_pdf (/usr/bin/python3, python3-optuna 3.1.0) on
// optuna31Trials, at joint points: the corners of the space, points near
// good trials and between them. Optuna 3.1 scores a float's kernel by its
// height φ(z)/Z (no 1/σ), an int's by its mass on the cell; Scott's σ is
// 0.2·n^(−1/(5+4)) of each range, 0.17702 for l's 3 trials and 0.13758
// for g's 29. Revision 1 scored true densities (each observation's kernel
// (1/σ)³ higher: two floats and a log int), which these values tell
// apart: next to a good trial, at (1.3, 0.6, 69, 632, a), its log l was
// −2.78 against Optuna's −6.81.
func TestTPEJointModelsAsOptuna31(t *testing.T) {
	space, rows, metrics, running := optuna31Trials()
	points := [][]float64{ // x, lr, k, h, opt: log l, log g
		{-5, 1e-5, 1, 1, 0}, {0.5, 0.0003, 17, 40, 3}, {1.3, 0.6, 69, 632, 0},
		{4.1, 0.0004, 16, 1000, 1}, {9.99, 1, 100, 2000, 2}, {-3.7, 0.0003, 50, 300, 3},
	}
	logL := []float64{-7.673064793816016, -7.26911892754825, -6.81114372954842,
		-6.866938488210754, -7.710227614140346, -6.897472976182215}
	logG := []float64{-9.621440872727172, -9.225854481198224, -9.314633859586733,
		-9.045206248826151, -9.60536866241569, -9.226826297824104}
	for _, rev := range []int{revisionJointHeight - 1, Revision} {
		tp := newTPE(Config{Algorithm: AlgorithmTPE, Space: space, Seed: 1, MaxTrials: 40, MaxConcurrent: 2, Mode: "min",
			Settings: Settings{TPE: &TPESettings{Multivariate: true}}, Revision: rev})
		for i, r := range rows {
			tp.observe(r, metrics[i], false, i)
		}
		tp.st.Pending = running
		tp.split()
		if got := tp.scr.below; !slices.Equal(got, []int32{2, 6, 24}) {
			t.Fatalf("revision %d: l models observations %v, want Optuna's [2 6 24]", rev, got)
		}
		tp.fitJoint(&tp.scr.tpeSplit, tp.joint, tp.jdims)
		u := make([]float64, len(space))
		for k, x := range points {
			for d, dm := range tp.dims {
				u[d] = dm.toUnit(x[d])
			}
			l, g := tp.scr.jl.logDensity(u), tp.scr.jg.logDensity(u)
			match := near(l, logL[k], 1e-9) && near(g, logG[k], 1e-9)
			switch {
			case rev >= revisionJointHeight && !match:
				t.Errorf("revision %d at %v: log l %.15g, log g %.15g; Optuna %.15g, %.15g", rev, x, l, g, logL[k], logG[k])
			case rev < revisionJointHeight && match:
				t.Errorf("revision %d at %v: scores as Optuna 3.1 (log l %.15g); it must keep its true densities", rev, x, l)
			}
		}
	}
}

// Scott's bandwidth counts the parameters Optuna models: from revision 2,
// not a constant, a choice of one value or an int of one cell.
func TestTPEJointBandwidthCountsModelledParams(t *testing.T) {
	dims := []dim{
		newDim(Param{Name: "x", Type: ParamFloat, Min: 0, Max: 1}),
		newDim(Param{Name: "y", Type: ParamFloat, Min: 0, Max: 1}),
		newDim(Param{Name: "k", Type: ParamFloat, Min: 2, Max: 2}),
		newDim(Param{Name: "c", Type: ParamChoice, Choices: []string{"only"}}),
		newDim(Param{Name: "n", Type: ParamInt, Min: 3, Max: 3}),
	}
	cols := [][]float64{{0.2, 0.4, 0.6, 0.8}, {0.1, 0.3, 0.5, 0.7}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0.5, 0.5, 0.5, 0.5}}
	w := []float64{1, 1, 1, 1}
	for _, c := range []struct {
		height bool
		d      float64
	}{{false, 5}, {true, 2}} {
		set := defaultSet
		set.jointHeight, set.magicClip = c.height, false // the clip (1/6 for 4) would hide σ
		var m jointMixture
		m.fit(dims, cols, w, set)
		if want := 0.2 * math.Pow(4, -1/(c.d+4)); !near(m.sigma, want, 1e-15) {
			t.Errorf("jointHeight %v: σ %v, want 0.2·4^(−1/(%v+4)) = %v", c.height, m.sigma, c.d, want)
		}
	}
}
