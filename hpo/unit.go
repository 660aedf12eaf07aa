package hpo

import "math"

// fromUnit maps u in [0, 1) to a value of d, so that a uniform u gives
// what Sample draws: floats uniform on [min, max] (log-uniform when log),
// integers with equal mass each (log: proportional to their share of the
// log range, [lo−½, hi+½] rounded), choices equally likely. Quasi-random
// and grid points go through it.
func (d Param) fromUnit(u float64) Value {
	u = clamp(u, 0, math.Nextafter(1, 0))
	switch d.Type {
	case ParamChoice:
		return String(d.Choices[int(u*float64(len(d.Choices)))])
	case ParamInt:
		lo, hi := math.Ceil(d.Min), math.Floor(d.Max)
		if d.Log {
			a, b := math.Log(lo-0.5), math.Log(hi+0.5)
			return Float(clamp(math.Round(math.Exp(a+u*(b-a))), lo, hi))
		}
		return Float(clamp(math.Floor(lo+u*(hi-lo+1)), lo, hi))
	default: // ParamFloat
		if d.Log {
			a, b := math.Log(d.Min), math.Log(d.Max)
			return Float(clamp(math.Exp(a+u*(b-a)), d.Min, d.Max))
		}
		return Float(clamp(2*(d.Min/2+u*(d.Max/2-d.Min/2)), d.Min, d.Max))
	}
}
