package nas

import (
	"fmt"
	"strings"
)

// Layers is one layer-stack architecture, self-contained: the "layers"
// object of the JSON a trainer reads (docs/nas.md).
//
// Kind mlp: the input is flattened, each layer is a dense layer (with
// bias) of Width units followed by its activation, and a dense layer maps
// the last to the classes. Kind cnn: each layer is a 3×3 convolution
// (padding 1, stride 1, no bias) of Width channels, batch norm and its
// activation; then global average pooling and a dense layer to the
// classes. A layer with Skip adds its input to its output (y = x + f(x)),
// which needs the previous layer's width: the first layer, whose input
// is the data, never has one.
type Layers struct {
	Kind   string  `json:"kind"`
	Layers []Layer `json:"layers"`
}

// Layer is one hidden layer.
type Layer struct {
	Width      int    `json:"width"`
	Activation string `json:"activation"`
	Skip       bool   `json:"skip"`
}

// Validate checks l against the bounds, kinds and activations this
// package knows, not against a space's choices; errors name the field
// ("layers.layers[2].width: …").
func (l Layers) Validate() error {
	if d := len(l.Layers); d < 1 || d > MaxDepth {
		return fmt.Errorf("layers.layers: %d layers, want 1 to %d", d, MaxDepth)
	}
	return l.check(nil, activations, true)
}

// check checks l against a space's widths (any in [1, MaxWidth] when nil),
// activations and skips; errors name the field from the architecture's
// root ("layers.…").
func (l Layers) check(widths []int, activations []string, skip bool) error {
	if indexOf(layerKinds, l.Kind) < 0 {
		return fmt.Errorf("layers.kind: %q is not one of %s", l.Kind, oneOf(layerKinds))
	}
	for i, y := range l.Layers {
		if widths == nil {
			if err := checkRange(fmt.Sprintf("layers.layers[%d].width", i), y.Width, 1, MaxWidth); err != nil {
				return err
			}
		} else if !containsInt(widths, y.Width) {
			return fmt.Errorf("layers.layers[%d].width: %d is not one of %s", i, y.Width, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(widths)), ", "), "[]"))
		}
		if indexOf(activations, y.Activation) < 0 {
			return fmt.Errorf("layers.layers[%d].activation: %q is not one of %s", i, y.Activation, oneOf(activations))
		}
		if y.Skip && !skip {
			return fmt.Errorf("layers.layers[%d].skip: the space has no skip connections (skip: true allows them)", i)
		}
	}
	return nil
}

// Canonical returns l with Skip cleared where it cannot apply: on the
// first layer and where a layer's width differs from the previous one's.
// There is no other equivalence: layers in another order, or a tanh layer
// of width 1 and a sigmoid one, are different architectures.
func (l Layers) Canonical() Layers {
	out := Layers{Kind: l.Kind, Layers: make([]Layer, len(l.Layers))}
	copy(out.Layers, l.Layers)
	for i := range out.Layers {
		if i == 0 || out.Layers[i-1].Width != out.Layers[i].Width {
			out.Layers[i].Skip = false
		}
	}
	return out
}

// String returns a one-line form for people: mlp[64 relu, 64 relu skip,
// 32 tanh].
func (l Layers) String() string {
	var b strings.Builder
	b.WriteString(l.Kind)
	b.WriteByte('[')
	for i, y := range l.Layers {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", y.Width, y.Activation)
		if y.Skip {
			b.WriteString(" skip")
		}
	}
	b.WriteByte(']')
	return b.String()
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
