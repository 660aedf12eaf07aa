package workflows

import (
	"maps"
	"time"
)

// PoolDemand answers QueryDemand: how many more nodes a pool's trials
// could use. A batch-scheduler source (Slurm pilots) reads it to decide
// how many pilot jobs to keep waiting.
type PoolDemand struct {
	// Trials are the registered trials.
	Trials int `json:"trials"`
	// Nodes are the pool's nodes now.
	Nodes int `json:"nodes"`
	// Wanted is the sum of the trials' max_nodes less Nodes (≥ 0).
	Wanted int `json:"wanted"`
	// MaxGrace is the longest grace period among the trials.
	MaxGrace time.Duration `json:"max_grace"`
}

func (st PoolState) demand() PoolDemand {
	d := PoolDemand{Trials: len(st.Trials), Nodes: len(st.Nodes)}
	want := 0
	for _, t := range st.Trials {
		want += max(t.Registration.MaxNodes, t.Registration.MinNodes, 1)
		d.MaxGrace = max(d.MaxGrace, t.Registration.GracePeriod)
	}
	d.Wanted = max(want-len(st.Nodes), 0)
	return d
}

// IdleEstimates are a batch-scheduler source's estimates of when each of
// its nodes is taken back (the whole set: a node missing has none).
type IdleEstimates struct {
	IdleUntil map[string]time.Time `json:"idle_until"`
}

// idleEstimates replaces the estimates; a change is an event.
func (p *pool) idleEstimates(e IdleEstimates) {
	if maps.EqualFunc(e.IdleUntil, p.st.IdleUntil, time.Time.Equal) {
		return
	}
	p.st.IdleUntil = nil
	if len(e.IdleUntil) > 0 {
		p.st.IdleUntil = maps.Clone(e.IdleUntil)
	}
	p.setNodes()
}
