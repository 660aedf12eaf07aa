package mlp

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// mlp is a multilayer perceptron, in → hidden layers → classes (softmax),
// with its weights in one flat slice so that gradients average and
// checkpoint as plain vectors, layer after layer:
//
//	W1[n1×in] | b1[n1] | W2[n2×n1] | b2[n2] | … | Wout[classes×nL] | bout[classes]
//
// Each hidden layer is dense, then its activation, plus its input when it
// is residual (y = x + f(Wx + b), widths equal). Without layers it is the
// trainer's original network: one tanh layer of hidden units, the
// `hidden` parameter.
type mlp struct {
	in, hidden, classes int
	// layers are an architecture's hidden layers (the `arch` parameter);
	// nil: one tanh layer of hidden units.
	layers []layer
	// arch is the architecture's canonical JSON, "" without one: what a
	// checkpoint records, and compares on resuming.
	arch string
}

// layer is one hidden layer: width units, activation act, and residual
// when skip (only where its input has its width).
type layer struct {
	width int
	act   activation
	skip  bool
}

// stack returns the hidden layers, in one's storage for the hidden
// network, so the hot paths allocate nothing.
func (m mlp) stack(one *[1]layer) []layer {
	if m.layers != nil {
		return m.layers
	}
	one[0] = layer{width: m.hidden, act: actTanh}
	return one[:]
}

// describe says which network m is, for people.
func (m mlp) describe() string {
	if m.layers == nil {
		return fmt.Sprintf("%d hidden", m.hidden)
	}
	return "architecture " + describeLayers(m.layers)
}

func describeLayers(ls []layer) string {
	s := "mlp["
	for i, l := range ls {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", l.width, l.act)
		if l.skip {
			s += " skip"
		}
	}
	return s + "]"
}

func (m mlp) size() int {
	var one [1]layer
	n, in := 0, m.in
	for _, l := range m.stack(&one) {
		n += l.width*in + l.width
		in = l.width
	}
	return n + m.classes*in + m.classes
}

// dense is one dense layer's view of the flat weights: W[out×in] | b[out].
type dense struct {
	in, out int
	w, b    []float64
}

// denseAt returns the dense layer of in → out units at offset off of w,
// and the offset after it.
func denseAt(w []float64, off, in, out int) (dense, int) {
	d := dense{in: in, out: out, w: w[off : off+out*in], b: w[off+out*in : off+out*in+out]}
	return d, off + out*in + out
}

// init draws weights, biases zero: each weight N(0, 1) / √fan, fan set
// by the layer. The hidden network keeps its original fan = fan_in
// (LeCun) everywhere. An architecture's layers take He's fan_in/2 before
// relu, gelu, silu and elu, and Xavier's (fan_in+fan_out)/2 (Glorot)
// before tanh and sigmoid and for the output layer. Draws go layer by
// layer, each W row-major, from rng.
func (m mlp) init(rng *rand.Rand) []float64 {
	w := make([]float64, m.size())
	var one [1]layer
	off, in := 0, m.in
	draw := func(out int, fan float64) {
		var d dense
		d, off = denseAt(w, off, in, out)
		div := math.Sqrt(fan)
		for i := range d.w {
			d.w[i] = rng.NormFloat64() / div
		}
		in = out
	}
	for _, l := range m.stack(&one) {
		fan := float64(in)
		if m.layers != nil {
			fan = l.act.initFan(in, l.width)
		}
		draw(l.width, fan)
	}
	fan := float64(in)
	if m.layers != nil {
		fan = float64(in+m.classes) / 2
	}
	draw(m.classes, fan)
	return w
}

// scratch holds one worker's activations so a step allocates nothing:
// per hidden layer its pre-activations, activations and outputs (the
// outputs are the activations unless the layer is residual), the softmax,
// and two buffers for the backward pass's deltas.
type scratch struct {
	layers        []layer
	pre, act, out [][]float64
	z             []float64
	delta, dIn    []float64
	deriv         []float64 // a layer's f′(pre-activations)
}

func (m mlp) scratch() *scratch {
	var one [1]layer
	ls := m.stack(&one)
	s := &scratch{layers: append([]layer(nil), ls...), z: make([]float64, m.classes)}
	widest := m.in
	for _, l := range ls {
		s.pre = append(s.pre, make([]float64, l.width))
		s.act = append(s.act, make([]float64, l.width))
		out := s.act[len(s.act)-1]
		if l.skip {
			out = make([]float64, l.width)
		}
		s.out = append(s.out, out)
		widest = max(widest, l.width)
	}
	s.delta, s.dIn, s.deriv = make([]float64, widest), make([]float64, widest), make([]float64, widest)
	return s
}

