package hpo

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Searcher is a search method: a pure, event-driven state machine. The
// caller (the campaign workflow) tells it what happened to the trials it
// asked for and carries out the actions it returns, in order. A searcher
// does no I/O, reads no clock and draws only from its own seeded RNG, so
// the same events always give the same actions.
//
// Events for unknown or already ended trials are ignored: the caller may
// see a trial's end twice (a report and its child workflow closing) and
// need not deduplicate.
type Searcher interface {
	// Initial returns the first actions, before any trial exists.
	Initial() []Action
	// TrialCreated: the trial asked for by Create{ID: id} (or continued by
	// Continue{TrialID: id}) has started.
	TrialCreated(id string) []Action
	// TrialReported: a running trial reported its objective metric after
	// training progress budget units (search.budget_unit: samples, steps
	// or epochs, cumulative since the trial first started; a trial created
	// from another's checkpoint counts on from that checkpoint's).
	TrialReported(id string, progress, metric float64) []Action
	// TrialFinished: the trial ended by itself, reached its budget (it is
	// then paused at its checkpoint, holds no nodes, and may be continued),
	// or was stopped; metric is its last objective value, NaN when it
	// reported none.
	TrialFinished(id string, metric float64, outcome Outcome) []Action
	// TrialFailed: the trial failed (its trainer kept failing, or it could
	// not be started).
	TrialFailed(id string) []Action
	// Progress is the fraction of the search done, in [0, 1].
	Progress() float64
	// Snapshot returns the searcher's state (never its config) as
	// type-tagged JSON: {"type":"random","state":{...}}.
	Snapshot() ([]byte, error)
	// Restore replaces the state with a Snapshot of a searcher of the same
	// type and config.
	Restore(snapshot []byte) error
}

// Outcome is how a trial that did not fail ended.
type Outcome string

const (
	OutcomeCompleted Outcome = "completed" // the trainer finished by itself
	OutcomeStopped   Outcome = "stopped"   // stopped by a person, a searcher or the campaign
)

// Action is what a searcher asks for: Create, Continue, Stop or Shutdown.
// The set is closed (the marker method is unexported), so a type switch
// over the four is exhaustive.
type Action interface{ action() }

// Create asks for a new trial with these parameters. ID is unique within
// the search.
type Create struct {
	ID     string `json:"id"`
	Params Params `json:"params"`
	// Budget, when > 0, is the progress (in search.budget_unit) at which
	// the trial pauses: its trainer checkpoints and exits there, and the
	// trial ends with OutcomeCompleted, holding no nodes, until a Continue
	// names it. 0: the trainer runs to its own end.
	Budget float64 `json:"budget,omitempty"`
	// From, when set, names an earlier trial that has reached a budget:
	// the new trial starts from that trial's checkpoint at FromProgress,
	// the budget end it reached there (its weights and counters), with
	// these parameters (PBT's exploit and explore). Budget then counts on
	// from FromProgress. From may have trained on since; its checkpoint
	// at FromProgress is still the one copied, never a newer one.
	From         string  `json:"from,omitempty"`
	FromProgress float64 `json:"from_progress,omitempty"`
	// Stage labels the trial for people (a rung, a generation): the
	// leaderboard and the UI show it.
	Stage string `json:"stage,omitempty"`
}

// Continue asks to run a trial that has reached its budget (ended with
// OutcomeCompleted after a Create or Continue with a Budget) on to a
// larger Budget, resuming from its checkpoint: ASHA's promotion. Its
// parameters stay; it reports TrialCreated again when it starts. A
// Continue for a trial that cannot be continued (unknown, running, failed,
// or whose checkpoint is gone) comes back as TrialFailed.
type Continue struct {
	TrialID string  `json:"trial_id"`
	Budget  float64 `json:"budget"`
	Stage   string  `json:"stage,omitempty"`
}

// Stop asks to stop a running trial gracefully (it checkpoints and reports
// TrialFinished with OutcomeStopped).
type Stop struct {
	TrialID string `json:"trial_id"`
}

// Shutdown says the search is over: create nothing more. Reason, when
// set, tells a person why (the campaign shows it).
type Shutdown struct {
	Reason string `json:"reason,omitempty"`
}

func (Create) action()   {}
func (Continue) action() {}
func (Stop) action()     {}
func (Shutdown) action() {}

func (a Create) String() string {
	s := fmt.Sprintf("create %s %v", a.ID, paramsString(a.Params))
	if a.From != "" {
		s += fmt.Sprintf(" from %s at %g", a.From, a.FromProgress)
	}
	if a.Budget > 0 {
		s += fmt.Sprintf(" budget %g", a.Budget)
	}
	return s
}
func (a Continue) String() string { return fmt.Sprintf("continue %s budget %g", a.TrialID, a.Budget) }
func (a Stop) String() string     { return "stop " + a.TrialID }
func (a Shutdown) String() string {
	if a.Reason != "" {
		return "shutdown: " + a.Reason
	}
	return "shutdown"
}

func paramsString(p Params) string {
	s := "{"
	for i, n := range p.Names() {
		if i > 0 {
			s += " "
		}
		s += n + "=" + DescribeValue(p[n])
	}
	return s + "}"
}

