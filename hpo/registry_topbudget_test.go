package hpo

import "testing"

// Every searcher whose settings name a trial's full budget gives it, so a
// campaign tells a trial stopped at a rung from one that completed
// (Hyperband's parked trials were shown completed at the highest rung
// reached so far).
func TestSettingsTopBudget(t *testing.T) {
	for _, tc := range []struct {
		what string
		s    Settings
		want float64
	}{
		{"asha", Settings{ASHA: &ASHASettings{MaxBudget: 81}}, 81},
		{"hyperband", Settings{Hyperband: &HyperbandSettings{MaxBudget: 27}}, 27},
		{"pbt", Settings{PBT: &PBTSettings{MaxBudget: 38400}}, 38400},
		{"asha without max_budget", Settings{ASHA: &ASHASettings{}}, 0},
		{"random", Settings{}, 0},
	} {
		if got := tc.s.TopBudget(); got != tc.want {
			t.Errorf("%s: TopBudget %v, want %v", tc.what, got, tc.want)
		}
	}
}
