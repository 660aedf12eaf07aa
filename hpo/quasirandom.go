package hpo

import (
	"fmt"
	"math/rand/v2"
)

// AlgorithmQuasiRandom names the scrambled Halton sequence searcher.
const AlgorithmQuasiRandom = "quasirandom"

// QuasiRandomSettings configure search.quasirandom.
type QuasiRandomSettings struct {
	// Scramble permutes each dimension's digits with a seeded random
	// permutation (default true), which breaks the correlation between
	// the high dimensions of the plain Halton sequence (Kocis & Whiten
	// 1997). false gives the plain sequence, the same for every seed.
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
		name:    AlgorithmQuasiRandom,
		summary: "a scrambled Halton sequence: low-discrepancy points, the space covered more evenly than by random samples",
		section: func(s Settings) (validator, bool) { return s.QuasiRandom, s.QuasiRandom != nil },
		new:     func(cfg Config) (Searcher, error) { return newQuasiRandom(cfg), nil },
	})
}

// quasiRandom proposes the Halton sequence's points in order (Halton
// 1960): dimension i of point n is the radical inverse of n in the i-th
// prime base, its digits optionally permuted (one seeded permutation of
// 1..b−1 per dimension, 0 fixed so the sequence stays in [0, 1)). The
// point's index is the window's trial count, so the state is the window
// alone.
type quasiRandom struct {
	cfg   Config
	skip  int
	perms [][]int // per dimension; nil: unscrambled
	st    window
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
			perm := make([]int, b)
			for j, p := range rng.Perm(b - 1) {
				perm[j+1] = p + 1
			}
			q.perms = append(q.perms, perm)
		}
	}
	return q
}

// point is the sequence's n-th point (n ≥ 1).
func (q *quasiRandom) point(n int) Params {
	p := make(Params, len(q.cfg.Space))
	for i, d := range q.cfg.Space {
		var perm []int
		if q.perms != nil {
			perm = q.perms[i]
		}
		p[d.Name] = d.fromUnit(radicalInverse(n, prime(i), perm))
	}
	return p
}

// radicalInverse mirrors n's base-b digits about the point: 0.d₁d₂… for
// n = …d₂d₁, each digit mapped through perm when given.
func radicalInverse(n, b int, perm []int) float64 {
	var v float64
	f := 1 / float64(b)
	for scale := f; n > 0; n /= b {
		d := n % b
		if perm != nil {
			d = perm[d]
		}
		v += float64(d) * scale
		scale *= f
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
	return q.st.fill(q.cfg, func(string) (Params, bool) { return q.point(q.skip + q.st.Created + 1), true })
}

func (q *quasiRandom) Progress() float64 { return q.st.progress(q.cfg) }

func (q *quasiRandom) Snapshot() ([]byte, error) { return marshalSnapshot(AlgorithmQuasiRandom, q.st) }

func (q *quasiRandom) Restore(snapshot []byte) error {
	var st window
	if err := unmarshalSnapshot(AlgorithmQuasiRandom, snapshot, &st); err != nil {
		return err
	}
	if err := st.check(q.cfg); err != nil {
		return fmt.Errorf("restore quasirandom searcher: %w", err)
	}
	q.st = st
	return nil
}
