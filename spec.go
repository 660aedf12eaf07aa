package gleaner

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// CampaignSpec describes one study. Zero fields take the defaults that
// WithDefaults documents.
type CampaignSpec struct {
	// Name identifies the campaign; its workflow id is "gleaner-campaign-<name>".
	// 1 to MaxNameLength letters, digits, '.', '_' and '-' (ValidateName).
	Name string `json:"name"`
	// Kind is "hpo" (default) or "nas": a NAS campaign's space has an
	// architecture parameter (docs/nas.md), an HPO campaign's none.
	Kind string `json:"kind,omitempty"`
	// Pool is the pool of idle nodes the trials run on (default "default"),
	// a name as Name is.
	Pool string `json:"pool,omitempty"`
	// Command is the trainer's argv, run without a shell.
	Command []string `json:"command"`
	// WorkDir is the trainer's working directory (default: the worker's).
	WorkDir string `json:"workdir,omitempty"`
	// Env adds variables to the trainer's environment.
	Env map[string]string `json:"env,omitempty"`
	// Space is the search space. A parameter with when is conditional
	// (docs/campaign-spec.md).
	Space hpo.Space `json:"space"`
	// SpaceFile is a ConfigSpace JSON file (hpo.ReadConfigSpace) to read
	// the space and its forbidden clauses from, instead of space and
	// forbidden: a path relative to the spec's directory. LoadSpec reads
	// it, on the client, and leaves the spec holding the space it read
	// (SpaceFile then empty), so that workers never read the file.
	SpaceFile string `json:"space_file,omitempty"`
	// Forbidden are clauses ruling configurations of the space out
	// (hpo.Forbidden): no trial is given one.
	Forbidden []hpo.Forbidden `json:"forbidden,omitempty"`
	// Search selects the algorithm.
	Search SearchSpec `json:"search,omitempty"`
	// Objective is the metric to optimise.
	Objective ObjectiveSpec `json:"objective"`
	// Objectives, instead of Objective, are two or more metrics to
	// optimise at once: "best" is then the Pareto front
	// (spec_objectives.go, docs/campaign-spec.md).
	Objectives []ObjectiveSpec `json:"objectives,omitempty"`
	// Constraints bound reported metrics: a trial that breaks one, or
	// never reports it, is infeasible, and every feasible trial ranks
	// above it.
	Constraints []hpo.Constraint `json:"constraints,omitempty"`
	// ReferencePoint is where the Pareto front's hypervolume is measured
	// from: one value per objective, in its own units (default: derived
	// from the front, and said so).
	ReferencePoint []float64 `json:"reference_point,omitempty"`
	// Budget bounds the campaign.
	Budget Budget `json:"budget"`
	// Resources bounds every trial's node count.
	Resources Resources `json:"resources"`
	// Trial sets how trials are run and stopped.
	Trial TrialPolicy `json:"trial,omitempty"`
}

// SearchSpec selects the search algorithm and its settings.
type SearchSpec struct {
	// Algorithm is one of hpo.Algorithms() (default "random"; docs/search.md).
	Algorithm string `json:"algorithm,omitempty"`
	// Seed makes the search reproducible (default 1).
	Seed uint64 `json:"seed,omitempty"`
	// Points are configurations tried first, in order, before the
	// algorithm proposes any (as Optuna's enqueue_trial); each names every
	// parameter of the space with a value inside it.
	Points []hpo.Params `json:"points,omitempty"`
	// WarmStart names earlier campaigns over the same space whose finished
	// trials the searcher learns from before its first trial (a searcher
	// that models results, tpe; docs/search.md).
	WarmStart []string `json:"warm_start,omitempty"`
	// BudgetUnit is what trial budgets count, and what early-stopping
	// settings (min_budget, interval, ...) are in: "samples" (default),
	// "steps" or "epochs", as the trainer reports them (docs/protocol.md).
	BudgetUnit string `json:"budget_unit,omitempty"`
	// Settings are the chosen algorithm's own section, search.<algorithm>
	// (e.g. search.tpe.n_startup_trials); omitted, its defaults.
	hpo.Settings
}

// Budget units (SearchSpec.BudgetUnit): the report counters a trial's
// budget is measured in.
const (
	BudgetSamples = "samples"
	BudgetSteps   = "steps"
	BudgetEpochs  = "epochs"
)

// BudgetUnits lists the budget units.
var BudgetUnits = []string{BudgetSamples, BudgetSteps, BudgetEpochs}

// ObjectiveSpec names the metric the trials report and its direction.
type ObjectiveSpec struct {
	Metric string `json:"metric"`
	// Mode is "max" or "min" (default "min").
	Mode string `json:"mode,omitempty"`
}

// Budget bounds how many trials run.
type Budget struct {
	// MaxTrials is how many trials the campaign creates in all.
	MaxTrials int `json:"max_trials"`
	// MaxConcurrent is how many trials may be in flight at once (default 8).
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// MaxFailures ends the campaign after this many failed trials (default
	// MaxTrials: never).
	MaxFailures int `json:"max_failures,omitempty"`
}

