package nas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func init() {
	hpo.RegisterArchitectures(New)
	hpo.RegisterArchDescriber(describe)
}

// describe is an architecture's short form for people (String) and its
// hash: "|conv_3x3~0|+|…| (62b55d54ef37)".
func describe(arch string) (string, bool) {
	a, err := Parse(arch)
	if err != nil {
		return "", false
	}
	return a.String() + " (" + Hash(arch) + ")", true
}

// New returns the architecture space spec defines, its zero fields filled
// with the defaults: a *CellSpace or a *LayerSpace. Exactly one of its
// sections must be set; errors name the field from the section down
// ("cell.ops[2]: …"), so that hpo can prefix the parameter's path.
func New(spec hpo.ArchSpec) (hpo.Architectures, error) {
	switch {
	case spec.Cell != nil && spec.Layers != nil:
		return nil, errors.New("layers: set along with cell: set exactly one of cell, layers")
	case spec.Cell != nil:
		return NewCellSpace(*spec.Cell)
	case spec.Layers != nil:
		return NewLayerSpace(*spec.Layers)
	default:
		return nil, errors.New("cell: missing: set exactly one of cell, layers")
	}
}

// Architecture is one architecture as a trainer reads it from its params
// file: exactly one of Cell and Layers is set.
//
//	{"cell":{"nodes":4,"edges":[["skip_connect"],["conv_3x3","none"],["conv_1x1","conv_3x3","avg_pool_3x3"]],"stacks":2,"cells":1,"channels":8}}
//	{"layers":{"kind":"mlp","layers":[{"width":64,"activation":"relu","skip":false}]}}
type Architecture struct {
	Cell   *Cell   `json:"cell,omitempty"`
	Layers *Layers `json:"layers,omitempty"`
}

// Parse decodes an architecture's JSON strictly (no unknown fields, one
// JSON value, exactly one section). It checks the JSON's shape, not the
// values: a space's Parse or Canonical does.
func Parse(arch string) (Architecture, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(arch)))
	dec.DisallowUnknownFields()
	var a Architecture
	if err := dec.Decode(&a); err != nil {
		return Architecture{}, fmt.Errorf("architecture: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Architecture{}, errors.New("architecture: invalid JSON: data after the architecture's object")
	}
	switch {
	case a.Cell != nil && a.Layers != nil:
		return Architecture{}, errors.New("layers: set along with cell: an architecture is one of cell, layers")
	case a.Cell == nil && a.Layers == nil:
		return Architecture{}, errors.New(`architecture: neither "cell" nor "layers"`)
	}
	return a, nil
}

// JSON returns a's JSON: compact, fields in a fixed order, so the JSON of
// a canonical architecture is its canonical string.
func (a Architecture) JSON() string {
	b, err := json.Marshal(a)
	if err != nil {
		panic(fmt.Sprintf("nas: encoding an architecture: %v", err)) // only strings, ints and bools
	}
	return string(b)
}

// String returns a's form for people: NAS-Bench-201's notation for a cell
// (Cell.String), mlp[64 relu, …] for layers.
func (a Architecture) String() string {
	switch {
	case a.Cell != nil:
		return a.Cell.String()
	case a.Layers != nil:
		return a.Layers.String()
	}
	return "<empty>"
}

// Canonical checks arch against every operation, kind and activation this
// package knows (not against a space's choices; every field must be
// set) and returns its canonical JSON. Two architectures of any spaces
// are one exactly when their canonical strings are equal.
func Canonical(arch string) (string, error) {
	a, err := Parse(arch)
	if err != nil {
		return "", err
	}
	if a.Cell != nil {
		if err := a.Cell.Validate(); err != nil {
			return "", err
		}
		c := a.Cell.Canonical()
		return Architecture{Cell: &c}.JSON(), nil
	}
	if err := a.Layers.Validate(); err != nil {
		return "", err
	}
	l := a.Layers.Canonical()
	return Architecture{Layers: &l}.JSON(), nil
}

// Hash returns a short stable name of an architecture: the first 12 hex
// digits of the SHA-256 of its canonical JSON (Canonical), so isomorphic
// architectures share it. A string Canonical rejects is hashed as it is.
func Hash(arch string) string {
	if c, err := Canonical(arch); err == nil {
		arch = c
	}
	sum := sha256.Sum256([]byte(arch))
	return hex.EncodeToString(sum[:6])
}
