package workflows

import (
	"maps"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// IdleEstimates are a batch-scheduler source's estimates of when each of
// its nodes is taken back (the whole set: a node missing has none).
type IdleEstimates struct {
	IdleUntil map[string]time.Time `json:"idle_until"`
}

// idleEstimates replaces the estimates; a change is an event.
func (p *pool) idleEstimates(now time.Time, e IdleEstimates) {
	if maps.EqualFunc(e.IdleUntil, p.st.IdleUntil, time.Time.Equal) {
		return
	}
	p.st.IdleUntil = nil
	if len(e.IdleUntil) > 0 {
		p.st.IdleUntil = maps.Clone(e.IdleUntil)
	}
	p.setNodes(now, gleaner.PoolTriggerIdleEstimates)
}
