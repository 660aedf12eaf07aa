package hpo

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// bitArchs is a fake architecture space (package nas has the real ones,
// and imports hpo, so hpo's tests cannot use them): an architecture is a
// string of n bits written as a JSON array, [0,1,1,0,…], and a string and
// its reversal are the same architecture (as isomorphic cells are), the
// canonical form being the lexicographically smaller of the two, compact.
// A mutation flips one bit. It is defined by a layers section, n its
// max_depth.
type bitArchs struct{ n int }

func newBitArchs(spec ArchSpec) (Architectures, error) {
	if spec.Layers == nil {
		return nil, errors.New("cell: the test space has layers only")
	}
	if n := spec.Layers.MaxDepth; n < 2 || n > 64 {
		return nil, fmt.Errorf("layers.max_depth: %d must be in 2..64", n)
	}
	return bitArchs{spec.Layers.MaxDepth}, nil
}

// The fake is registered for every test of the package; a test that
// unregisters it registers it again.
func init() { RegisterArchitectures(newBitArchs) }

func (a bitArchs) decode(arch string) ([]int, error) {
	var bits []int
	if err := json.Unmarshal([]byte(arch), &bits); err != nil {
		return nil, fmt.Errorf("bits: not a JSON array of 0s and 1s: %v", err)
	}
	if len(bits) != a.n {
		return nil, fmt.Errorf("bits: %d of them, want %d", len(bits), a.n)
	}
	for i, b := range bits {
		if b != 0 && b != 1 {
			return nil, fmt.Errorf("bits[%d]: %d is not 0 or 1", i, b)
		}
	}
	return bits, nil
}

func (a bitArchs) encode(bits []int) string {
	rev := slices.Clone(bits)
	slices.Reverse(rev)
	if slices.Compare(rev, bits) < 0 {
		bits = rev
	}
	b, _ := json.Marshal(bits)
	return string(b)
}

func (a bitArchs) must(arch string) []int {
	bits, err := a.decode(arch)
	if err != nil {
		panic(err)
	}
	return bits
}

func (a bitArchs) Sample(rng *rand.Rand) string {
	bits := make([]int, a.n)
	for i := range bits {
		bits[i] = rng.IntN(2)
	}
	return a.encode(bits)
}

func (a bitArchs) Mutate(rng *rand.Rand, arch string) string {
	bits := a.must(arch)
	bits[rng.IntN(a.n)] ^= 1
	return a.encode(bits)
}

func (a bitArchs) Neighbors(arch string) []string {
	var out []string
	for i := range a.n {
		bits := a.must(arch)
		bits[i] ^= 1
		if nb := a.encode(bits); nb != arch && !slices.Contains(out, nb) {
			out = append(out, nb)
		}
	}
	slices.Sort(out)
	return out
}

func (a bitArchs) Canonical(arch string) (string, error) {
	bits, err := a.decode(arch)
	if err != nil {
		return "", err
	}
	return a.encode(bits), nil
}

// ones counts an architecture's 1 bits (the same for its reversal).
func ones(arch string) int { return strings.Count(arch, "1") }

func bitsParam(name string, n int) Param {
	return Param{Name: name, Type: ParamArch, Architecture: &ArchSpec{Layers: &LayerSpace{MaxDepth: n}}}
}

// archSpace is the harness's space with an architecture of 6 bits.
func archSpace() Space { return append(testSpace(), bitsParam("arch", 6)) }

// archScript is testScript, the score lowered by the architecture's ones,
// so that schedules depend on the architectures sampled too.
func archScript(p Params) curve {
	c := testScript(p)
	c.Score += float64(6 - ones(p["arch"].Str))
	return c
}

