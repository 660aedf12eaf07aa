package gleaner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A campaign's objectives: one (objective:, as always) or several
// (objectives:), the constraints on reported metrics, and the reference
// point its Pareto front's hypervolume is measured against.

// ObjectiveList is the campaign's objectives in order: Objectives when
// set, else the one Objective.
func (s CampaignSpec) ObjectiveList() []hpo.Objective {
	if len(s.Objectives) == 0 {
		return []hpo.Objective{{Metric: s.Objective.Metric, Mode: s.Objective.Mode}}
	}
	out := make([]hpo.Objective, len(s.Objectives))
	for i, o := range s.Objectives {
		out[i] = hpo.Objective{Metric: o.Metric, Mode: o.Mode}
	}
	return out
}

// PrimaryObjective is the first objective: the one a single-objective
// searcher, the trials' metric history and the campaign's warnings
// follow.
func (s CampaignSpec) PrimaryObjective() ObjectiveSpec {
	if len(s.Objectives) > 0 {
		return s.Objectives[0]
	}
	return s.Objective
}

// MultiObjective reports whether the campaign ranks trials by Pareto
// dominance (several objectives, or any constraint) rather than by one
// value: its "best" is a Pareto front.
func (s CampaignSpec) MultiObjective() bool {
	return len(s.Objectives) > 1 || len(s.Constraints) > 0
}

// objectiveDefaults sets each objective's mode to "min" when not given;
// with objectives, objective.mode is left as written (Validate refuses
// both).
func (s *CampaignSpec) objectiveDefaults() {
	for i := range s.Objectives {
		if s.Objectives[i].Mode == "" {
			s.Objectives[i].Mode = "min"
		}
	}
	if len(s.Objectives) == 0 && s.Objective.Mode == "" {
		s.Objective.Mode = "min"
	}
}

// validateObjectives checks objective or objectives, constraints and
// reference_point; errors name the field.
func (s CampaignSpec) validateObjectives() error {
	if len(s.Objectives) == 0 {
		switch {
		case s.Objective.Metric == "":
			return fmt.Errorf("objective.metric: empty")
		case s.Objective.Mode != "min" && s.Objective.Mode != "max":
			return fmt.Errorf("objective.mode: %q is not one of min, max", s.Objective.Mode)
		}
	} else {
		switch {
		case s.Objective.Metric != "" || s.Objective.Mode != "":
			return fmt.Errorf("objectives: objective is set too: give objective (one) or objectives (two or more), not both")
		case len(s.Objectives) == 1:
			return fmt.Errorf("objectives: one objective: write it as objective: {metric: %s}, or give two or more", s.Objectives[0].Metric)
		}
		seen := map[string]int{}
		for i, o := range s.Objectives {
			switch {
			case o.Metric == "":
				return fmt.Errorf("objectives[%d].metric: empty", i)
			case o.Mode != "min" && o.Mode != "max":
				return fmt.Errorf("objectives[%d].mode: %q is not one of min, max", i, o.Mode)
			}
			if j, ok := seen[o.Metric]; ok {
				return fmt.Errorf("objectives[%d].metric: %q is objectives[%d] already", i, o.Metric, j)
			}
			seen[o.Metric] = i
		}
	}
	for i, c := range s.Constraints {
		switch {
		case c.Metric == "":
			return fmt.Errorf("constraints[%d].metric: empty", i)
		case c.Max == nil && c.Min == nil:
			return fmt.Errorf("constraints[%d]: %s has no bound: give max, min or both", i, c.Metric)
		case c.Max != nil && !finite(*c.Max):
			return fmt.Errorf("constraints[%d].max: %v is not a finite number", i, *c.Max)
		case c.Min != nil && !finite(*c.Min):
			return fmt.Errorf("constraints[%d].min: %v is not a finite number", i, *c.Min)
		case c.Max != nil && c.Min != nil && *c.Min > *c.Max:
			return fmt.Errorf("constraints[%d]: min %v > max %v", i, *c.Min, *c.Max)
		}
	}
	if err := s.validatePredicted(); err != nil {
		return err
	}
	if r := s.ReferencePoint; len(r) > 0 {
		n := len(s.ObjectiveList())
		switch {
		case !s.MultiObjective():
			return fmt.Errorf("reference_point: a hypervolume needs several objectives or a constraint; one objective has a best value")
		case len(r) != n:
			return fmt.Errorf("reference_point: %d values for %d objectives: give one per objective, in its own units", len(r), n)
		}
		for i, v := range r {
			if !finite(v) {
				return fmt.Errorf("reference_point[%d]: %v is not a finite number", i, v)
			}
		}
	}
	return nil
}

