package hpo

import (
	"cmp"
	"fmt"
	"math"
)

// AlgorithmTPE is the Tree-structured Parzen Estimator.
const AlgorithmTPE = "tpe"

// TPESettings are TPE's settings, the search.tpe section of a spec. All
// are optional: a zero number, a nil bool and a section left out take the
// defaults, which are Optuna 3.x TPESampler's except ConstantLiar, on
// here because Gleaner always runs trials in parallel.
type TPESettings struct {
	// NStartupTrials: sample at random until this many trials have
	// finished with a metric (default 10).
	NStartupTrials int `json:"n_startup_trials,omitempty"`
	// NEICandidates is how many candidates a proposal draws from l; it
	// proposes the one of highest l(x)/g(x) (default 24).
	NEICandidates int `json:"n_ei_candidates,omitempty"`
	// Gamma and GammaMax say how many of the n finished trials l models:
	// the best ⌈Gamma·n⌉, at most GammaMax (defaults 0.1 and 25, Optuna's
	// default_gamma).
	Gamma    float64 `json:"gamma,omitempty"`
	GammaMax int     `json:"gamma_max,omitempty"`
	// PriorWeight is the weight of the prior kernel; an observation weighs
	// at most 1 (default 1).
	PriorWeight float64 `json:"prior_weight,omitempty"`
	// ConsiderMagicClip keeps every kernel at least range/min(100, n+2)
	// wide (default true).
	ConsiderMagicClip *bool `json:"consider_magic_clip,omitempty"`
	// ConsiderEndpoints lets the range's ends widen the outermost kernels
	// (default false).
	ConsiderEndpoints bool `json:"consider_endpoints,omitempty"`
	// Multivariate models the parameters jointly instead of each on its
	// own (default false). On a conditional space it models the
	// unconditional parameters jointly and each conditional one on its
	// own, on the trials where it is active, as Optuna 3.1's
	// multivariate=True does (tpe_conditional.go).
	Multivariate bool `json:"multivariate,omitempty"`
	// Group, with Multivariate, models each group of parameters that
	// appear together in the same trials jointly, on the trials that have
	// them, as Optuna 3.1's TPESampler(multivariate=True, group=True)
	// does (default false; tpe_conditional.go). On a space without
	// conditions there is one group, and it decides as Multivariate alone.
	Group bool `json:"group,omitempty"`
	// ConstantLiar counts the trials outstanding as observations with the
	// worst metric, so that the trials proposed while others run spread
	// out instead of piling onto one point (default true).
	ConstantLiar *bool `json:"constant_liar,omitempty"`
	// MaxObservations bounds the finished trials TPE keeps, so that its
	// snapshot (the campaign's continue-as-new payload) stays small at any
	// campaign size (default 3,000): past it, the oldest observation that
	// is not among the best GammaMax leaves. l keeps every trial it would
	// model; g loses the oldest, which Optuna's age weights already count
	// least.
	MaxObservations int `json:"max_observations,omitempty"`
}

// Validate checks the settings; errors name the field.
func (s TPESettings) Validate() error {
	switch {
	case s.MaxObservations < 0 || s.MaxObservations != 0 && s.MaxObservations <= s.GammaMax:
		return fmt.Errorf("max_observations: %d must be more than gamma_max", s.MaxObservations)
	case s.NStartupTrials < 0:
		return fmt.Errorf("n_startup_trials: %d must be at least 0 (0 is the default, 10)", s.NStartupTrials)
	case s.NEICandidates < 0:
		return fmt.Errorf("n_ei_candidates: %d must be at least 0 (0 is the default, 24)", s.NEICandidates)
	case !(s.Gamma >= 0 && s.Gamma <= 1): // NaN too
		return fmt.Errorf("gamma: %v must be in (0, 1]", s.Gamma)
	case s.GammaMax < 0:
		return fmt.Errorf("gamma_max: %d must be at least 0 (0 is the default, 25)", s.GammaMax)
	case !(s.PriorWeight >= 0 && s.PriorWeight <= math.MaxFloat64):
		return fmt.Errorf("prior_weight: %v must be positive and finite", s.PriorWeight)
	case s.Group && !s.Multivariate:
		return fmt.Errorf("group: true needs multivariate: true (each group is modelled jointly, as Optuna's group=True needs multivariate=True)")
	}
	return nil
}

// tpeParams are the settings with their defaults filled in.
type tpeParams struct {
	nStartup, nCandidates, gammaMax, maxObs  int
	gamma, priorWeight                       float64
	magicClip, endpoints, multivariate, liar bool
	// group: multivariate over the groups of parameters that appear
	// together (tpe_conditional.go's groups).
	group bool
	// jointHeight: the multivariate estimator scores as Optuna 3.1's
	// (Config.Revision ≥ revisionJointHeight; jointMixture says how).
	jointHeight bool
	// trialOrder: observations and liars weigh by the age of their trial
	// (its creation number), as Optuna's by trial number
	// (Config.Revision ≥ revisionTrialOrder; tpe_age.go).
	trialOrder bool
}

func (s *TPESettings) params() tpeParams {
	if s == nil {
		s = &TPESettings{}
	}
	p := tpeParams{
		nStartup:     cmp.Or(s.NStartupTrials, 10),
		nCandidates:  cmp.Or(s.NEICandidates, 24),
		gammaMax:     cmp.Or(s.GammaMax, 25),
		maxObs:       cmp.Or(s.MaxObservations, 3000),
		gamma:        cmp.Or(s.Gamma, 0.1),
		priorWeight:  cmp.Or(s.PriorWeight, 1),
		magicClip:    true,
		endpoints:    s.ConsiderEndpoints,
		multivariate: s.Multivariate,
		group:        s.Group,
		liar:         true,
	}
	if s.ConsiderMagicClip != nil {
		p.magicClip = *s.ConsiderMagicClip
	}
	if s.ConstantLiar != nil {
		p.liar = *s.ConstantLiar
	}
	return p
}

func init() {
	register(algorithm{
		name:        AlgorithmTPE,
		creates:     true,
		conditional: true,
		summary:     "Tree-structured Parzen Estimator (Bergstra et al. 2011, Optuna's defaults): random for n_startup_trials, then the candidate of highest l(x)/g(x)",
		section:     func(s Settings) (validator, bool) { return s.TPE, s.TPE != nil },
		new:         func(cfg Config) (Searcher, error) { return newTPE(cfg), nil },
	})
}
