package jpa

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
)

func realCurves(t *testing.T) []dataset.ScalingCurve {
	t.Helper()
	curves, err := dataset.LoadScaling(data.Prefix + data.Scaling)
	require.NoError(t, err)
	return curves
}

// TestEvaluateRealData is the accuracy bar: leave-one-app-out, probes
// 1, 2, 4, median MAPE over the unseen counts at most 10 %.
func TestEvaluateRealData(t *testing.T) {
	curves := realCurves(t)
	res, err := Evaluate(curves, nil, []int{1, 2, 4}, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(res.Curves), 50)
	t.Logf("curves=%d median=%.4f p90=%.4f", len(res.Curves), res.MedianMAPE, res.P90MAPE)
	require.LessOrEqual(t, res.MedianMAPE, 0.10)
	require.GreaterOrEqual(t, res.P90MAPE, res.MedianMAPE)
}
