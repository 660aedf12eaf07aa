package dataset

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/data"
)

const sample = `nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s
1,4,32,0.058215,2198.741
2,4,32,0.184533,1387.283
1,4,64,0.068415,3741.879
2,4,64,0.170553,3002.007
2,4,64,0.2,9999
`

func TestCurvesFromRowsGroupsByBatchAndSorts(t *testing.T) {
	rows, err := ReadScaling(strings.NewReader(sample))
	require.NoError(t, err)
	curves := CurvesFromRows("x/cifar10__aws.csv", rows)
	require.Len(t, curves, 2)
	require.Equal(t, "cifar10", curves[0].App)
	require.Equal(t, "aws", curves[0].Cluster)
	require.Equal(t, 32, curves[0].LocalBatch)
	require.Equal(t, []ScalingPoint{{Nodes: 1, SamplesPerS: 2198.741}, {Nodes: 2, SamplesPerS: 1387.283}}, curves[0].Points)
	// The repeated node count keeps the first row.
	require.Equal(t, 3002.007, curves[1].Points[1].SamplesPerS)
	require.Equal(t, "cifar10__aws.csv@bsz=64", curves[1].Name())
	require.Equal(t, 2, curves[1].MaxNodes())
}

func TestReadScalingErrorsNameLineAndColumn(t *testing.T) {
	cases := map[string]string{
		"nodes,gpus,local_bsz,step_time_s,samples_per_s\n":                              `header column 2 is "gpus", want "gpus_per_node"`,
		"nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s\n0,4,32,0.1,10\n":      `line 2: nodes: "0" is not a positive integer`,
		"nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s\n1,4,32,0.1,-3\n":      `line 2: samples_per_s: "-3" is not a positive number`,
		"nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s\n1,4,32,NaN,3\n":       `line 2: step_time_s: "NaN" is not a positive number`,
		"nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s\n1,4,32,0.1\n":         `wrong number of fields`,
		"nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s\n1,4,x,0.1,3\n":        `line 2: local_bsz: "x" is not a positive integer`,
		"nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s\n1,4,3,0.1,3\n1,4,3\n": `wrong number of fields`,
	}
	for in, want := range cases {
		_, err := ReadScaling(strings.NewReader(in))
		require.ErrorContains(t, err, want, "input %q", in)
	}
}

func TestLoadBuiltInScaling(t *testing.T) {
	fsys, err := data.Dir(data.Prefix + data.Scaling)
	require.NoError(t, err)
	curves, err := LoadScalingFS(fsys)
	require.NoError(t, err)
	same, err := LoadScaling(data.Prefix + data.Scaling)
	require.NoError(t, err)
	require.Equal(t, curves, same)
	files := map[string]bool{}
	for _, c := range curves {
		files[c.File] = true
		require.NotEmpty(t, c.Points, c.Name())
		for i := 1; i < len(c.Points); i++ {
			require.Less(t, c.Points[i-1].Nodes, c.Points[i].Nodes, c.Name())
		}
	}
	require.Len(t, files, 24, "the scaling/ directory has 24 files (4 apps × 6 clusters)")
}

func TestLoadScalingDirNamesTheBadFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a__x.csv"), []byte(sample), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b__x.csv"), []byte("nodes\n"), 0o644))
	_, err := LoadScalingDir(dir)
	require.ErrorContains(t, err, filepath.Join(dir, "b__x.csv"))

	_, err = LoadScalingDir(t.TempDir())
	require.ErrorContains(t, err, "no *.csv scaling files")
	_, err = LoadScaling(dir)
	require.ErrorContains(t, err, filepath.Join(dir, "b__x.csv"))
	_, err = LoadScaling(data.Prefix + "nope")
	require.ErrorContains(t, err, data.Prefix+"nope")

	curves, err := LoadScalingFile(filepath.Join(dir, "a__x.csv"))
	require.NoError(t, err)
	require.Equal(t, "a", curves[0].App)
}

func FuzzReadScaling(f *testing.F) {
	f.Add([]byte(sample))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ReadScaling(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.Nodes < 1 || r.LocalBatch < 1 || !(r.SamplesPerS > 0) || math.IsInf(r.SamplesPerS, 0) {
				t.Fatalf("accepted an invalid row %+v", r)
			}
		}
		for _, c := range CurvesFromRows("f.csv", rows) {
			for i := 1; i < len(c.Points); i++ {
				if c.Points[i-1].Nodes >= c.Points[i].Nodes {
					t.Fatalf("curve %s not strictly increasing", c.Name())
				}
			}
		}
	})
}
