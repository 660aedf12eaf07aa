package nas

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCalibrationMedianOfOthers(t *testing.T) {
	var c Calibration
	f, n := c.Factor("cpu", "a")
	require.Equal(t, 1.0, f)
	require.Zero(t, n)
	c.Observe("cpu", "a", 100, 400) // 1/4
	c.Observe("cpu", "b", 200, 400) // 1/2
	c.Observe("cpu", "c", 400, 400) // 1
	c.Observe("cpu", "d", math.NaN(), 400)
	c.Observe("cpu", "e", 400, 0)
	c.Observe("cpu", "", 400, 400)
	f, n = c.Factor("cpu", "z")
	require.Equal(t, 3, n, "bad values and an empty architecture are ignored")
	require.InDelta(t, 0.5, f, 1e-12)
	f, n = c.Factor("cpu", "b")
	require.Equal(t, 2, n)
	require.InDelta(t, 0.5, f, 1e-12, "the geometric mean of the middle two: sqrt(1/4 × 1)")
	c.Observe("cpu", "c", 800, 400) // its latest replaces it
	f, _ = c.Factor("cpu", "a")
	require.InDelta(t, 1.0, f, 1e-12, "sqrt(1/2 × 2)")
	f, n = c.Factor("gpu", "a")
	require.Equal(t, 1.0, f, "another node type")
	require.Zero(t, n)
}

func TestCalibrationForgetsTheOldest(t *testing.T) {
	var c Calibration
	c.Observe("", "old", 1, 1000)
	for i := range CalibrationMemory {
		c.Observe("", fmt.Sprint(i), 500, 1000)
	}
	f, n := c.Factor("", "x")
	require.Equal(t, CalibrationMemory, n)
	require.InDelta(t, 0.5, f, 1e-12, "the oldest (ratio 1/1000) is forgotten")
}
