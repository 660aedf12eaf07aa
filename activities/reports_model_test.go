package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/trial"
)

// What a trainer says it trains is forwarded as the latest it said: a
// later line without it keeps it.
func TestMergeReportsKeepsModelAndBatch(t *testing.T) {
	var last trial.Report
	mergeReports(&last, []trial.Report{{Samples: 10}, {Samples: 20, Model: "resnet50", Batch: 64}, {Samples: 30}})
	require.Equal(t, "resnet50", last.Model)
	require.Equal(t, 64, last.Batch)
	mergeReports(&last, []trial.Report{{Samples: 40, Model: "resnet101"}})
	require.Equal(t, "resnet101", last.Model)
	require.Equal(t, 64, last.Batch)
	r := runner{a: &Activities{}, last: last}
	p := r.progress()
	require.Equal(t, "resnet101", p.Model)
	require.Equal(t, 64, p.Batch)
}