// forward fills s (s.z: the softmax probabilities) and returns the
// cross-entropy loss of label y.
func (m mlp) forward(w []float64, x []float64, y int, s *scratch) float64 {
	off, in := 0, x
	for k, l := range s.layers {
		var d dense
		d, off = denseAt(w, off, len(in), l.width)
		pre, act, out := s.pre[k], s.act[k], s.out[k]
		for j := range l.width {
			a := d.b[j]
			for i, v := range in {
				a += d.w[j*d.in+i] * v
			}
			pre[j] = a
		}
		l.act.applyAll(act, pre)
		if l.skip {
			for j := range out {
				out[j] = act[j] + in[j]
			}
		}
		in = out
	}
	d, _ := denseAt(w, off, len(in), m.classes)
	zmax := math.Inf(-1)
	for c := range m.classes {
		a := d.b[c]
		for j, v := range in {
			a += d.w[c*d.in+j] * v
		}
		s.z[c] = a
		zmax = max(zmax, a)
	}
	var sum float64
	for c := range s.z {
		s.z[c] = math.Exp(s.z[c] - zmax)
		sum += s.z[c]
	}
	for c := range s.z {
		s.z[c] /= sum
	}
	return -math.Log(max(s.z[y], 1e-300))
}

// accumulate adds the gradient of the loss of (x, y) to g and returns the
// loss. Backpropagation: with δ = ∂L/∂out of a layer, its pre-activation
// gets δ·f′(a), its weights δ·f′(a)·inᵀ, and its input Wᵀ(δ·f′(a)), plus
// δ itself when the layer is residual.
func (m mlp) accumulate(w, g []float64, x []float64, y int, s *scratch) float64 {
	loss := m.forward(w, x, y, s)
	L := len(s.layers)
	off, in := 0, m.in
	for _, l := range s.layers {
		off += l.width*in + l.width
		in = l.width
	}
	top := s.out[L-1]
	wout, _ := denseAt(w, off, in, m.classes)
	gout, _ := denseAt(g, off, in, m.classes)
	s.z[y] -= 1 // dL/dz = p − onehot(y)
	delta := s.delta[:in]
	clear(delta)
	for c := range m.classes {
		dz := s.z[c]
		gout.b[c] += dz
		for j := range in {
			gout.w[c*in+j] += dz * top[j]
			delta[j] += wout.w[c*in+j] * dz
		}
	}
	for k := L - 1; k >= 0; k-- {
		l := s.layers[k]
		input := x
		if k > 0 {
			input = s.out[k-1]
		}
		off -= l.width*len(input) + l.width // walking down from the output layer's
		wk, _ := denseAt(w, off, len(input), l.width)
		gk, _ := denseAt(g, off, len(input), l.width)
		deriv := s.deriv[:l.width]
		l.act.derivAll(deriv, s.pre[k], s.act[k])
		if k == 0 { // the data needs no gradient
			for j := range l.width {
				da := delta[j] * deriv[j]
				gk.b[j] += da
				for i, v := range input {
					gk.w[j*gk.in+i] += da * v
				}
			}
			break
		}
		dIn := s.dIn[:len(input)]
		clear(dIn)
		for j := range l.width {
			da := delta[j] * deriv[j]
			gk.b[j] += da
			for i, v := range input {
				gk.w[j*gk.in+i] += da * v
				dIn[i] += wk.w[j*wk.in+i] * da
			}
		}
		if l.skip {
			for i := range dIn {
				dIn[i] += delta[i]
			}
		}
		// The next layer down writes its delta where this one's was.
		s.delta, s.dIn = s.dIn, s.delta
		delta = dIn
	}
	return loss
}

// evaluate returns the mean loss and the accuracy over a data set.
func (m mlp) evaluate(w []float64, d dataset) (loss, accuracy float64) {
	s := m.scratch()
	correct := 0
	for k := range d.len() {
		loss += m.forward(w, d.x(k), d.y[k], s)
		best := 0
		for c := range s.z {
			if s.z[c] > s.z[best] {
				best = c
			}
		}
		if best == d.y[k] {
			correct++
		}
	}
	n := float64(d.len())
	return loss / n, float64(correct) / n
}
