package sim

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
)

func TestReadJobsTiny(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "workloads", "tiny.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := ReadJobs(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{Name: "J0", Submit: 0, MinNodes: 1, MaxNodes: 2, RescaleUp: 8, RescaleDown: 5, TotalSamples: 3000, Curve: linear10},
		{Name: "J1", Submit: 10, MinNodes: 1, MaxNodes: 4, RescaleUp: 18, RescaleDown: 12, TotalSamples: 1e6,
			Curve: allocator.Curve{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 180}, {Nodes: 4, Throughput: 300}, {Nodes: 8, Throughput: 400}}},
	}
	if !reflect.DeepEqual(jobs, want) {
		t.Errorf("ReadJobs:\n got %+v\nwant %+v", jobs, want)
	}
	if k, r := jobs[1].BestScale(); k != 1 || r != 100 {
		t.Errorf("J1 best scale = %d at %v/node, want 1 at 100", k, r)
	}
}

func TestReadJobsShared(t *testing.T) {
	for _, name := range []string{data.HPO10, data.HPO1000} {
		jobs := loadSharedJobs(t, name)
		for _, j := range jobs {
			if j.MinNodes != 1 || j.MaxNodes != 64 || j.Curve[0].Nodes != 1 || j.Curve[len(j.Curve)-1].Nodes != 64 {
				t.Fatalf("%s: job %+v: want bounds 1–64 and a curve from 1 to 64 nodes", name, j)
			}
		}
	}
}

// BFTrainer's mixed ImageNet workload names each job's network, and every
// network is one model for the JPA: seven of 143 jobs each.
func TestReadJobsImageNetMixed(t *testing.T) {
	jobs := loadSharedJobs(t, data.ImageNetMixed)
	if len(jobs) != 1001 {
		t.Fatalf("%d jobs, want 1001", len(jobs))
	}
	perModel := map[string]int{}
	for _, j := range jobs {
		if j.MinNodes != 1 || j.MaxNodes != 64 || j.Curve[len(j.Curve)-1].Nodes != 64 {
			t.Fatalf("job %s: bounds %d–%d, want 1–64 and a curve to 64 nodes", j.Name, j.MinNodes, j.MaxNodes)
		}
		perModel[j.Model]++
	}
	want := map[string]int{"AlexNet": 143, "DenseNet": 143, "mnasnet1": 143, "mobilenet": 143,
		"resnet18": 143, "shufflenet": 143, "vgg16": 143}
	if !reflect.DeepEqual(perModel, want) {
		t.Errorf("jobs per model %v, want %v", perModel, want)
	}
}

