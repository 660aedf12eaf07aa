package hpo

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// AlgorithmGrid names grid search.
const AlgorithmGrid = "grid"

// GridSettings configure search.grid.
type GridSettings struct {
	// Resolution is how many evenly spaced values a float parameter takes
	// (geometrically spaced when log), and an integer parameter with more
	// integers than that (default 5). Both ends are always included;
	// choices take all their values.
	Resolution int `json:"resolution,omitempty"`
	// Shuffle visits the points in a seeded order rather than
	// lexicographically (default true), so a max_trials below the grid's
	// size still spreads over the whole grid.
	Shuffle *bool `json:"shuffle,omitempty"`
}

// Validate checks the settings; errors name the field.
func (s *GridSettings) Validate() error {
	if s.Resolution != 0 && (s.Resolution < 2 || s.Resolution > 1000) {
		return fmt.Errorf("resolution: %d must be in 2..1000", s.Resolution)
	}
	return nil
}

func init() {
	register(algorithm{
		name:        AlgorithmGrid,
		creates:     true,
		conditional: true,
		summary:     "every combination of evenly spaced values (resolution per numeric parameter, all choices); ends when the grid is done",
		section:     func(s Settings) (validator, bool) { return s.Grid, s.Grid != nil },
		new:         newGrid,
	})
}

// grid enumerates the Cartesian product of each parameter's values (a
// space with an architecture parameter has no grid: newGrid refuses it). Point
// k (the window's trial count) is decoded in mixed radix from index
// (a·k + b) mod N, a seeded affine permutation of 0..N−1 (a coprime with
// N), so the state is the window alone and no permutation is stored.
//
// A conditional space's grid holds only the combinations of active
// parameters (no two points differ only in an inactive one), and a grid
// with forbidden clauses only the allowed points: such a grid is
// enumerated when the searcher is built, in space order, each point kept
// as its values' indices (list), at most maxListedGridPoints of them.
type grid struct {
	cfg    Config
	values [][]Value // per parameter, in space order
	n      uint64    // points in all
	a, b   uint64    // the permutation; a = 1, b = 0 without shuffle
	// list, for a conditional space or one with forbidden clauses, holds
	// point j's value indices at list[j·len(space):], −1 for an inactive
	// parameter; nil otherwise.
	list []int32
	st   window
}

// maxGridPoints bounds a grid; beyond it a search would never finish it.
const maxGridPoints = 1 << 53

// maxListedGridPoints bounds an enumerated grid (a conditional space's,
// or one with forbidden clauses): 4 bytes per parameter and point.
const maxListedGridPoints = 1 << 20

func newGrid(cfg Config) (Searcher, error) {
	res, shuffle := 5, true
	if s := cfg.Settings.Grid; s != nil {
		if s.Resolution != 0 {
			res = s.Resolution
		}
		if s.Shuffle != nil {
			shuffle = *s.Shuffle
		}
	}
	g := &grid{cfg: cfg, n: 1, a: 1}
	for _, d := range cfg.Space {
		if d.Type == ParamArch {
			return nil, fmt.Errorf("search.grid: parameter %q is an architecture, whose space cannot be enumerated; use %s, %s or %s",
				d.Name, AlgorithmRandom, AlgorithmEvolution, AlgorithmLocal)
		}
		vals := gridValues(d, res)
		g.values = append(g.values, vals)
		hi, lo := bits.Mul64(g.n, uint64(len(vals)))
		if hi != 0 || lo > maxGridPoints {
			return nil, fmt.Errorf("search.grid: the grid has more than 2^53 points; lower search.grid.resolution or use another algorithm")
		}
		g.n = lo
	}
	if cfg.Space.Conditional() || len(cfg.Forbidden) > 0 {
		if err := g.enumerate(); err != nil {
			return nil, err
		}
	}
	if shuffle && g.n > 1 {
		rng := rand.New(newPCG(cfg.Seed))
		for {
			g.a = 1 + rng.Uint64N(g.n-1)
			if gcd(g.a, g.n) == 1 {
				break
			}
		}
		g.b = rng.Uint64N(g.n)
	}
	return g, nil
}

