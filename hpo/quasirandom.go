package hpo

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// AlgorithmQuasiRandom names the scrambled Halton sequence searcher.
const AlgorithmQuasiRandom = "quasirandom"

// QuasiRandomSettings configure search.quasirandom.
type QuasiRandomSettings struct {
	// Scramble permutes every digit of every dimension with its own seeded
	// random permutation (default true): random digit scrambling
	// (Matoušek 1998), which keeps the sequence's stratification, breaks
	// the correlation between high dimensions of the plain Halton
	// sequence, and gives each seed its own point set. false gives the
	// plain sequence, the same for every seed.
	Scramble *bool `json:"scramble,omitempty"`
	// Skip leaves out the sequence's first points (default 0).
	Skip int `json:"skip,omitempty"`
}

// Validate checks the settings; errors name the field.
func (s *QuasiRandomSettings) Validate() error {
	if s.Skip < 0 || s.Skip > 1<<30 {
		return fmt.Errorf("skip: %d must be in 0..2^30", s.Skip)
	}
	return nil
}

func init() {
	register(algorithm{
		name:        AlgorithmQuasiRandom,
		creates:     true,
		vector:      true,
		conditional: true,
		summary:     "a scrambled Halton sequence: low-discrepancy points, the space covered more evenly than by random samples",
		section:     func(s Settings) (validator, bool) { return s.QuasiRandom, s.QuasiRandom != nil },
		new:         func(cfg Config) (Searcher, error) { return newQuasiRandom(cfg), nil },
	})
}

// quasiRandom proposes the Halton sequence's points in order (Halton
// 1960): dimension i of point n is the radical inverse of n in the i-th
// prime base b, 0.d₁d₂…d_K for n = …d₂d₁, its first K digits (as many as
// a float64 resolves, leading zeros included) each mapped through a
// seeded permutation of 0..b−1 of its own when scrambled. The point's
// index is the window's trial count plus the points skipped as
// forbidden, so the state is the window and that count.
//
// In a conditional space every point is drawn whole, one dimension per
// parameter, and the parameters inactive in it are dropped (Space.Prune):
// each parameter keeps its own dimension, and the points where it is
// active are still evenly spread. A point a forbidden clause rules out is
// skipped.
type quasiRandom struct {
	cfg   Config
	skip  int
	perms [][][]int // [dimension][digit position]; nil: unscrambled
	st    quasiRandomState
}

// quasiRandomState is all quasi-random search remembers.
type quasiRandomState struct {
	window
	// Forbidden counts the points skipped because a forbidden clause
	// ruled them out.
	Forbidden int `json:"forbidden,omitempty"`
}

func newQuasiRandom(cfg Config) *quasiRandom {
	q := &quasiRandom{cfg: cfg}
	set := cfg.Settings.QuasiRandom
	scramble := true
	if set != nil {
		q.skip = set.Skip
		if set.Scramble != nil {
			scramble = *set.Scramble
		}
	}
	if scramble {
		rng := rand.New(newPCG(cfg.Seed))
		for i := range cfg.Space {
			b := prime(i)
			dim := make([][]int, digits(b))
			for k := range dim {
				dim[k] = rng.Perm(b)
			}
			q.perms = append(q.perms, dim)
		}
	}
	return q
}

// digits is how many base-b digits a float64's 52-bit fraction resolves.
func digits(b int) int { return max(1, int(52/math.Log2(float64(b)))) }

// point is the sequence's n-th point (n ≥ 1).
func (q *quasiRandom) point(n int) Params {
	p := make(Params, len(q.cfg.Space))
	for i, d := range q.cfg.Space {
		var perms [][]int
		if q.perms != nil {
			perms = q.perms[i]
		}
		p[d.Name] = d.fromUnit(radicalInverse(n, prime(i), perms))
	}
	if q.cfg.Space.Conditional() {
		return q.cfg.Space.Prune(p)
	}
	return p
}

// radicalInverse mirrors n's base-b digits about the point: 0.d₁d₂… for
// n = …d₂d₁. With perms, digit k (0-based, leading zeros included up to
// len(perms)) is mapped through perms[k].
func radicalInverse(n, b int, perms [][]int) float64 {
	var v float64
	f := 1 / float64(b)
	scale := f
	for k := 0; n > 0 || k < len(perms); k++ {
		d := n % b
		if k < len(perms) {
			d = perms[k][d]
		}
		v += float64(d) * scale
		scale *= f
		n /= b
	}
	return v
}

// prime returns the i-th prime (0-based): the base of dimension i.
func prime(i int) int {
	for n, found := 2, 0; ; n++ {
		isPrime := true
		for d := 2; d*d <= n; d++ {
			if n%d == 0 {
				isPrime = false
				break
			}
		}
		if isPrime {
			if found == i {
				return n
			}
			found++
		}
	}
}

func (q *quasiRandom) Initial() []Action { return q.fill() }

func (q *quasiRandom) TrialCreated(string) []Action { return nil }

func (q *quasiRandom) TrialReported(string, float64, float64) []Action { return nil }

func (q *quasiRandom) TrialFinished(id string, _ float64, _ Outcome) []Action { return q.end(id) }

func (q *quasiRandom) TrialFailed(id string) []Action { return q.end(id) }

func (q *quasiRandom) end(id string) []Action {
	if !q.st.end(id) {
		return nil
	}
	return q.fill()
}

func (q *quasiRandom) fill() []Action {
	// Point 0 is the origin's corner in every dimension: start at 1.
	return q.st.fill(q.cfg, func(n int) (Params, bool) {
		for range maxForbiddenTries {
			p := q.point(q.skip + q.st.Forbidden + n + 1)
			if Allowed(q.cfg.Space, q.cfg.Forbidden, p) {
				return p, true
			}
			q.st.Forbidden++
		}
		return nil, false // (almost) all forbidden: the search ends
	}, nil)
}

func (q *quasiRandom) Progress() float64 { return q.st.progress(q.cfg) }

func (q *quasiRandom) Snapshot() ([]byte, error) { return marshalSnapshot(AlgorithmQuasiRandom, q.st) }

func (q *quasiRandom) Restore(snapshot []byte) error {
	var st quasiRandomState
	if err := unmarshalSnapshot(AlgorithmQuasiRandom, snapshot, &st); err != nil {
		return err
	}
	if st.Forbidden < 0 || st.Forbidden > 1<<40 {
		return fmt.Errorf("restore quasirandom searcher: forbidden: %d points skipped", st.Forbidden)
	}
	if err := st.check(q.cfg); err != nil {
		return fmt.Errorf("restore quasirandom searcher: %w", err)
	}
	q.st = st
	return nil
}
