package hpo

import (
	"math"
	"math/rand/v2"
	"slices"
)

// fromUnit maps u in [0, 1) to a value of d, so that a uniform u gives
// what Sample draws: floats uniform on [min, max] (log-uniform when log),
// integers with equal mass each (log: proportional to their share of the
// log range, [lo−½, hi+½] rounded), choices equally likely. Quasi-random
// and grid points go through it.
//
// An architecture has no order to map u onto: u seeds an RNG of its own
// (PCG seeded with u's bits) that Architectures.Sample draws from, so the
// same u gives the same architecture and a uniform u a random one — but
// a low-discrepancy sequence of u gives no better coverage of the
// architectures than random samples do.
func (d Param) fromUnit(u float64) Value {
	u = clamp(u, 0, math.Nextafter(1, 0))
	switch d.Type {
	case ParamChoice:
		return String(d.Choices[int(u*float64(len(d.Choices)))])
	case ParamArch:
		rng := rand.New(rand.NewPCG(math.Float64bits(u), archUnitStream))
		return String(d.mustArchitectures().Sample(rng))
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

// archUnitStream is the second word of the PCG fromUnit seeds for an
// architecture.
const archUnitStream = 0x61726368 // "arch"

// toUnit is fromUnit's inverse on d's values: a number's place in its
// (log) range, on [0, 1]; an integer's or a choice's the centre of its
// cell, so that fromUnit(toUnit(v)) = v. An architecture has none (0).
// Evolution and local search move numbers in these coordinates.
func (d Param) toUnit(v Value) float64 {
	switch d.Type {
	case ParamChoice:
		return (float64(slices.Index(d.Choices, v.Str)) + 0.5) / float64(len(d.Choices))
	case ParamArch:
		return 0
	}
	lo, hi, x := d.Min, d.Max, v.Num
	if d.Type == ParamInt {
		lo, hi = math.Ceil(d.Min)-0.5, math.Floor(d.Max)+0.5
	}
	if d.Log {
		lo, hi, x = math.Log(lo), math.Log(hi), math.Log(x)
	}
	if lo == hi {
		return 0
	}
	// Halves, so that no range overflows.
	return clamp((x/2-lo/2)/(hi/2-lo/2), 0, 1)
}

// single reports whether d has a single value (nothing to search): a
// float with min = max, an int range holding one integer, one choice. An
// architecture space is never taken as single (the interface cannot
// count it).
func (d Param) single() bool {
	switch d.Type {
	case ParamChoice:
		return len(d.Choices) == 1
	case ParamArch:
		return false
	case ParamInt:
		return math.Ceil(d.Min) == math.Floor(d.Max)
	default:
		return d.Min == d.Max
	}
}