// gridValues are d's grid values, in increasing order, without repeats.
func gridValues(d Param, res int) []Value {
	if d.Type == ParamChoice {
		vals := make([]Value, len(d.Choices))
		for i, c := range d.Choices {
			vals[i] = String(c)
		}
		return vals
	}
	if d.Type == ParamInt {
		lo, hi := math.Ceil(d.Min), math.Floor(d.Max)
		if hi-lo+1 <= float64(res) {
			var vals []Value
			for v := lo; v <= hi; v++ {
				vals = append(vals, Float(v))
			}
			return vals
		}
	}
	vals := make([]Value, 0, res)
	for k := range res {
		v := d.fromUnit(float64(k) / float64(res-1))
		if d.Type == ParamFloat && k == 0 {
			v = Float(d.Min) // exp(log(min)) may be off in the last bit
		}
		if d.Type == ParamFloat && k == res-1 {
			v = Float(d.Max) // fromUnit stops just below 1
		}
		if len(vals) == 0 || vals[len(vals)-1].Num != v.Num {
			vals = append(vals, v)
		}
	}
	return vals
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// enumerate lists the grid's points of active parameters that no clause
// forbids (grid.list), depth first in space order: a parameter inactive
// given the values before it takes none, an active one each of its values.
func (g *grid) enumerate() error {
	space := g.cfg.Space
	idx := make([]int32, len(space))
	p := make(Params, len(space))
	leaves := 0
	var walk func(i int) error
	walk = func(i int) error {
		if i == len(space) {
			if leaves++; leaves > 4*maxListedGridPoints {
				return fmt.Errorf("search.grid: the grid of the active combinations has more than 2^22 points, forbidden ones included; lower search.grid.resolution or use another algorithm")
			}
			if !Allowed(space, g.cfg.Forbidden, p) {
				return nil
			}
			if len(g.list) >= maxListedGridPoints*len(space) {
				return fmt.Errorf("search.grid: the grid of the active combinations has more than 2^20 points; lower search.grid.resolution or use another algorithm")
			}
			g.list = append(g.list, idx...)
			return nil
		}
		d := space[i]
		if d.When != nil && !space.IsActive(i, p) {
			idx[i] = -1
			return walk(i + 1)
		}
		for k, v := range g.values[i] {
			idx[i], p[d.Name] = int32(k), v
			if err := walk(i + 1); err != nil {
				return err
			}
		}
		delete(p, d.Name)
		return nil
	}
	if err := walk(0); err != nil {
		return err
	}
	if len(g.list) == 0 {
		return fmt.Errorf("search.grid: every point of the grid is forbidden (forbidden)")
	}
	g.n = uint64(len(g.list) / len(space))
	return nil
}

// point decodes the k-th point to visit.
func (g *grid) point(k uint64) Params {
	hi, lo := bits.Mul64(g.a, k)
	_, idx := bits.Div64(hi%g.n, lo, g.n) // (a·k) mod n, no overflow
	idx = (idx + g.b) % g.n
	if g.list != nil {
		n := len(g.values)
		p := make(Params, n)
		for i, j := range g.list[int(idx)*n : int(idx+1)*n] {
			if j >= 0 {
				p[g.cfg.Space[i].Name] = g.values[i][j]
			}
		}
		return p
	}
	p := make(Params, len(g.values))
	for i := len(g.values) - 1; i >= 0; i-- {
		r := uint64(len(g.values[i]))
		p[g.cfg.Space[i].Name] = g.values[i][idx%r]
		idx /= r
	}
	return p
}

func (g *grid) Initial() []Action { return g.fill() }

func (g *grid) TrialCreated(string) []Action { return nil }

func (g *grid) TrialReported(string, float64, float64) []Action { return nil }

func (g *grid) TrialFinished(id string, _ float64, _ Outcome) []Action { return g.end(id) }

func (g *grid) TrialFailed(id string) []Action { return g.end(id) }

func (g *grid) end(id string) []Action {
	if !g.st.end(id) {
		return nil
	}
	return g.fill()
}

func (g *grid) fill() []Action {
	return g.st.fill(g.cfg, func(n int) (Params, bool) {
		if uint64(n) >= g.n {
			return nil, false
		}
		return g.point(uint64(n)), true
	}, nil)
}

func (g *grid) Progress() float64 {
	if g.st.Shutdown {
		return 1
	}
	return float64(g.st.Ended) / float64(min(uint64(g.cfg.MaxTrials), g.n+uint64(len(g.cfg.Points))))
}

func (g *grid) Snapshot() ([]byte, error) { return marshalSnapshot(AlgorithmGrid, g.st) }

func (g *grid) Restore(snapshot []byte) error {
	var st window
	if err := unmarshalSnapshot(AlgorithmGrid, snapshot, &st); err != nil {
		return err
	}
	if err := st.check(g.cfg); err != nil {
		return fmt.Errorf("restore grid searcher: %w", err)
	}
	if uint64(st.Created) > g.n+uint64(len(g.cfg.Points)) {
		return fmt.Errorf("restore grid searcher: %d trials created, the grid has %d points", st.Created, g.n)
	}
	g.st = st
	return nil
}