func TestArchSpaceValidate(t *testing.T) {
	layers := func(n int) *ArchSpec { return &ArchSpec{Layers: &LayerSpace{MaxDepth: n}} }
	for _, tc := range []struct {
		p    Param
		want string
	}{
		{Param{Name: "arch", Type: ParamArch}, `space: parameter "arch": architecture: missing`},
		{Param{Name: "arch", Type: ParamArch, Architecture: &ArchSpec{}}, `space: parameter "arch": architecture: missing`},
		{Param{Name: "arch", Type: ParamArch, Architecture: &ArchSpec{Cell: &CellSpace{}, Layers: &LayerSpace{}}}, `space: parameter "arch": architecture: both cell and layers`},
		{Param{Name: "arch", Type: ParamArch, Architecture: layers(6), Max: 3}, `space: parameter "arch": min, max, log and choices do not apply`},
		{Param{Name: "arch", Type: ParamArch, Architecture: &ArchSpec{Cell: &CellSpace{Nodes: 4}}}, `space: parameter "arch": architecture.cell: `},
		{Param{Name: "arch", Type: ParamArch, Architecture: layers(1)}, `space: parameter "arch": architecture.layers.max_depth: 1`},
		{Param{Name: "x", Type: ParamFloat, Max: 1, Architecture: layers(6)}, `space: parameter "x": architecture: only a parameter of type architecture`},
		{Param{Name: "x", Type: "graph"}, `is not one of float, int, choice, architecture`},
	} {
		err := Space{tc.p}.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one with %q", tc.p, err, tc.want)
		}
	}
	if err := (Space{bitsParam("arch", 6)}).Validate(); err != nil {
		t.Errorf("a valid architecture parameter: %v", err)
	}
}

// Without package nas linked in (nothing registered), an architecture
// parameter is an error that says to import it.
func TestArchSpaceNeedsNas(t *testing.T) {
	RegisterArchitectures(nil)
	t.Cleanup(func() { RegisterArchitectures(newBitArchs) })
	err := Space{bitsParam("arch", 6)}.Validate()
	if !errors.Is(err, ErrNoArchitectures) || !strings.Contains(err.Error(), `parameter "arch"`) || !strings.Contains(err.Error(), "import github.com/gleaner-hpc/gleaner/nas") {
		t.Errorf("error %v, want ErrNoArchitectures naming the parameter and saying to import nas", err)
	}
	_, err = NewSearcher(Config{Algorithm: AlgorithmRandom, Space: archSpace(), MaxTrials: 1, MaxConcurrent: 1, Mode: "min"})
	if !errors.Is(err, ErrNoArchitectures) {
		t.Errorf("NewSearcher: %v, want ErrNoArchitectures", err)
	}
}

// Contains takes an architecture only in its canonical form, and says
// what that is; a value that is no architecture is an error naming the
// parameter and, through the space's own error, the field.
func TestArchContains(t *testing.T) {
	s := Space{bitsParam("arch", 6)}
	for _, tc := range []struct {
		v    Value
		want string // "" for no error
	}{
		{String("[0,0,1,0,1,1]"), ""},
		{String("[1,1,0,1,0,0]"), `params: "arch": architecture not in canonical form; write it as [0,0,1,0,1,1]`}, // its reversal
		{String("[0, 0, 1, 0, 1, 1]"), `write it as [0,0,1,0,1,1]`},
		{String("[0,0,1,0,1,2]"), `params: "arch": bits[5]: 2 is not 0 or 1`},
		{String("[0,1]"), `params: "arch": bits: 2 of them`},
		{Float(3), `params: "arch" = 3 is not an architecture`},
	} {
		err := s.Contains(Params{"arch": tc.v})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want no error", tc.v, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one with %q", tc.v, err, tc.want)
		}
	}
	// An enqueued point must be canonical too.
	cfg := Config{Algorithm: AlgorithmRandom, Space: s, MaxTrials: 2, MaxConcurrent: 1, Mode: "min",
		Points: []Params{{"arch": String("[1,1,0,1,0,0]")}}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "points[0]: ") || !strings.Contains(err.Error(), "[0,0,1,0,1,1]") {
		t.Errorf("a non-canonical point: %v, want an error naming points[0] and the canonical form", err)
	}
}

// Sampling draws architectures from their space, canonical; fromUnit
// (quasi-random) maps each u to one architecture, the same every time.
func TestArchSample(t *testing.T) {
	s := archSpace()
	d := s[len(s)-1]
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		p := s.Sample(rng)
		if err := s.Contains(p); err != nil {
			t.Fatal(err)
		}
		seen[p["arch"].Str] = true
	}
	// 36 classes of 6 bits up to reversal; 200 samples find nearly all.
	if len(seen) < 30 {
		t.Errorf("200 samples gave %d architectures, want most of the 36", len(seen))
	}
	units := map[string]bool{}
	for k := range 200 {
		u := float64(k) / 200
		v := d.fromUnit(u)
		if err := (Space{d}).Contains(Params{"arch": v}); err != nil {
			t.Fatalf("fromUnit(%v): %v", u, err)
		}
		if again := d.fromUnit(u); again != v {
			t.Fatalf("fromUnit(%v) = %v, then %v", u, v, again)
		}
		units[v.Str] = true
	}
	if len(units) < 30 {
		t.Errorf("fromUnit over 200 u gave %d architectures, want most of the 36", len(units))
	}
}

