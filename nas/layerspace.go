package nas

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Defaults of a layer space (and widths 16, 32, 64, 128; activations
// relu, tanh, gelu; no skips).
const (
	DefaultKind     = KindMLP
	DefaultMinDepth = 1
	DefaultMaxDepth = 4
)

var (
	defaultWidths      = []int{16, 32, 64, 128}
	defaultActivations = []string{"relu", "tanh", "gelu"}
)

// LayerSpace is a layer space with its defaults filled.
type LayerSpace struct {
	def hpo.LayerSpace
}

var _ hpo.Architectures = (*LayerSpace)(nil)

// NewLayerSpace checks def, fills its zero fields with the defaults and
// returns the space; errors name the field ("layers.widths[1]: 0 must be
// in [1, 65536]").
func NewLayerSpace(def hpo.LayerSpace) (*LayerSpace, error) {
	if def.Kind == "" {
		def.Kind = DefaultKind
	}
	if def.MinDepth == 0 {
		def.MinDepth = DefaultMinDepth
	}
	if def.MaxDepth == 0 {
		def.MaxDepth = max(DefaultMaxDepth, def.MinDepth)
	}
	if len(def.Widths) == 0 {
		def.Widths = defaultWidths
	}
	if len(def.Activations) == 0 {
		def.Activations = defaultActivations
	}
	def.Widths, def.Activations = slices.Clone(def.Widths), slices.Clone(def.Activations)
	if indexOf(layerKinds, def.Kind) < 0 {
		return nil, fmt.Errorf("layers.kind: %q is not one of %s", def.Kind, oneOf(layerKinds))
	}
	if err := checkRange("layers.min_depth", def.MinDepth, 1, MaxDepth); err != nil {
		return nil, err
	}
	if err := checkRange("layers.max_depth", def.MaxDepth, 1, MaxDepth); err != nil {
		return nil, err
	}
	if def.MaxDepth < def.MinDepth {
		return nil, fmt.Errorf("layers.max_depth: %d < min_depth %d", def.MaxDepth, def.MinDepth)
	}
	for i, w := range def.Widths {
		if err := checkRange(fmt.Sprintf("layers.widths[%d]", i), w, 1, MaxWidth); err != nil {
			return nil, err
		}
		if j := slices.Index(def.Widths[:i], w); j >= 0 {
			return nil, fmt.Errorf("layers.widths[%d]: %d is listed twice (also at [%d])", i, w, j)
		}
	}
	if err := checkNames("layers.activations", def.Activations, activations); err != nil {
		return nil, err
	}
	return &LayerSpace{def: def}, nil
}

// Definition returns the space's definition, defaults filled.
func (s *LayerSpace) Definition() hpo.LayerSpace {
	d := s.def
	d.Widths, d.Activations = slices.Clone(d.Widths), slices.Clone(d.Activations)
	return d
}

// Parse decodes arch, checks that it is in the space and returns its
// canonical form. A kind left out is the space's.
func (s *LayerSpace) Parse(arch string) (Layers, error) {
	a, err := Parse(arch)
	if err != nil {
		return Layers{}, err
	}
	if a.Layers == nil {
		return Layers{}, fmt.Errorf("layers: missing: this is a layer space, not a cell space")
	}
	l := *a.Layers
	if l.Kind == "" {
		l.Kind = s.def.Kind
	} else if l.Kind != s.def.Kind {
		return Layers{}, fmt.Errorf("layers.kind: %q, but the space's is %q", l.Kind, s.def.Kind)
	}
	if d := len(l.Layers); d < s.def.MinDepth || d > s.def.MaxDepth {
		return Layers{}, fmt.Errorf("layers.layers: %d layers, the space has %d to %d", d, s.def.MinDepth, s.def.MaxDepth)
	}
	if err := l.check(s.def.Widths, s.def.Activations, s.def.Skip); err != nil {
		return Layers{}, err
	}
	return l.Canonical(), nil
}

// Canonical checks arch and returns its canonical JSON (Layers.Canonical).
func (s *LayerSpace) Canonical(arch string) (string, error) {
	l, err := s.Parse(arch)
	if err != nil {
		return "", err
	}
	return Architecture{Layers: &l}.JSON(), nil
}

// Sample draws the depth uniformly from [min_depth, max_depth], then each
// layer's width and activation uniformly, and, where the space allows
// skips and the layer's width equals the previous one's, a skip with
// probability ½.
func (s *LayerSpace) Sample(rng *rand.Rand) string {
	d := s.def.MinDepth + rng.IntN(s.def.MaxDepth-s.def.MinDepth+1)
	l := Layers{Kind: s.def.Kind, Layers: make([]Layer, d)}
	for i := range l.Layers {
		y := &l.Layers[i]
		y.Width = s.def.Widths[rng.IntN(len(s.def.Widths))]
		y.Activation = s.def.Activations[rng.IntN(len(s.def.Activations))]
		if s.def.Skip && i > 0 && l.Layers[i-1].Width == y.Width {
			y.Skip = rng.IntN(2) == 1
		}
	}
	return Architecture{Layers: &l}.JSON()
}

// Mutate returns a neighbour of arch (Neighbors) chosen uniformly: one
// layer's width or activation changed, a skip toggled, or a layer added
// or removed. It returns arch only when the space has no other
// architecture. arch must be in the space (Canonical accepts it): anything
// else is a caller's bug, and Mutate panics.
func (s *LayerSpace) Mutate(rng *rand.Rand, arch string) string {
	ns := s.Neighbors(arch)
	if len(ns) == 0 {
		l := s.mustParse(arch)
		return Architecture{Layers: &l}.JSON()
	}
	return ns[rng.IntN(len(ns))]
}

// Neighbors lists every canonical architecture one change away from arch,
// without arch itself, deduplicated and sorted. The changes: one layer's
// width or activation set to another of the space's; one layer's skip
// toggled where it can apply; a layer of any of the space's widths and
// activations (without skip) inserted at any position, or any layer
// removed, within the depth bounds. arch must be in the space (see
// Mutate).
func (s *LayerSpace) Neighbors(arch string) []string {
	l := s.mustParse(arch)
	self := Architecture{Layers: &l}.JSON()
	var out []string
	add := func(ys []Layer) {
		m := Layers{Kind: l.Kind, Layers: ys}.Canonical()
		if j := (Architecture{Layers: &m}).JSON(); j != self {
			out = append(out, j)
		}
	}
	for i, y := range l.Layers {
		for _, w := range s.def.Widths {
			if w != y.Width {
				ys := slices.Clone(l.Layers)
				ys[i].Width = w
				add(ys)
			}
		}
		for _, a := range s.def.Activations {
			if a != y.Activation {
				ys := slices.Clone(l.Layers)
				ys[i].Activation = a
				add(ys)
			}
		}
		if s.def.Skip && i > 0 && l.Layers[i-1].Width == y.Width {
			ys := slices.Clone(l.Layers)
			ys[i].Skip = !y.Skip
			add(ys)
		}
	}
	if len(l.Layers) < s.def.MaxDepth {
		for i := 0; i <= len(l.Layers); i++ {
			for _, w := range s.def.Widths {
				for _, a := range s.def.Activations {
					add(slices.Insert(slices.Clone(l.Layers), i, Layer{Width: w, Activation: a}))
				}
			}
		}
	}
	if len(l.Layers) > s.def.MinDepth {
		for i := range l.Layers {
			add(slices.Delete(slices.Clone(l.Layers), i, i+1))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *LayerSpace) mustParse(arch string) Layers {
	l, err := s.Parse(arch)
	if err != nil {
		panic(fmt.Sprintf("nas: architecture outside its layer space: %v", err))
	}
	return l
}
