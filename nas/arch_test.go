package nas

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func TestNew(t *testing.T) {
	if _, err := New(hpo.ArchSpec{Cell: &hpo.CellSpace{}}); err != nil {
		t.Error(err)
	}
	if _, err := New(hpo.ArchSpec{Layers: &hpo.LayerSpace{}}); err != nil {
		t.Error(err)
	}
	_, err := New(hpo.ArchSpec{})
	wantErr(t, err, "cell: missing: set exactly one of cell, layers")
	_, err = New(hpo.ArchSpec{Cell: &hpo.CellSpace{}, Layers: &hpo.LayerSpace{}})
	wantErr(t, err, "layers: set along with cell: set exactly one of cell, layers")
}

// Through hpo: an architecture parameter finds this package's spaces
// (registered by init), and hpo names the parameter in errors.
func TestHPOParam(t *testing.T) {
	p := hpo.Param{Name: "arch", Type: hpo.ParamArch, Architecture: &hpo.ArchSpec{
		Cell: &hpo.CellSpace{Nodes: 4, Ops: nb201Ops, Stacks: 2, Cells: 1, Channels: 8},
	}}
	a, err := p.Architectures()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*CellSpace); !ok {
		t.Fatalf("Architectures() is a %T, want a *CellSpace", a)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	arch := a.Sample(rng)
	if c, err := a.Canonical(arch); err != nil || c != arch {
		t.Errorf("sample %s: Canonical %s, %v", arch, c, err)
	}
	if m := a.Mutate(rng, arch); m == arch {
		t.Errorf("Mutate returned its argument")
	}

	p.Architecture = &hpo.ArchSpec{Cell: &hpo.CellSpace{Nodes: 9}}
	_, err = p.Architectures()
	wantErr(t, err, `space: parameter "arch": architecture.cell.nodes: 9 must be in [2, 7]`)
	p.Architecture = &hpo.ArchSpec{Layers: &hpo.LayerSpace{Activations: []string{"relu", "relu"}}}
	_, err = p.Architectures()
	wantErr(t, err, `space: parameter "arch": architecture.layers.activations[1]: "relu" is listed twice (also at [0])`)
	p.Architecture = &hpo.ArchSpec{}
	_, err = p.Architectures()
	wantErr(t, err, `space: parameter "arch": architecture.cell: missing: set exactly one of cell, layers`)
}

func TestHash(t *testing.T) {
	a := cell(row(c3), row(avg, no), row(skip, c1, c3)).json()
	b := cell(row(avg), row(c3, no), row(skip, c3, c1)).json() // isomorphic
	if Hash(a) != Hash(b) {
		t.Errorf("isomorphic cells hash to %s and %s", Hash(a), Hash(b))
	}
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(Hash(a)) {
		t.Errorf("Hash = %q, want 12 hex digits", Hash(a))
	}
	// Stable: a hash is a name people keep.
	if got, want := Hash(a), "3fbff61d31d5"; got != want {
		t.Errorf("Hash(%s) = %s, want %s", a, got, want)
	}
	// docs/nas.md's example, and its form with nodes 1 and 2 swapped.
	doc := cell(row(skip), row(c3, no), row(c1, c3, avg)).json()
	if c := canon(t, cell(row(c3), row(skip, no), row(c1, avg, c3))); c != doc || Hash(c) != "62b55d54ef37" {
		t.Errorf("docs/nas.md's example: %s, hash %s", c, Hash(c))
	}
	if Hash(a) == Hash(cell(row(c3), row(avg, no), row(skip, c1, avg)).json()) {
		t.Error("different cells share a hash")
	}
	if Hash("not json") == Hash("not json!") || Hash("") == "" {
		t.Error("strings that do not parse must hash as they are")
	}
}

// Canonical without a space accepts every known operation and needs the
// network's size.
func TestCanonicalPackage(t *testing.T) {
	arch := cell(row(c3), row(mx, no), row(skip, avg, c1)).json()
	if c, err := Canonical(arch); err != nil || c != arch {
		t.Errorf("Canonical(%s) = %s, %v", arch, c, err)
	}
	_, err := Canonical(`{"cell":{"nodes":2,"edges":[["conv_3x3"]],"cells":1,"channels":8}}`)
	wantErr(t, err, "cell.stacks: 0 must be in [1, 6]")
	_, err = Canonical(`{"layers":{"kind":"mlp","layers":[]}}`)
	wantErr(t, err, "layers.layers: 0 layers, want 1 to 64")
	_, err = Canonical(`{"layers":{"kind":"mlp","layers":[{"width":0,"activation":"relu"}]}}`)
	wantErr(t, err, "layers.layers[0].width: 0 must be in [1, 65536]")
	_, err = Canonical(`{"layers":{"layers":[{"width":3,"activation":"relu"}]}}`)
	wantErr(t, err, `layers.kind: "" is not one of mlp, cnn`)
	l := `{"layers":{"kind":"cnn","layers":[{"width":3,"activation":"silu","skip":false},{"width":3,"activation":"elu","skip":true}]}}`
	if c, err := Canonical(l); err != nil || c != l {
		t.Errorf("Canonical(%s) = %s, %v", l, c, err)
	}
}
