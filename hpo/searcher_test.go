package hpo

import (
	"strings"
	"testing"
)

// A search created under rules newer than this build's is refused.
func TestConfigRefusesAnUnknownRevision(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmRandom, Space: Space{{Name: "x", Type: ParamFloat, Min: 0, Max: 1}}, MaxTrials: 4, MaxConcurrent: 1, Mode: "min"}
	for _, rev := range []int{0, Revision} {
		cfg.Revision = rev
		if _, err := NewSearcher(cfg); err != nil {
			t.Errorf("revision %d: %v", rev, err)
		}
	}
	for _, rev := range []int{-1, Revision + 1} {
		cfg.Revision = rev
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "revision") {
			t.Errorf("revision %d: error %v, want one naming the revision", rev, err)
		}
	}
}
