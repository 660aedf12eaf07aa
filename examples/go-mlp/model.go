package main

import (
	"math"
	"math/rand/v2"
)

// mlp is a one-hidden-layer perceptron, in → hidden (tanh) → classes
// (softmax), with its weights in one flat slice so that gradients average
// and checkpoint as plain vectors:
//
//	W1[hidden×in] | b1[hidden] | W2[classes×hidden] | b2[classes]
type mlp struct {
	in, hidden, classes int
}

func (m mlp) size() int { return m.hidden*m.in + m.hidden + m.classes*m.hidden + m.classes }

func (m mlp) split(w []float64) (w1, b1, w2, b2 []float64) {
	i := 0
	take := func(n int) []float64 { s := w[i : i+n]; i += n; return s }
	return take(m.hidden * m.in), take(m.hidden), take(m.classes * m.hidden), take(m.classes)
}

// init draws weights ~ N(0, 1/fan_in) (LeCun), biases zero.
func (m mlp) init(rng *rand.Rand) []float64 {
	w := make([]float64, m.size())
	w1, _, w2, _ := m.split(w)
	for i := range w1 {
		w1[i] = rng.NormFloat64() / math.Sqrt(float64(m.in))
	}
	for i := range w2 {
		w2[i] = rng.NormFloat64() / math.Sqrt(float64(m.hidden))
	}
	return w
}

// scratch holds one worker's activations so a step allocates nothing.
type scratch struct{ h, z, dh []float64 }

func (m mlp) scratch() *scratch {
	return &scratch{h: make([]float64, m.hidden), z: make([]float64, m.classes), dh: make([]float64, m.hidden)}
}

// forward fills s.h and s.z (softmax probabilities) and returns the
// cross-entropy loss of label y.
func (m mlp) forward(w []float64, x []float64, y int, s *scratch) float64 {
	w1, b1, w2, b2 := m.split(w)
	for j := range m.hidden {
		a := b1[j]
		for i := range m.in {
			a += w1[j*m.in+i] * x[i]
		}
		s.h[j] = math.Tanh(a)
	}
	zmax := math.Inf(-1)
	for c := range m.classes {
		a := b2[c]
		for j := range m.hidden {
			a += w2[c*m.hidden+j] * s.h[j]
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
// loss.
func (m mlp) accumulate(w, g []float64, x []float64, y int, s *scratch) float64 {
	loss := m.forward(w, x, y, s)
	_, _, w2, _ := m.split(w)
	g1, gb1, g2, gb2 := m.split(g)
	s.z[y] -= 1 // dL/dz = p − onehot(y)
	clear(s.dh)
	for c := range m.classes {
		dz := s.z[c]
		gb2[c] += dz
		for j := range m.hidden {
			g2[c*m.hidden+j] += dz * s.h[j]
			s.dh[j] += w2[c*m.hidden+j] * dz
		}
	}
	for j := range m.hidden {
		da := s.dh[j] * (1 - s.h[j]*s.h[j])
		gb1[j] += da
		for i := range m.in {
			g1[j*m.in+i] += da * x[i]
		}
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
