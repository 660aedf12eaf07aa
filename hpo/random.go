package hpo

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// random is random search: it samples the space with its seeded RNG and
// keeps up to MaxConcurrent trials outstanding (created, not yet ended)
// until MaxTrials have been created, then shuts down once all have ended.
// Metrics do not steer it.
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
	// Created counts trials asked for; the next ID is trialID(Created+1).
	Created int `json:"created"`
	// Outstanding are the trials created and not yet ended, in creation order.
	Outstanding []string `json:"outstanding,omitempty"`
	// Ended counts trials finished or failed.
	Ended int `json:"ended"`
	// Shutdown is set once Shutdown has been returned.
	Shutdown bool `json:"shutdown,omitempty"`
}

func newRandom(cfg Config) *random {
	// The second PCG word only needs to differ between seeds' streams.
	pcg := rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	return &random{cfg: cfg, pcg: pcg, rng: rand.New(pcg)}
}

func trialID(n int) string { return fmt.Sprintf("t%05d", n) }

func (r *random) Initial() []Action { return r.fill() }

func (r *random) TrialCreated(string) []Action { return nil }

func (r *random) TrialReported(string, float64, float64) []Action { return nil }

func (r *random) TrialFinished(id string, _ float64, _ Outcome) []Action { return r.end(id) }

func (r *random) TrialFailed(id string) []Action { return r.end(id) }

func (r *random) end(id string) []Action {
	i := slices.Index(r.st.Outstanding, id)
	if i < 0 {
		return nil
	}
	r.st.Outstanding = slices.Delete(r.st.Outstanding, i, i+1)
	r.st.Ended++
	return r.fill()
}

// fill creates trials while slots and budget remain, and shuts down when
// the budget is spent and every trial has ended.
func (r *random) fill() []Action {
	if r.st.Shutdown {
		return nil
	}
	var acts []Action
	for r.st.Created < r.cfg.MaxTrials && len(r.st.Outstanding) < r.cfg.MaxConcurrent {
		r.st.Created++
		id := trialID(r.st.Created)
		r.st.Outstanding = append(r.st.Outstanding, id)
		acts = append(acts, Create{ID: id, Params: r.cfg.Space.Sample(r.rng)})
	}
	if r.st.Created == r.cfg.MaxTrials && len(r.st.Outstanding) == 0 {
		r.st.Shutdown = true
		acts = append(acts, Shutdown{})
	}
	return acts
}

func (r *random) Progress() float64 { return float64(r.st.Ended) / float64(r.cfg.MaxTrials) }

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
	if st.Created > r.cfg.MaxTrials || len(st.Outstanding) > st.Created || st.Ended+len(st.Outstanding) != st.Created {
		return fmt.Errorf("restore random searcher: inconsistent counts (created %d, outstanding %d, ended %d, max_trials %d)",
			st.Created, len(st.Outstanding), st.Ended, r.cfg.MaxTrials)
	}
	st.RNG = nil
	r.st = st
	return nil
}
