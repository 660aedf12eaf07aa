package client

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A trial continued by its searcher is listed once, by its latest segment.
func TestLatestSegments(t *testing.T) {
	ids := []string{"c-trial-00001", "c-trial-00002", "c-trial-00001.2", "c-trial-00003", "c-trial-00001.3", "c-trial-00002.2", "odd.name.x"}
	require.Equal(t, []string{"c-trial-00003", "c-trial-00001.3", "c-trial-00002.2", "odd.name.x"}, latestSegments(ids))
}