// Resources bounds a trial's node count: it runs on 0 (paused) or any
// count in [MinNodes, MaxNodes].
type Resources struct {
	MinNodes int `json:"min_nodes,omitempty"` // default 1
	MaxNodes int `json:"max_nodes,omitempty"` // default MinNodes
	// NodeType restricts trials to one node type (default: any).
	NodeType string `json:"node_type,omitempty"`
	// Weight is the campaign's share of a contested pool against the
	// other campaigns in it: the allocator maximises Σ weight × speedup,
	// so a node goes to a trial of a weight-2 campaign unless it would
	// add less than half as much speedup anywhere else (default 1;
	// docs/campaign-spec.md).
	Weight float64 `json:"weight,omitempty"`
	// Model and Batch name what the trials train and their per-node batch
	// (optional): the JPA then borrows the shape and the node-type speeds
	// of that model's profiled curves (a worker's --prior-curves, named
	// model__cluster.csv, and --gpu-ratios job types) before a trial is
	// measured (docs/jpa.md).
	Model string `json:"model,omitempty"`
	Batch int    `json:"batch,omitempty"`
}

// TrialPolicy sets how trials are run and stopped.
type TrialPolicy struct {
	// GracePeriod is how long a trainer has to checkpoint and exit after
	// SIGTERM before SIGKILL (default 30s).
	GracePeriod Duration `json:"grace_period,omitempty"`
	// MaxRestarts bounds relaunches after a trainer fails (non-zero exit);
	// preemptions and resizes do not count (default 3).
	MaxRestarts int `json:"max_restarts,omitempty"`
	// RescaleUpCost and RescaleDownCost are the allocator's prior for the
	// seconds of progress lost per rescale until the JPA has measured them
	// (defaults 20s and 10s).
	RescaleUpCost   Duration `json:"rescale_up_cost,omitempty"`
	RescaleDownCost Duration `json:"rescale_down_cost,omitempty"`
	// Inline runs each trial as an activity of its campaign's workflow
	// instead of a workflow of its own: about a tenth of the Temporal work
	// per trial, for many short trials (docs/workflows-campaign.md,
	// "Inline trials"). The pool sees the campaign as one elastic job and
	// the campaign packs its trials onto the nodes it is given; a trial's
	// size is fixed (min_nodes = max_nodes) and on one host. A trial is
	// then no workflow in the UI: `gleaner trials` lists it, and pause,
	// resume and stop act on the whole campaign.
	Inline bool `json:"inline,omitempty"`
	// Mode picks how trials run when Inline is not set: "auto" (the
	// default) runs at least AutoInlineTrials trials of a fixed size
	// inline and others as a workflow each, "inline" or "workflow" say
	// which (PickTrialMode). Submission decides and sets Inline.
	Mode string `json:"mode,omitempty"`
}

// Duration is a time.Duration that reads and writes as "30s" in JSON and
// YAML.
type Duration time.Duration

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like 30s or 5m", b)
	}
	*d = Duration(v)
	return nil
}

// Std returns the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// WithDefaults returns the spec with every zero field set to its default.
func (s CampaignSpec) WithDefaults() CampaignSpec {
	if s.Kind == "" {
		s.Kind = "hpo"
	}
	if s.Pool == "" {
		s.Pool = "default"
	}
	if s.Search.Algorithm == "" {
		s.Search.Algorithm = "random"
	}
	if s.Search.BudgetUnit == "" {
		s.Search.BudgetUnit = BudgetSamples
	}
	if s.Search.Seed == 0 {
		s.Search.Seed = 1
	}
	s.objectiveDefaults()
	if s.Budget.MaxConcurrent == 0 {
		s.Budget.MaxConcurrent = 8
	}
	if s.Budget.MaxFailures == 0 {
		s.Budget.MaxFailures = s.Budget.MaxTrials
	}
	if s.Resources.MinNodes == 0 {
		s.Resources.MinNodes = 1
	}
	if s.Resources.MaxNodes == 0 {
		s.Resources.MaxNodes = s.Resources.MinNodes
	}
	if s.Trial.GracePeriod == 0 {
		s.Trial.GracePeriod = Duration(30 * time.Second)
	}
	if s.Trial.MaxRestarts == 0 {
		s.Trial.MaxRestarts = 3
	}
	if s.Trial.RescaleUpCost == 0 {
		s.Trial.RescaleUpCost = Duration(20 * time.Second)
	}
	if s.Trial.RescaleDownCost == 0 {
		s.Trial.RescaleDownCost = Duration(10 * time.Second)
	}
	return s
}

