package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/data"
)

const tinyScaling = "../../jpa/testdata/scaling"

func TestJPAEvalTable(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, Run([]string{"jpa", "eval", "--dir", tinyScaling}, &out, &errOut), errOut.String())
	s := out.String()
	assert.Contains(t, s, "ncf__azure.csv")
	assert.Contains(t, s, "median MAPE:")
	assert.Contains(t, s, "p90 MAPE:")
	assert.Empty(t, errOut.String())
}

type evalJSON struct {
	Curves []struct {
		File     string   `json:"file"`
		LocalBsz int      `json:"local_bsz"`
		MAPE     *float64 `json:"mape"`
	} `json:"curves"`
	MedianMAPE *float64 `json:"median_mape"`
	P90MAPE    *float64 `json:"p90_mape"`
}

func TestJPAEvalJSONShape(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, Run([]string{"jpa", "eval", "--dir", tinyScaling, "--json"}, &out, &errOut), errOut.String())
	// Exactly these keys, nothing more.
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(out.Bytes(), &raw))
	assert.ElementsMatch(t, []string{"curves", "median_mape", "p90_mape"}, keys(raw))
	var curves []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw["curves"], &curves))
	require.NotEmpty(t, curves)
	for _, c := range curves {
		assert.ElementsMatch(t, []string{"file", "local_bsz", "mape"}, keys(c))
	}
	var got evalJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.NotNil(t, got.MedianMAPE)
	require.NotNil(t, got.P90MAPE)
	assert.GreaterOrEqual(t, *got.P90MAPE, *got.MedianMAPE)
	assert.Equal(t, "cifar10__azure.csv", got.Curves[0].File)
	assert.Equal(t, 32, got.Curves[0].LocalBsz)
}

func TestJPAEvalPriorDir(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, Run([]string{"jpa", "eval", "--dir", tinyScaling, "--prior", tinyScaling, "--probes", "1,2", "--json"}, &out, &errOut), errOut.String())
	var got evalJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.NotEmpty(t, got.Curves)
}

// Without --dir, jpa eval reads the built-in curves.
func TestJPAEvalRealData(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, Run([]string{"jpa", "eval", "--json"}, &out, &errOut), errOut.String())
	var got evalJSON
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Greater(t, len(got.Curves), 50)
	assert.LessOrEqual(t, *got.MedianMAPE, 0.10)
}

func TestJPAEvalBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", tinyScaling, "--probes", "1,x"}, `--probes: "x" is not a positive integer`},
		{[]string{"--dir", tinyScaling, "--probes", "0"}, `--probes: "0" is not a positive integer`},
		{[]string{"--dir", ""}, "--dir: must not be empty"},
		{[]string{"--dir", "does-not-exist"}, "--dir:"},
		{[]string{"--dir", "embedded:nope"}, "--dir: embedded:nope"},
		{[]string{"--dir", "embedded:" + data.Gavel}, "--dir: embedded:" + data.Gavel},
		{[]string{"--dir", tinyScaling, "--prior", "does-not-exist"}, "--prior:"},
	} {
		var out, errOut bytes.Buffer
		err := Run(append([]string{"jpa", "eval"}, tc.args...), &out, &errOut)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want)
		assert.Contains(t, errOut.String(), tc.want)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
