package client

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// A trial continued by its searcher is listed once, by its latest segment.
func TestLatestSegments(t *testing.T) {
	ids := []string{"c-trial-00001", "c-trial-00002", "c-trial-00001.2", "c-trial-00003", "c-trial-00001.3", "c-trial-00002.2", "odd.name.x"}
	require.Equal(t, []string{"c-trial-00003", "c-trial-00001.3", "c-trial-00002.2", "odd.name.x"}, latestSegments(ids))
}

// Trials are listed by number: t99999 before t100000, whose ids are longer.
func TestTrialsSortByNumber(t *testing.T) {
	ids := []string{"t100000", "t00002", "t99999", "t00010"}
	slices.SortFunc(ids, byNumber)
	require.Equal(t, []string{"t00002", "t00010", "t99999", "t100000"}, ids)
}
