package hpo

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
)

// ParamArch is a search dimension whose values are neural network
// architectures: Param.Architecture says which space. A value is a string,
// the architecture's canonical JSON (Architectures.Canonical), which the
// trainer decodes from its params file.
const ParamArch ParamType = "architecture"

// ArchSpec is an architecture space's definition in a campaign spec: one
// of its sections is set. The spaces themselves (what an architecture
// looks like, its canonical form, sampling, mutation) are package nas's;
// hpo only carries their definitions and calls them through
// Architectures.
type ArchSpec struct {
	// Cell is a NAS-Bench-201-style cell space: a DAG of Nodes nodes with
	// an operation from Ops on every edge j→i (j < i), the cell stacked
	// into a network.
	Cell *CellSpace `json:"cell,omitempty"`
	// Layers is a layer space: a stack of Depth layers, each with a width
	// and an activation, optionally skip connections (MLPs, small CNNs).
	Layers *LayerSpace `json:"layers,omitempty"`
}

// CellSpace defines a cell space (docs/nas.md; defaults there).
type CellSpace struct {
	Nodes    int      `json:"nodes,omitempty"`
	Ops      []string `json:"ops,omitempty"`
	Stacks   int      `json:"stacks,omitempty"`
	Cells    int      `json:"cells,omitempty"`
	Channels int      `json:"channels,omitempty"`
}

// LayerSpace defines a layer space (docs/nas.md; defaults there).
type LayerSpace struct {
	// Kind is "mlp" or "cnn".
	Kind        string   `json:"kind,omitempty"`
	MinDepth    int      `json:"min_depth,omitempty"`
	MaxDepth    int      `json:"max_depth,omitempty"`
	Widths      []int    `json:"widths,omitempty"`
	Activations []string `json:"activations,omitempty"`
	// Skip allows skip connections (a layer adds its input to its output
	// where the widths match).
	Skip bool `json:"skip,omitempty"`
}

// Architectures is one architecture space, as package nas implements it.
// Every method is deterministic given rng's state.
type Architectures interface {
	// Sample draws an architecture uniformly (in the space's own sense)
	// and returns its canonical form.
	Sample(rng *rand.Rand) string
	// Mutate returns a canonical architecture one mutation away from
	// arch (never arch itself when the space has another).
	Mutate(rng *rand.Rand, arch string) string
	// Neighbors lists every canonical architecture one mutation away
	// from arch, sorted.
	Neighbors(arch string) []string
	// Canonical checks arch (errors name the field) and returns its
	// canonical form: isomorphic architectures give the same string.
	Canonical(arch string) (string, error)
}

// ErrNoArchitectures: no package registered architecture spaces (import
// github.com/gleaner-hpc/gleaner/nas).
var ErrNoArchitectures = errors.New("architecture parameters need package nas (import github.com/gleaner-hpc/gleaner/nas)")

var (
	archMu    sync.Mutex
	archNew   func(ArchSpec) (Architectures, error)
	archCache = map[string]Architectures{}
)

// RegisterArchitectures installs the constructor of architecture spaces;
// package nas calls it from init.
func RegisterArchitectures(f func(ArchSpec) (Architectures, error)) {
	archMu.Lock()
	defer archMu.Unlock()
	archNew, archCache = f, map[string]Architectures{}
}

// Architectures returns the space of an architecture parameter (cached per
// definition).
func (d Param) Architectures() (Architectures, error) {
	if d.Type != ParamArch {
		return nil, fmt.Errorf("space: parameter %q is not an architecture", d.Name)
	}
	if d.Architecture == nil {
		return nil, fmt.Errorf("space: parameter %q: architecture: missing (a cell or layers section)", d.Name)
	}
	def, err := json.Marshal(d.Architecture)
	if err != nil {
		return nil, err
	}
	key := string(def)
	archMu.Lock()
	defer archMu.Unlock()
	if a, ok := archCache[key]; ok {
		return a, nil
	}
	if archNew == nil {
		return nil, fmt.Errorf("space: parameter %q: %w", d.Name, ErrNoArchitectures)
	}
	a, err := archNew(*d.Architecture)
	if err != nil {
		return nil, fmt.Errorf("space: parameter %q: architecture.%w", d.Name, err)
	}
	archCache[key] = a
	return a, nil
}

var archDescribe func(string) (string, bool)

// RegisterArchDescriber installs how an architecture value is shown to
// people (NAS-Bench-201's notation for a cell); package nas calls it from
// init.
func RegisterArchDescriber(f func(arch string) (string, bool)) {
	archMu.Lock()
	defer archMu.Unlock()
	archDescribe = f
}

// DescribeValue returns a value for people: an architecture in its short
// form, anything else as Value.String.
func DescribeValue(v Value) string {
	if v.IsStr && len(v.Str) > 0 && v.Str[0] == '{' {
		archMu.Lock()
		f := archDescribe
		archMu.Unlock()
		if f != nil {
			if s, ok := f(v.Str); ok {
				return s
			}
		}
	}
	return v.String()
}