// validateSearchObjectives checks that the algorithm takes the
// campaign's objectives and constraints.
func (s CampaignSpec) validateSearchObjectives() error {
	if s.MultiObjective() {
		if !slices.Contains(hpo.VectorAlgorithms(), s.Search.Algorithm) {
			what := "no algorithm of this build does"
			if v := hpo.VectorAlgorithms(); len(v) > 0 {
				what = "use one of " + strings.Join(v, ", ")
			}
			return fmt.Errorf("search.algorithm: %s takes one objective and no constraints; with several objectives or constraints %s",
				s.Search.Algorithm, what)
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// searchObjectives is hpo.Config.Objectives: the objectives when there
// are several, nil for one (a single-objective search's config is as it
// always was).
func (s CampaignSpec) searchObjectives() []hpo.Objective {
	if len(s.Objectives) == 0 {
		return nil
	}
	return s.ObjectiveList()
}

// ObjectiveText says what the campaign optimises, for people: "min
// val_loss", or "min val_loss, max acc (2 objectives), 1 constraint".
func (s CampaignSpec) ObjectiveText() string {
	if !s.MultiObjective() {
		o := s.PrimaryObjective()
		return o.Mode + " " + o.Metric
	}
	var parts []string
	for _, o := range s.ObjectiveList() {
		parts = append(parts, o.Mode+" "+o.Metric)
	}
	text := strings.Join(parts, ", ")
	if n := len(s.Objectives); n > 1 {
		text += fmt.Sprintf(" (%d objectives)", n)
	}
	switch n := len(s.Constraints); n {
	case 0:
	case 1:
		text += ", 1 constraint"
	default:
		text += fmt.Sprintf(", %d constraints", n)
	}
	return text
}

// validatePredicted checks that only a NAS campaign names a metric the
// worker predicts from a trial's architecture (PredictedMetric): an HPO
// trial has no architecture to predict from, so it would never have one.
func (s CampaignSpec) validatePredicted() error {
	if field, metric := s.predictedField(); field != "" && s.Kind != "nas" {
		return fmt.Errorf("%s.metric: %s is predicted from a trial's architecture: only a kind: nas campaign has it (docs/nas.md, \"Hardware-aware search\")", field, metric)
	}
	return nil
}

// searchesPredicted: an objective or constraint names a predicted metric.
func (s CampaignSpec) searchesPredicted() bool {
	field, _ := s.predictedField()
	return field != ""
}

// predictedField is the first objective or constraint that names a
// predicted metric (PredictedMetric), as a spec path ("objectives[1]"),
// and the metric; "" for none.
func (s CampaignSpec) predictedField() (field, metric string) {
	for i, o := range s.Objectives {
		if PredictedMetric(o.Metric) {
			return fmt.Sprintf("objectives[%d]", i), o.Metric
		}
	}
	for i, c := range s.Constraints {
		if PredictedMetric(c.Metric) {
			return fmt.Sprintf("constraints[%d]", i), c.Metric
		}
	}
	if PredictedMetric(s.Objective.Metric) {
		return "objective", s.Objective.Metric
	}
	return "", ""
}
