package hpo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// stopper is a searcher that stops trials early: its sampler (a searcher
// that only creates: random, quasirandom, grid or tpe) chooses every
// trial, and its rule, fed every report, stops the trials it judges
// hopeless. The sampler sees each trial's end as usual, a stopped trial's
// with OutcomeStopped and its last metric; from revisionRungRank, under
// ASHA's or Hyperband's rule, a TPE sampler is told a stopped trial's
// rungKey instead, so that it ranks it by the rung it reached first; from
// revisionOneRung it is fed each result at each rung passed (rungFeed)
// and fitted on one rung's results.
type stopper struct {
	cfg     Config
	name    string
	sampler Searcher
	rule    rule
	// stopped are outstanding trials the rule stopped: their later reports
	// are ignored.
	stopped []string
	// rungRank: a stopped trial's metric reaches the sampler as its
	// rungKey (revisionRungRank), for a rule with rungs and a sampler
	// that learns from metrics.
	rungRank bool
	// feed: the sampler is fed by rung (revisionOneRung), each result at
	// each rung a trial reaches; nil otherwise.
	feed *rungFeed
}

// rule is an early-stopping rule. Metrics reach it oriented so that lower
// is better.
type rule interface {
	// observe takes a report and says whether to stop the trial.
	observe(id string, samples, loss float64) bool
	// forget drops an ended trial's per-trial state.
	forget(id string)
}

// rungRule is a rule with rungs (ASHA's, Hyperband's).
type rungRule interface {
	// level is the level of the highest rung trial id has reached: 0
	// before the first, 1 at the lowest budget any trial is judged at,
	// one more per factor η.
	level(id string) int
}

// stopperState is the snapshot: the sampler's own, the rule's, and the
// stopped trials.
type stopperState struct {
	Sampler json.RawMessage `json:"sampler"`
	Rule    json.RawMessage `json:"rule"`
	Stopped []string        `json:"stopped,omitempty"`
}

// newStopper makes the sampler named sampler for cfg (its own settings
// section, if any, applies).
func newStopper(cfg Config, name, sampler string, r rule) (*stopper, error) {
	if sampler == "" {
		sampler = AlgorithmRandom
	}
	a, ok := lookup(sampler)
	if !ok || !a.creates {
		return nil, fmt.Errorf("search.%s.sampler: %q is not one of %s", name, sampler, samplerNames())
	}
	inner := cfg
	inner.Algorithm = sampler
	s, err := a.new(inner)
	if err != nil {
		return nil, err
	}
	st := &stopper{cfg: cfg, name: name, sampler: s, rule: r}
	_, rungs := r.(rungRule)
	_, learns := s.(rungLearner)
	st.rungRank = rungs && learns && cfg.Revision >= revisionRungRank
	if t, ok := s.(*tpe); ok && rungs && cfg.Revision >= revisionOneRung {
		st.rungRank, st.feed = false, newRungFeed(t)
		st.sampler = st.feed
	}
	return st, nil
}

// samplerNames lists the algorithms a stopping searcher can sample with.
func samplerNames() string {
	var names []string
	for _, a := range registry {
		if a.creates {
			names = append(names, a.name)
		}
	}
	return fmt.Sprint(names)
}

// loss orients a metric so that lower is better.
func (s *stopper) loss(metric float64) float64 {
	if s.cfg.Mode == "max" {
		return -metric
	}
	return metric
}

func (s *stopper) Initial() []Action { return s.sampler.Initial() }

func (s *stopper) TrialCreated(id string) []Action { return s.sampler.TrialCreated(id) }

func (s *stopper) TrialReported(id string, samples, metric float64) []Action {
	acts := s.sampler.TrialReported(id, samples, metric)
	if slices.Contains(s.stopped, id) || math.IsNaN(metric) || math.IsInf(metric, 0) {
		return acts
	}
	var was int
	if s.feed != nil {
		was = s.rule.(rungRule).level(id)
	}
	stop := s.rule.observe(id, samples, s.loss(metric))
	if s.feed != nil {
		// Every rung passed at this report, the one it was stopped at too.
		for lv := was + 1; lv <= s.rule.(rungRule).level(id); lv++ {
			s.feed.result(id, lv, s.loss(metric))
		}
	}
	if stop {
		s.stopped = append(s.stopped, id)
		acts = append(acts, Stop{TrialID: id})
	}
	return acts
}

func (s *stopper) TrialFinished(id string, metric float64, outcome Outcome) []Action {
	if s.rungRank && outcome == OutcomeStopped && !math.IsNaN(metric) {
		// Ranked as Optuna ranks a pruned trial: by the rung it reached,
		// then by its metric there (the last, where the rule stopped it).
		metric = toldKey(s.cfg.Mode, s.rule.(rungRule).level(id), clamp(s.loss(metric), -math.MaxFloat64, math.MaxFloat64))
	}
	if s.feed != nil && outcome == OutcomeCompleted && !math.IsNaN(metric) {
		s.feed.result(id, levelComplete, s.loss(metric))
	}
	s.ended(id)
	return s.sampler.TrialFinished(id, metric, outcome)
}

func (s *stopper) TrialFailed(id string) []Action {
	s.ended(id)
	return s.sampler.TrialFailed(id)
}

func (s *stopper) ended(id string) {
	s.rule.forget(id)
	if i := slices.Index(s.stopped, id); i >= 0 {
		s.stopped = slices.Delete(s.stopped, i, i+1)
	}
}

func (s *stopper) Progress() float64 { return s.sampler.Progress() }

func (s *stopper) Snapshot() ([]byte, error) {
	inner, err := s.sampler.Snapshot()
	if err != nil {
		return nil, err
	}
	rule, err := json.Marshal(s.rule)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s searcher: rule: %w", s.name, err)
	}
	return marshalSnapshot(s.name, stopperState{Sampler: inner, Rule: rule, Stopped: s.stopped})
}

func (s *stopper) Restore(snapshot []byte) error {
	var st stopperState
	if err := unmarshalSnapshot(s.name, snapshot, &st); err != nil {
		return err
	}
	if err := s.sampler.Restore(st.Sampler); err != nil {
		return fmt.Errorf("restore %s searcher: %w", s.name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(st.Rule))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s.rule); err != nil {
		return fmt.Errorf("restore %s searcher: rule: %w", s.name, err)
	}
	if v, ok := s.rule.(interface{ check() error }); ok {
		if err := v.check(); err != nil {
			return fmt.Errorf("restore %s searcher: rule: %w", s.name, err)
		}
	}
	s.stopped = st.Stopped
	return nil
}