// Validate checks a spec after WithDefaults; errors name the field. The
// name and the pool must be valid names (ValidateName).
func (s CampaignSpec) Validate() error {
	if err := ValidateName("name", s.Name); err != nil {
		return err
	}
	if err := ValidateName("pool", s.Pool); err != nil {
		return err
	}
	switch {
	case s.Kind != "hpo" && s.Kind != "nas":
		return fmt.Errorf("kind: %q is not one of hpo, nas", s.Kind)
	case len(s.Command) == 0 || s.Command[0] == "":
		return fmt.Errorf("command: empty")
	}
	if err := s.validateObjectives(); err != nil {
		return err
	}
	switch {
	case s.Budget.MaxTrials < 1:
		return fmt.Errorf("budget.max_trials: %d must be at least 1", s.Budget.MaxTrials)
	case s.Budget.MaxConcurrent < 1:
		return fmt.Errorf("budget.max_concurrent: %d must be at least 1", s.Budget.MaxConcurrent)
	case s.Budget.MaxFailures < 1:
		return fmt.Errorf("budget.max_failures: %d must be at least 1", s.Budget.MaxFailures)
	case s.Resources.MinNodes < 1:
		return fmt.Errorf("resources.min_nodes: %d must be at least 1", s.Resources.MinNodes)
	case s.Resources.MaxNodes < s.Resources.MinNodes:
		return fmt.Errorf("resources: min_nodes %d > max_nodes %d", s.Resources.MinNodes, s.Resources.MaxNodes)
	case s.Resources.Batch < 0:
		return fmt.Errorf("resources.batch: %d must not be negative (0: unknown)", s.Resources.Batch)
	case s.Resources.Weight < 0 || math.IsNaN(s.Resources.Weight) || math.IsInf(s.Resources.Weight, 0):
		return fmt.Errorf("resources.weight: %v must be a finite number ≥ 0 (0: the default, 1)", s.Resources.Weight)
	case s.Trial.GracePeriod < 0:
		return fmt.Errorf("trial.grace_period: %v must not be negative", s.Trial.GracePeriod.Std())
	case s.Trial.MaxRestarts < 0:
		return fmt.Errorf("trial.max_restarts: %d must not be negative", s.Trial.MaxRestarts)
	case s.Trial.Mode != "" && !slices.Contains(TrialModes, s.Trial.Mode):
		return fmt.Errorf("trial.mode: %q is not one of %s", s.Trial.Mode, strings.Join(TrialModes, ", "))
	case s.Trial.Inline && s.Trial.Mode == TrialModeWorkflow:
		return fmt.Errorf("trial.mode: workflow, but trial.inline: true: say one")
	case (s.Trial.Inline || s.Trial.Mode == TrialModeInline) && s.Resources.MaxNodes != s.Resources.MinNodes:
		return fmt.Errorf("trial.inline: inline trials have a fixed size, but resources.min_nodes %d ≠ max_nodes %d",
			s.Resources.MinNodes, s.Resources.MaxNodes)
	}
	if err := s.validateSpace(); err != nil {
		return err
	}
	arch := slices.ContainsFunc(s.Space, func(p hpo.Param) bool { return p.Type == hpo.ParamArch })
	switch {
	case s.Kind == "nas" && !arch:
		return fmt.Errorf("kind: nas searches architectures, but space has no parameter of type architecture (docs/nas.md)")
	case s.Kind == "hpo" && arch:
		return fmt.Errorf("kind: hpo, but space has a parameter of type architecture: say kind: nas (docs/nas.md)")
	}
	for i, name := range s.Search.WarmStart {
		if err := ValidateName(fmt.Sprintf("search.warm_start[%d]", i), name); err != nil {
			return err
		}
		if name == s.Name {
			return fmt.Errorf("search.warm_start[%d]: %q is this campaign", i, name)
		}
	}
	if !slices.Contains(BudgetUnits, s.Search.BudgetUnit) {
		return fmt.Errorf("search.budget_unit: %q is not one of %s", s.Search.BudgetUnit, strings.Join(BudgetUnits, ", "))
	}
	if !slices.Contains(hpo.Algorithms(), s.Search.Algorithm) {
		return fmt.Errorf("search.algorithm: %q is not one of %s", s.Search.Algorithm, strings.Join(hpo.Algorithms(), ", "))
	}
	if err := s.validateSearchObjectives(); err != nil {
		return err
	}
	// Building the searcher checks what only its constructor can (a grid
	// cannot enumerate an architecture parameter), so a spec that
	// validates also starts.
	_, err := hpo.NewSearcher(s.SearchConfig())
	return err
}

// SearchConfig is the searcher's configuration the spec describes.
func (s CampaignSpec) SearchConfig() hpo.Config {
	return hpo.Config{
		Algorithm: s.Search.Algorithm, Space: s.Space, Forbidden: s.Forbidden, Seed: s.Search.Seed, Settings: s.Search.Settings, Points: s.Search.Points,
		MaxTrials: s.Budget.MaxTrials, MaxConcurrent: s.Budget.MaxConcurrent, Mode: s.PrimaryObjective().Mode,
		Objectives: s.searchObjectives(), Constraints: s.Constraints,
	}
}
