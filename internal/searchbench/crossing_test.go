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

// The late family crosses late: the best trial at the third rung (R/3)
// ends well above the optimum, and the optimum is slower than it.
func TestCrossingLateCrosses(t *testing.T) {
	o := crossingLate()
	type best struct{ lr, w, v float64 }
	at := func(frac float64) best {
		b := best{v: math.Inf(1)}
		for i := range 201 {
			for j := range 201 {
				lr, w := math.Pow(10, 4*float64(i)/200-4), float64(j)/200
				if v := crossingLateLoss(lr, w, 0.3, frac); v < b.v {
					b = best{lr, w, v}
				}
			}
		}
		return b
	}
	third, end := at(1.0/3), at(1)
	if final := crossingLateLoss(third.lr, third.w, 0.3, 1); final < 1.5*o.Optimum {
		t.Errorf("the third rung's best ends at %.3f, want at least 1.5× the optimum %.3f", final, o.Optimum)
	}
	if !(end.w > third.w && end.lr < third.lr) {
		t.Errorf("the final best (lr %.2g, w %.2f) is not slower than the third rung's (lr %.2g, w %.2f)", end.lr, end.w, third.lr, third.w)
	}
}
