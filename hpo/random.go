package hpo

import (
	"fmt"
	"math/rand/v2"
)

// random is random search: it samples the space with its seeded RNG and
// keeps up to MaxConcurrent trials outstanding until MaxTrials have been
// created. Metrics do not steer it.
type random struct {
	cfg Config
	pcg *rand.PCG
	rng *rand.Rand
	st  randomState
}

// randomState is all random search remembers; with the RNG state it is
// the snapshot.
type randomState struct {
	// RNG is the PCG's binary state (rand.PCG.MarshalBinary).
	RNG []byte `json:"rng"`
	window
}

func init() {
	register(algorithm{
		name:        AlgorithmRandom,
		creates:     true,
		vector:      true,
		conditional: true,
		summary:     "independent uniform samples of the space (log-uniform for log parameters)",
		new:         func(cfg Config) (Searcher, error) { return newRandom(cfg), nil },
	})
}

// newPCG seeds a searcher's RNG; the second PCG word only needs to differ
// between seeds' streams.
func newPCG(seed uint64) *rand.PCG { return rand.NewPCG(seed, seed^0x9e3779b97f4a7c15) }

func newRandom(cfg Config) *random {
	pcg := newPCG(cfg.Seed)
	return &random{cfg: cfg, pcg: pcg, rng: rand.New(pcg)}
}

func (r *random) Initial() []Action { return r.fill() }

func (r *random) TrialCreated(string) []Action { return nil }

func (r *random) TrialReported(string, float64, float64) []Action { return nil }

func (r *random) TrialFinished(id string, _ float64, _ Outcome) []Action { return r.end(id) }

func (r *random) TrialFailed(id string) []Action { return r.end(id) }

func (r *random) end(id string) []Action {
	if !r.st.end(id) {
		return nil
	}
	return r.fill()
}

func (r *random) fill() []Action {
	return r.st.fill(r.cfg, func(int) (Params, bool) {
		p, err := r.cfg.Space.SampleAllowed(r.rng, r.cfg.Forbidden)
		return p, err == nil // all forbidden: the search ends
	}, nil)
}

func (r *random) Progress() float64 { return r.st.progress(r.cfg) }

func (r *random) Snapshot() ([]byte, error) {
	b, err := r.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot random searcher: rng: %w", err)
	}
	st := r.st
	st.RNG = b
	return marshalSnapshot(AlgorithmRandom, st)
}

func (r *random) Restore(snapshot []byte) error {
	var st randomState
	if err := unmarshalSnapshot(AlgorithmRandom, snapshot, &st); err != nil {
		return err
	}
	if err := r.pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore random searcher: rng: %w", err)
	}
	if err := st.check(r.cfg); err != nil {
		return fmt.Errorf("restore random searcher: %w", err)
	}
	st.RNG = nil
	r.st = st
	return nil
}
