package hpo

import (
	"fmt"
	"slices"
)

// window is the in-flight bookkeeping every searcher shares: it keeps up
// to MaxConcurrent trials outstanding (created, not yet ended) until
// MaxTrials have been created, then shuts the search down once all have
// ended. A searcher embeds it in its snapshot state and supplies the
// parameters of each trial it opens.
type window struct {
	// Created counts trials asked for; the next ID is trialID(Created+1).
	Created int `json:"created"`
	// Outstanding are the trials created and not yet ended, in creation order.
	Outstanding []string `json:"outstanding,omitempty"`
	// Ended counts trials finished or failed.
	Ended int `json:"ended"`
	// Shutdown is set once Shutdown has been returned.
	Shutdown bool `json:"shutdown,omitempty"`
}

func trialID(n int) string { return fmt.Sprintf("t%05d", n) }

// isOutstanding reports whether id was created and has not ended.
func (w *window) isOutstanding(id string) bool { return slices.Contains(w.Outstanding, id) }

// end closes trial id; false for a trial unknown or already ended (the
// caller may report an end twice).
func (w *window) end(id string) bool {
	i := slices.Index(w.Outstanding, id)
	if i < 0 {
		return false
	}
	w.Outstanding = slices.Delete(w.Outstanding, i, i+1)
	w.Ended++
	return true
}

// reopen puts an ended trial back in flight (a Continue); false if it is
// still outstanding.
func (w *window) reopen(id string) bool {
	if w.isOutstanding(id) {
		return false
	}
	w.Outstanding = append(w.Outstanding, id)
	w.Ended--
	return true
}

// fill opens trials while slots and budget remain, and shuts down when
// the budget is spent and every trial has ended. The first trials are
// cfg.Points, in order (took, if not nil, hears of each); then next gives
// the parameters of the searcher's own n-th trial (n from 0, in ID order,
// so a seeded searcher stays deterministic). next may return ok=false to
// open no more (a grid exhausted): the search then ends once the
// outstanding trials do.
func (w *window) fill(cfg Config, next func(n int) (Params, bool), took func(Params)) []Action {
	if w.Shutdown {
		return nil
	}
	var acts []Action
	exhausted := false
	for w.Created < cfg.MaxTrials && len(w.Outstanding) < cfg.MaxConcurrent {
		id := trialID(w.Created + 1)
		var p Params
		if w.Created < len(cfg.Points) {
			p = cfg.Points[w.Created]
			if took != nil {
				took(p)
			}
		} else {
			var ok bool
			if p, ok = next(w.Created - len(cfg.Points)); !ok {
				exhausted = true
				break
			}
		}
		w.Created++
		w.Outstanding = append(w.Outstanding, id)
		acts = append(acts, Create{ID: id, Params: p})
	}
	if (w.Created == cfg.MaxTrials || exhausted) && len(w.Outstanding) == 0 {
		w.Shutdown = true
		acts = append(acts, Shutdown{})
	}
	return acts
}

// progress is the fraction of the budget's trials that ended.
func (w *window) progress(cfg Config) float64 {
	if w.Shutdown {
		return 1
	}
	return float64(w.Ended) / float64(cfg.MaxTrials)
}

// check validates a restored window against cfg.
func (w *window) check(cfg Config) error {
	if w.Created > cfg.MaxTrials || len(w.Outstanding) > w.Created || w.Ended+len(w.Outstanding) != w.Created {
		return fmt.Errorf("inconsistent counts (created %d, outstanding %d, ended %d, max_trials %d)",
			w.Created, len(w.Outstanding), w.Ended, cfg.MaxTrials)
	}
	return nil
}
