package jpa

import (
	"fmt"
	"math"
)

// Settings tunes Predict. The zero value (or a nil *Settings) uses the
// defaults documented on each field; they were chosen by the leave-one-app-
// out evaluation documented in docs/jpa.md.
type Settings struct {
	// Neighbours is how many library curves vote at each count, the most
	// heavily weighted first; 0 means all of them.
	Neighbours int
	// Bandwidth h, in log-throughput units, of the Gaussian similarity
	// kernel exp(−d²/2h²) on the local shape distance d between the trial
	// and a library curve (see Predict); 0 means a flat kernel: every
	// library curve of a kind weighs the same. On the real scaling data,
	// matching shapes on three noisy probes picked the wrong neighbours
	// (median MAPE 0.145 at h = 0.5 against 0.095 flat), hence the default.
	Bandwidth float64
	// SameTypeWeight multiplies the weight of a library curve measured on
	// the node type of the observations (the interconnect shapes a curve as
	// much as the model does); 0 means 20.
	SameTypeWeight float64
	// SameGroupWeight multiplies the weight of a sibling curve (same
	// Query.Group): trials of one campaign train one model; 0 means 100.
	SameGroupWeight float64
	// SameModelWeight multiplies the weight of a library curve of the
	// same Query.Model (the same network profiled before, perhaps on
	// another cluster or batch size: seed 003's "similar model" at its
	// most similar); 0 means 50.
	SameModelWeight float64
	// TrendWeight λ is the share of the trial's own local trend (a power
	// law through its two measured counts nearest n) in the prediction
	// beyond or between its measurements, against 1−λ for the library's
	// shapes: a shrinkage of the noisy own trend towards the population;
	// 0 means 0.15, negative means none.
	TrendWeight float64
	// Growth is how fast the log-uncertainty grows with the log-distance
	// to the nearest measured count: σ² gains (Growth·|ln n − ln m|)²;
	// 0 means 0.15.
	Growth float64
	// NoiseFloor is the least relative standard deviation of a measured
	// point; 0 means 0.02.
	NoiseFloor float64
	// PriorWeight multiplies the weight of Query.Prior among the shapes
	// once the trial is measured; 0 means 20,000: ten same-type siblings'
	// (SameTypeWeight × SameGroupWeight each), so the trial's own
	// predicted shape outweighs a campaign's other networks.
	PriorWeight float64
}

func (s *Settings) withDefaults() Settings {
	var o Settings
	if s != nil {
		o = *s
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.SameTypeWeight, 20)
	def(&o.SameGroupWeight, 100)
	def(&o.SameModelWeight, 50)
	def(&o.TrendWeight, 0.15)
	if o.TrendWeight < 0 {
		o.TrendWeight = 0
	}
	def(&o.Growth, 0.15)
	def(&o.NoiseFloor, 0.02)
	def(&o.PriorWeight, 10*o.SameTypeWeight*o.SameGroupWeight)
	return o
}

func (s Settings) validate() error {
	switch {
	case s.Neighbours < 0:
		return fmt.Errorf("%w: Neighbours is %d, want ≥ 0", ErrInvalidSettings, s.Neighbours)
	case !(s.Bandwidth >= 0):
		return fmt.Errorf("%w: Bandwidth is %v, want ≥ 0", ErrInvalidSettings, s.Bandwidth)
	case !(s.SameTypeWeight > 0):
		return fmt.Errorf("%w: SameTypeWeight is %v, want > 0", ErrInvalidSettings, s.SameTypeWeight)
	case !(s.SameGroupWeight > 0):
		return fmt.Errorf("%w: SameGroupWeight is %v, want > 0", ErrInvalidSettings, s.SameGroupWeight)
	case !(s.SameModelWeight > 0):
		return fmt.Errorf("%w: SameModelWeight is %v, want > 0", ErrInvalidSettings, s.SameModelWeight)
	case !(s.TrendWeight < 1):
		return fmt.Errorf("%w: TrendWeight is %v, want < 1", ErrInvalidSettings, s.TrendWeight)
	case !(s.Growth >= 0):
		return fmt.Errorf("%w: Growth is %v, want ≥ 0", ErrInvalidSettings, s.Growth)
	case !(s.NoiseFloor >= 0):
		return fmt.Errorf("%w: NoiseFloor is %v, want ≥ 0", ErrInvalidSettings, s.NoiseFloor)
	case !(s.PriorWeight > 0) || math.IsInf(s.PriorWeight, 0):
		return fmt.Errorf("%w: PriorWeight is %v, want finite > 0", ErrInvalidSettings, s.PriorWeight)
	}
	return nil
}
