package searchbench

import (
	"math"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// The crossing curves cross: at the first ASHA rung (R/27) a fast starter
// (u = 0.7) is ahead of the final optimum's slow starter (u = 0.15), at
// the end far behind; the optimum is u ≈ 0.15 with Q = 0.
func TestCrossingCurvesCross(t *testing.T) {
	o := crossing()
	at := func(u, samples float64) float64 {
		pts := o.Curve(hpo.Params{"lr": hpo.Float(math.Pow(10, 4*u-4)), "q1": hpo.Float(0.7), "q2": hpo.Float(0.2)})
		return pts[int(samples)-1].Value
	}
	if fast, slow := at(0.7, 3), at(0.15, 3); !(fast < slow/2) {
		t.Errorf("rung 0: fast %v, slow %v; want fast well ahead", fast, slow)
	}
	if fast, slow := at(0.7, 81), at(0.15, 81); !(slow < fast/3) {
		t.Errorf("end: fast %v, slow %v; want slow well ahead", fast, slow)
	}
	if math.Abs(o.Optimum-at(0.15, 81)) > 0.01 || o.Optimum > at(0.15, 81) {
		t.Errorf("optimum %v, the curve at u = 0.15 ends at %v", o.Optimum, at(0.15, 81))
	}
}
