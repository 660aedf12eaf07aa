package hpo

import (
	"fmt"
	"slices"
	"strings"
)

// Algorithm names, one per searcher.
const (
	AlgorithmRandom = "random"
)

// Settings are the per-algorithm sections of a search spec
// (search.<algorithm>: {...}); only the chosen algorithm's may be set, and
// a section left out takes that algorithm's documented defaults. A new
// algorithm with settings adds its section here.
type Settings struct {
	Grid        *GridSettings        `json:"grid,omitempty"`
	QuasiRandom *QuasiRandomSettings `json:"quasirandom,omitempty"`
	TPE         *TPESettings         `json:"tpe,omitempty"`
	ASHA        *ASHASettings        `json:"asha,omitempty"`
	Median      *MedianSettings      `json:"median,omitempty"`
	Hyperband   *HyperbandSettings   `json:"hyperband,omitempty"`
	PBT         *PBTSettings         `json:"pbt,omitempty"`
	Evolution   *EvolutionSettings   `json:"evolution,omitempty"`
	Local       *LocalSettings       `json:"local,omitempty"`
	MOTPE       *TPESettings         `json:"motpe,omitempty"` // TPE's settings, for motpe
	NSGA2       *NSGA2Settings       `json:"nsga2,omitempty"`
}

// algorithm is one registry entry. A new searcher is one file whose init
// registers it (and, if it has settings, one field in Settings).
type algorithm struct {
	name    string
	summary string
	// section returns the algorithm's settings section and whether it is
	// set (nil for an algorithm without settings).
	section func(Settings) (validator, bool)
	// creates: the searcher only creates trials (never stops one), so a
	// stopping searcher can sample with it.
	creates bool
	// sampler names the sampler a stopping searcher's settings choose
	// (its section may be set too); nil for the others.
	sampler func(Settings) string
	// vector: the searcher takes several objectives and constraints
	// (Config.MultiObjective); those that model results implement
	// VectorSearcher, the others ignore results.
	vector bool
	// conditional: the searcher proposes exactly the active parameters of
	// a conditional space and no configuration a forbidden clause rules
	// out (supportsConditional; a stopping searcher inherits its
	// sampler's).
	conditional bool
	new         func(cfg Config) (Searcher, error)
}

// validator is an algorithm's settings section.
type validator interface {
	// Validate checks the section; errors name the field ("gamma: ...").
	Validate() error
}

var registry []algorithm

// register adds a searcher; init functions call it.
func register(a algorithm) {
	if slices.ContainsFunc(registry, func(b algorithm) bool { return b.name == a.name }) {
		panic("hpo: algorithm " + a.name + " registered twice")
	}
	registry = append(registry, a)
	slices.SortFunc(registry, func(a, b algorithm) int { return strings.Compare(a.name, b.name) })
}

// Algorithms lists the registered algorithms' names, sorted.
func Algorithms() []string {
	names := make([]string, len(registry))
	for i, a := range registry {
		names[i] = a.name
	}
	return names
}

// CreatesOnly reports whether an algorithm only creates trials and never
// stops, pauses or continues one (so it searches black-box functions, and
// can sample for a stopping searcher).
func CreatesOnly(name string) bool {
	a, ok := lookup(name)
	return ok && a.creates
}

// Describe returns an algorithm's one-line summary ("" if unknown).
func Describe(name string) string {
	if a, ok := lookup(name); ok {
		return a.summary
	}
	return ""
}

func lookup(name string) (algorithm, bool) {
	i := slices.IndexFunc(registry, func(a algorithm) bool { return a.name == name })
	if i < 0 {
		return algorithm{}, false
	}
	return registry[i], true
}

// validateSettings checks that only the chosen algorithm's section is set
// and that it is valid; errors name the spec field (search.tpe.gamma).
func validateSettings(chosen string, s Settings) error {
	sampler := ""
	if a, ok := lookup(chosen); ok && a.sampler != nil {
		sampler = a.sampler(s)
		if sampler == "" {
			sampler = AlgorithmRandom
		}
	}
	for _, a := range registry {
		if a.section == nil {
			continue
		}
		sec, set := a.section(s)
		switch {
		case !set:
		case a.name != chosen && a.name != sampler:
			if sampler != "" {
				return fmt.Errorf("search.%s: settings of algorithm %s, but search.algorithm is %s (sampling with %s)", a.name, a.name, chosen, sampler)
			}
			return fmt.Errorf("search.%s: settings of algorithm %s, but search.algorithm is %s", a.name, a.name, chosen)
		default:
			if err := sec.Validate(); err != nil {
				return fmt.Errorf("search.%s.%w", a.name, err)
			}
		}
	}
	return nil
}

// TopBudget is a trial's full budget where the chosen algorithm's
// settings give one (ASHA's, Hyperband's or PBT's max_budget), else 0: a
// trial that ends below it stopped at a rung.
func (s Settings) TopBudget() float64 {
	switch {
	case s.ASHA != nil && s.ASHA.MaxBudget > 0:
		return s.ASHA.MaxBudget
	case s.Hyperband != nil && s.Hyperband.MaxBudget > 0:
		return s.Hyperband.MaxBudget
	case s.PBT != nil && s.PBT.MaxBudget > 0:
		return s.PBT.MaxBudget
	}
	return 0
}