// loadSharedJobs reads a workload of the built-in reference data; name is
// its path there (data.HPO10, data.HPO1000, data.ImageNetMixed).
func loadSharedJobs(t *testing.T, name string) []Job {
	t.Helper()
	f, err := data.Open(data.Prefix + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := ReadJobs(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return jobs
}

func TestReadJobsErrors(t *testing.T) {
	const header = "name,submit_unix,min_nodes,max_nodes,rescale_up_s,rescale_down_s,total_samples,nodes,samples_per_s\n"
	const ok = "J0,0,1,2,8,5,3000,0 1 2,0 10 20\n"
	cases := []struct{ in, want string }{
		{"", "empty"},
		{"name,submit\n", "line 1: header has 2 columns"},
		{strings.Replace(header, "min_nodes", "lo", 1), "line 1, column 3: header is \"lo\", want \"min_nodes\""},
		{header + "J0,0,1,2\n", "line 2: 4 columns, want 9 as the header"},
		{strings.TrimSuffix(header, "\n") + ",model\n" + ok, "line 2: 9 columns, want 10 as the header"},
		{strings.TrimSuffix(header, "\n") + ",arch\n", "line 1, column 10: header is \"arch\", want \"model\""},
		{header + ",0,1,2,8,5,3000,0 1 2,0 10 20\n", "line 2, column 1 (name): empty"},
		{header + "# c\nJ0,x,1,2,8,5,3000,0 1 2,0 10 20\n", "line 3, column 2 (submit_unix)"},
		{header + "J0,0,0,2,8,5,3000,0 1 2,0 10 20\n", "line 2, column 3 (min_nodes)"},
		{header + "J0,0,1.5,2,8,5,3000,0 1 2,0 10 20\n", "line 2, column 3 (min_nodes)"},
		{header + "J0,0,2,1,8,5,3000,0 1 2,0 10 20\n", "line 2, column 4 (max_nodes)"},
		{header + "J0,0,1,2,-8,5,3000,0 1 2,0 10 20\n", "line 2, column 5 (rescale_up_s)"},
		{header + "J0,0,1,2,8,NaN,3000,0 1 2,0 10 20\n", "line 2, column 6 (rescale_down_s)"},
		{header + "J0,0,1,2,8,5,0,0 1 2,0 10 20\n", "line 2, column 7 (total_samples)"},
		{header + "J0,0,1,2,8,5,3000,,\n", "line 2, column 8 (nodes): empty"},
		{header + "J0,0,1,2,8,5,3000,0 2 1,0 10 20\n", "line 2, column 8 (nodes): value 3: 1 does not increase"},
		{header + "J0,0,1,2,8,5,3000,0 1 2,0 10\n", "line 2, column 9 (samples_per_s): 2 values for 3"},
		{header + "J0,0,1,2,8,5,3000,0 1 2,0 10 -1\n", "line 2, column 9 (samples_per_s): value 3"},
		{header + "J0,0,1,2,8,5,3000,0 1 2,5 10 20\n", "throughput at 0 nodes"},
		{header + "J0,0,1,4,8,5,3000,0 1 2,0 10 20\n", "does not reach max_nodes 4"},
		{header + ok + ok, "line 3, column 1 (name): \"J0\" repeats the job of line 2"},
	}
	for _, c := range cases {
		_, err := ReadJobs(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadJobs(%q): error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

// A workload that mixes models names them in the optional model column:
// the JPA mode's siblings are then the jobs of one model.
func TestReadJobsModelColumn(t *testing.T) {
	in := "name,submit_unix,min_nodes,max_nodes,rescale_up_s,rescale_down_s,total_samples,nodes,samples_per_s,model\n" +
		"a1,0,1,2,8,5,3000,0 1 2,0 10 20,alexnet\n" +
		"v1,0,1,2,8,5,3000,0 1 2,0 10 15, vgg16 \n" +
		"x1,0,1,2,8,5,3000,0 1 2,0 10 15,\n"
	jobs, err := ReadJobs(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{jobs[0].Model, jobs[1].Model, jobs[2].Model}; !reflect.DeepEqual(got, []string{"alexnet", "vgg16", ""}) {
		t.Errorf("models %q, want alexnet, vgg16 and none", got)
	}
	a, err := NewJPA(jobs, JPAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{a.groups[0], a.groups[1], a.groups[2]}; !reflect.DeepEqual(got, []string{"alexnet", "vgg16", DefaultJPAGroup}) {
		t.Errorf("JPA groups %q, want one per model and the workload's for the job without one", got)
	}
}

func FuzzReadJobs(f *testing.F) {
	f.Add("name,submit_unix,min_nodes,max_nodes,rescale_up_s,rescale_down_s,total_samples,nodes,samples_per_s\nJ0,0,1,2,8,5,3000,0 1 2,0 10 20\n")
	f.Add("name,submit_unix,min_nodes,max_nodes,rescale_up_s,rescale_down_s,total_samples,nodes,samples_per_s,model\nJ0,0,1,2,8,5,3000,0 1 2,0 10 20,vgg16\n")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ReadJobs(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, j := range jobs {
			if err := validateJob(j); err != nil {
				t.Fatalf("ReadJobs accepted a job Run rejects: %v", err)
			}
		}
	})
}

func TestSyntheticJobs(t *testing.T) {
	curves := []dataset.ScalingCurve{
		{File: "a.csv", Points: []dataset.ScalingPoint{{Nodes: 1, SamplesPerS: 100}, {Nodes: 2, SamplesPerS: 150}, {Nodes: 4, SamplesPerS: 200}}},
		{File: "b.csv", Points: []dataset.ScalingPoint{{Nodes: 2, SamplesPerS: 50}, {Nodes: 8, SamplesPerS: 160}}},
		{File: "empty.csv"},
	}
	opts := SyntheticOptions{Start: 1000, Window: 3600, NodeHours: 2, NodeHoursSpread: 0.5, Stretch: 2}
	jobs := SyntheticJobs(curves, 200, 7, opts)
	if again := SyntheticJobs(curves, 200, 7, opts); !reflect.DeepEqual(jobs, again) {
		t.Fatal("same seed, different jobs")
	}
	if other := SyntheticJobs(curves, 200, 8, opts); reflect.DeepEqual(jobs, other) {
		t.Fatal("different seeds, same jobs")
	}
	if len(jobs) != 200 {
		t.Fatalf("%d jobs, want 200", len(jobs))
	}
	for i, j := range jobs {
		if err := validateJob(j); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if i > 0 && j.Submit < jobs[i-1].Submit {
			t.Fatalf("job %d submitted before job %d", i, i-1)
		}
		if j.Submit < 1000 || j.Submit > 4600 {
			t.Fatalf("job %d submitted at %v, outside [1000, 4600]", i, j.Submit)
		}
		if j.MinNodes%2 != 0 || j.MaxNodes%2 != 0 || j.MaxNodes > j.Curve[len(j.Curve)-1].Nodes {
			t.Fatalf("job %d bounds %d–%d: want stretched by 2 and within the curve %v", i, j.MinNodes, j.MaxNodes, j.Curve)
		}
		_, perNode := j.BestScale()
		hours := j.TotalSamples / perNode / 3600
		if hours < 1-1e-9 || hours > 3+1e-9 {
			t.Fatalf("job %d lasts %v node-hours at its best scale, want within 2 × [0.5, 1.5]", i, hours)
		}
		if j.Model != curves[0].Name() && j.Model != curves[1].Name() {
			t.Fatalf("job %d model %q: want its curve's name", i, j.Model)
		}
		if j.RescaleUp < 9 || j.RescaleUp > 27 || j.RescaleDown < 6 || j.RescaleDown > 18 {
			t.Fatalf("job %d rescale costs %v/%v, want 18/12 × [0.5, 1.5]", i, j.RescaleUp, j.RescaleDown)
		}
	}
	if SyntheticJobs(curves[2:], 5, 1, opts) != nil {
		t.Error("no usable curve: want nil")
	}
	if math.IsNaN(jobs[0].TotalSamples) {
		t.Error("NaN samples")
	}
}

func TestModelInName(t *testing.T) {
	for name, want := range map[string]string{
		"J00003-DenseNet":  "DenseNet",
		"J00004-mnasnet1":  "mnasnet1",
		"J1_resnet-50":     "resnet-50",
		"J00000":           "",
		"S00012":           "",
		"resnet50":         "",
		"J00003-":          "",
		"job-7-vgg16":      "",
		"00017-shufflenet": "shufflenet",
	} {
		if got := ModelInName(name); got != want {
			t.Errorf("ModelInName(%q) = %q, want %q", name, got, want)
		}
	}
	jobs, err := ReadJobs(strings.NewReader("name,submit_unix,min_nodes,max_nodes,rescale_up_s,rescale_down_s,total_samples,nodes,samples_per_s\n" +
		"J00000-AlexNet,0,1,2,18,12,100,1 2,10 18\nJ00001,0,1,2,18,12,100,1 2,10 18\n"))
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Model != "AlexNet" || jobs[1].Model != "" {
		t.Errorf("models %q, %q, want AlexNet from the name and none", jobs[0].Model, jobs[1].Model)
	}
}
