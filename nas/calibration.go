package nas

import (
	"math"
	"slices"
	"sync"
)

// CalibrationMemory is how many architectures a Calibration remembers per
// node type; the oldest measured is forgotten first.
const CalibrationMemory = 256

// Calibration is how far a throughput model's predictions are from what a
// pool's nodes measure. A model timed on another machine, or on a trainer
// without the one's per-step costs (DDP, data loading, logging), is off by
// a factor nearly the same for every architecture: docs/nas.md measured
// 2.5–3.8× on the example's table against its own model, the model's own
// spread being the −26 %…+11 % around the median. Calibration keeps, per
// node type, the ratio of measured to predicted throughput of each
// architecture measured there (its latest), and scales a prediction by
// the median ratio of the others: an architecture's own measurement never
// enters its own prediction, so the prediction of a trial is one made
// without that trial.
//
// Safe for concurrent use; the zero value is ready.
type Calibration struct {
	mu     sync.Mutex
	byType map[string]*ratios
}

// ratios are one node type's ln(measured/predicted), by architecture, and
// the order they were first seen in (oldest first).
type ratios struct {
	ln    map[string]float64
	order []string
}

// Observe records that arch, predicted at predicted samples/s on some
// nodes of nodeType, measured measured samples/s there. Values that are
// not positive and finite are ignored.
func (c *Calibration) Observe(nodeType, arch string, measured, predicted float64) {
	if arch == "" || !positive(measured) || !positive(predicted) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byType == nil {
		c.byType = map[string]*ratios{}
	}
	r := c.byType[nodeType]
	if r == nil {
		r = &ratios{ln: map[string]float64{}}
		c.byType[nodeType] = r
	}
	if _, seen := r.ln[arch]; !seen {
		r.order = append(r.order, arch)
		if len(r.order) > CalibrationMemory {
			delete(r.ln, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.ln[arch] = math.Log(measured / predicted)
}

// Factor is what a prediction of arch on nodeType is to be multiplied by:
// the median measured/predicted ratio of the other architectures measured
// on nodeType, and how many they are (1 and 0 when there is none).
func (c *Calibration) Factor(nodeType, arch string) (factor float64, from int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.byType[nodeType]
	if r == nil {
		return 1, 0
	}
	others := make([]float64, 0, len(r.ln))
	for a, v := range r.ln {
		if a != arch {
			others = append(others, v)
		}
	}
	if len(others) == 0 {
		return 1, 0
	}
	slices.Sort(others)
	m := len(others) / 2
	med := others[m]
	if len(others)%2 == 0 {
		med = (others[m-1] + others[m]) / 2
	}
	return math.Exp(med), len(others)
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