// Config configures a searcher. It is not part of the snapshot: the caller
// keeps it (the campaign spec) and passes it again to RestoreSearcher.
type Config struct {
	// Algorithm is one of the Algorithm constants.
	Algorithm string `json:"algorithm"`
	Space     Space  `json:"space"`
	// Seed seeds the searcher's RNG.
	Seed uint64 `json:"seed"`
	// MaxTrials is how many trials the search creates in all.
	MaxTrials int `json:"max_trials"`
	// MaxConcurrent bounds the trials created but not yet ended.
	MaxConcurrent int `json:"max_concurrent"`
	// Mode is "min" or "max": the direction of the objective metric (of
	// the first objective when there are several).
	Mode string `json:"mode"`
	// Objectives, when set, are the search's objectives in order (the
	// first one's mode is Mode). With more than one, or with Constraints,
	// only the algorithms VectorAlgorithms lists may search, and "best"
	// is the Pareto front (Front).
	Objectives []Objective `json:"objectives,omitempty"`
	// Constraints bound reported metrics: a feasible trial dominates every
	// infeasible one; among infeasible ones the least total violation wins.
	Constraints []Constraint `json:"constraints,omitempty"`
	// Settings holds the algorithm's own settings section, if any.
	Settings Settings `json:"settings"`
	// Forbidden are clauses ruling configurations of the space out
	// (ConfigSpace's forbidden clauses): no searcher proposes one, and no
	// point may be one. Like a conditional space they need an algorithm
	// that supports them (supportsConditional).
	Forbidden []Forbidden `json:"forbidden,omitempty"`
	// Points are tried first, in order, before the algorithm proposes
	// any (Optuna's enqueue_trial); each must lie in the space.
	Points []Params `json:"points,omitempty"`
	// Revision is the revision of the searchers' decision rules the
	// search was created under (Revision's doc): 0 is the rules of
	// before revisions were recorded.
	Revision int `json:"revision,omitempty"`
	// History are results of earlier campaigns over the same space (warm
	// start): a searcher that models results (tpe) learns from them as
	// from its own finished trials; the others ignore them. Entries
	// outside the space are ignored.
	History []Observation `json:"history,omitempty"`
}

// Observation is one finished trial's result.
type Observation struct {
	Params Params  `json:"params"`
	Metric float64 `json:"metric"`
	// Stopped: the trial was stopped before its budget (its metric is an
	// intermediate one).
	Stopped bool `json:"stopped,omitempty"`
}

// Validate checks the config; errors name the field.
func (c Config) Validate() error {
	if c.Revision < 0 || c.Revision > Revision {
		return fmt.Errorf("revision: %d; this build's searchers know revisions 0 to %d (was the search created by a newer Gleaner?)", c.Revision, Revision)
	}
	if _, ok := lookup(c.Algorithm); !ok {
		return fmt.Errorf("algorithm: %q is not one of %s", c.Algorithm, strings.Join(Algorithms(), ", "))
	}
	if err := validateSettings(c.Algorithm, c.Settings); err != nil {
		return err
	}
	if err := c.Space.Validate(); err != nil {
		return err
	}
	if err := c.validateConditional(); err != nil {
		return err
	}
	for i, p := range c.Points {
		if err := c.Space.Contains(p); err != nil {
			return fmt.Errorf("points[%d]: %w", i, err)
		}
	}
	switch {
	case c.MaxTrials < 1:
		return fmt.Errorf("max_trials: %d must be at least 1", c.MaxTrials)
	case c.MaxConcurrent < 1:
		return fmt.Errorf("max_concurrent: %d must be at least 1", c.MaxConcurrent)
	case c.Mode != "min" && c.Mode != "max":
		return fmt.Errorf("mode: %q is not one of min, max", c.Mode)
	}
	return c.validateObjectives()
}

// NewSearcher returns a fresh searcher for cfg.
func NewSearcher(cfg Config) (Searcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a, _ := lookup(cfg.Algorithm)
	return a.new(cfg)
}

// RestoreSearcher returns the searcher for cfg in the state of snapshot.
// The snapshot's type must be cfg.Algorithm.
func RestoreSearcher(cfg Config, snapshot []byte) (Searcher, error) {
	s, err := NewSearcher(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Restore(snapshot); err != nil {
		return nil, err
	}
	return s, nil
}

// envelope is the type-tagged form of every snapshot.
type envelope struct {
	Type  string          `json:"type"`
	State json.RawMessage `json:"state"`
}

func marshalSnapshot(typ string, state any) ([]byte, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s searcher: %w", typ, err)
	}
	return json.Marshal(envelope{Type: typ, State: b})
}

func unmarshalSnapshot(typ string, snapshot []byte, state any) error {
	var env envelope
	if err := json.Unmarshal(snapshot, &env); err != nil {
		return fmt.Errorf("restore %s searcher: %w", typ, err)
	}
	if env.Type != typ {
		return fmt.Errorf("restore %s searcher: snapshot is of a %q searcher", typ, env.Type)
	}
	if err := json.Unmarshal(env.State, state); err != nil {
		return fmt.Errorf("restore %s searcher: state: %w", typ, err)
	}
	return nil
}