// A grid cannot enumerate an architecture space: the error names the
// parameter and the searchers to use instead, alone or as a sampler.
func TestGridRefusesArchitectures(t *testing.T) {
	for _, set := range []Settings{{}, {ASHA: &ASHASettings{MinBudget: 100, Sampler: AlgorithmGrid}}} {
		alg := AlgorithmGrid
		if set.ASHA != nil {
			alg = AlgorithmASHA
		}
		_, err := NewSearcher(Config{Algorithm: alg, Space: archSpace(), MaxTrials: 5, MaxConcurrent: 1, Mode: "min", Settings: set})
		if err == nil || !strings.Contains(err.Error(), `parameter "arch"`) || !strings.Contains(err.Error(), AlgorithmEvolution) {
			t.Errorf("%s: error %v, want one naming \"arch\" and suggesting evolution", alg, err)
		}
	}
}

// Every algorithm but grid runs on a space with an architecture, through
// the harness (every proposal inside the space, canonical; snapshots
// survive every event; the same seed, the same schedule).
func TestHarnessArchitectures(t *testing.T) {
	for _, alg := range Algorithms() {
		if alg == AlgorithmGrid {
			continue
		}
		for _, js := range harnessSettings[alg] {
			var set Settings
			if err := json.Unmarshal([]byte(js), &set); err != nil {
				t.Fatal(err)
			}
			if set.ASHA != nil && set.ASHA.Sampler == AlgorithmGrid {
				continue
			}
			t.Run(alg+"/"+js, func(t *testing.T) {
				cfg := Config{Algorithm: alg, Space: archSpace(), Seed: 42, MaxTrials: 40, MaxConcurrent: 4, Mode: "min", Settings: set}
				sched, created := run(t, cfg, archScript)
				if again, _ := run(t, cfg, archScript); again != sched {
					t.Errorf("same seed, different schedules:\n%s\n---\n%s", sched, again)
				}
				archs := map[string]bool{}
				for _, c := range created {
					archs[c.Params["arch"].Str] = true
				}
				if len(archs) < 3 {
					t.Errorf("%d trials tried %d architectures", len(created), len(archs))
				}
			})
		}
	}
}

// TPE models the other parameters and samples the architecture: its rows
// keep 0 there, and no architecture JSON, but every proposal has one.
func TestTPESamplesArchitectures(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmTPE, Space: archSpace(), Seed: 3, MaxTrials: 30, MaxConcurrent: 2, Mode: "min",
		Settings: Settings{TPE: &TPESettings{NStartupTrials: 5}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tp := newTPE(cfg)
	queue := tp.Initial()
	archs := map[string]bool{}
	for len(queue) > 0 {
		c, ok := queue[0].(Create)
		queue = queue[1:]
		if !ok {
			continue
		}
		if err := cfg.Space.Contains(c.Params); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		archs[c.Params["arch"].Str] = true
		queue = append(queue, tp.TrialFinished(c.ID, archScript(c.Params).Score, OutcomeCompleted)...)
	}
	if len(tp.st.Observed) != 30 || len(archs) < 15 {
		t.Errorf("%d observations, %d architectures; want 30, most of them different", len(tp.st.Observed), len(archs))
	}
	for _, r := range tp.st.Observed {
		if r[len(r)-1] != 0 {
			t.Errorf("row %v: the architecture's column is not 0", r)
		}
	}
}

// PBT never changes a member's architecture when it copies a checkpoint:
// the weights fit that network only.
func TestPBTKeepsArchitectures(t *testing.T) {
	one := 1.0
	cfg := Config{Algorithm: AlgorithmPBT, Space: archSpace(), Seed: 4, MaxTrials: 60, MaxConcurrent: 6, Mode: "min",
		Settings: Settings{PBT: &PBTSettings{Interval: 200, MaxBudget: 2000, ResampleProbability: &one}}}
	_, created := run(t, cfg, archScript)
	params := map[string]Params{}
	copies := 0
	for _, c := range created {
		params[c.ID] = c.Params
		if c.From == "" {
			continue
		}
		copies++
		if got, want := c.Params["arch"], params[c.From]["arch"]; got != want {
			t.Errorf("%s from %s: architecture %v, want the source's %v", c.ID, c.From, got, want)
		}
	}
	if copies == 0 {
		t.Error("no member copied another")
	}
}
