package mlp

import (
	"fmt"
	"math"
)

// activation is a hidden layer's nonlinearity: package nas's activations,
// as PyTorch defines them (nn.ReLU, Tanh, GELU, Sigmoid, SiLU, ELU).
type activation uint8

const (
	actTanh activation = iota
	actReLU
	actGELU
	actSigmoid
	actSiLU
	actELU
)

var activationNames = [...]string{
	actTanh: "tanh", actReLU: "relu", actGELU: "gelu",
	actSigmoid: "sigmoid", actSiLU: "silu", actELU: "elu",
}

func (f activation) String() string { return activationNames[f] }

func parseActivation(name string) (activation, error) {
	for f, n := range activationNames {
		if n == name {
			return activation(f), nil
		}
	}
	return 0, fmt.Errorf("%q is not an activation go-mlp knows", name)
}

// apply returns f(a).
//
// GELU is the exact form, x·Φ(x) with Φ the standard normal CDF through
// erf (PyTorch's nn.GELU() default, approximate='none'), not the tanh
// approximation. ELU has α = 1.
func (f activation) apply(a float64) float64 {
	switch f {
	case actTanh:
		return math.Tanh(a)
	case actReLU:
		if a > 0 {
			return a
		}
		return 0
	case actGELU:
		return a * normCDF(a)
	case actSigmoid:
		return sigmoid(a)
	case actSiLU:
		return a * sigmoid(a)
	case actELU:
		if a > 0 {
			return a
		}
		return math.Expm1(a)
	}
	panic(fmt.Sprintf("go-mlp: activation %d", f))
}

// deriv returns f′(a), given fa = f(a) (which tanh and sigmoid's
// derivatives reuse). ReLU's derivative at 0 is 0, as in PyTorch.
//
//	gelu′(x) = Φ(x) + x·φ(x)      silu′(x) = σ(x)·(1 + x·(1 − σ(x)))
//	elu′(x)  = 1 for x > 0, eˣ otherwise
func (f activation) deriv(a, fa float64) float64 {
	switch f {
	case actTanh:
		return 1 - fa*fa
	case actReLU:
		if a > 0 {
			return 1
		}
		return 0
	case actGELU:
		return normCDF(a) + a*math.Exp(-a*a/2)/math.Sqrt(2*math.Pi)
	case actSigmoid:
		return fa * (1 - fa)
	case actSiLU:
		s := sigmoid(a)
		return s * (1 + a*(1-s))
	case actELU:
		if a > 0 {
			return 1
		}
		return math.Exp(a)
	}
	panic(fmt.Sprintf("go-mlp: activation %d", f))
}

// applyAll sets fa[j] = f(a[j]): one dispatch per layer, not per unit.
func (f activation) applyAll(fa, a []float64) {
	if f == actTanh { // the hidden network's: the hot case
		for j, v := range a {
			fa[j] = math.Tanh(v)
		}
		return
	}
	for j, v := range a {
		fa[j] = f.apply(v)
	}
}

// derivAll sets d[j] = f′(a[j]) given fa[j] = f(a[j]).
func (f activation) derivAll(d, a, fa []float64) {
	if f == actTanh {
		for j, v := range fa {
			d[j] = 1 - v*v
		}
		return
	}
	for j, v := range a {
		d[j] = f.deriv(v, fa[j])
	}
}

// initFan is the fan of a layer's initial weights before f, which draw
// N(0, 1/fan): He's (Kaiming normal) fan_in/2 before the ReLU family,
// Xavier's (Glorot normal) (fan_in+fan_out)/2 before tanh and sigmoid.
func (f activation) initFan(fanIn, fanOut int) float64 {
	switch f {
	case actTanh, actSigmoid:
		return float64(fanIn+fanOut) / 2
	default:
		return float64(fanIn) / 2
	}
}

// sigmoid is 1/(1+e⁻ˣ), computed without overflow for either sign.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// normCDF is Φ(x) = (1 + erf(x/√2))/2.
func normCDF(x float64) float64 { return 0.5 * (1 + math.Erf(x/math.Sqrt2)) }
