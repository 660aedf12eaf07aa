package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/worker"
)

func TestParseNodeSource(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want worker.NodeSourceConfig
	}{
		{"static:4", worker.NodeSourceConfig{Kind: worker.NodeSourceStatic, Static: worker.StaticNodes{Nodes: 4}}},
		{" static:1,type=v100 ", worker.NodeSourceConfig{Kind: worker.NodeSourceStatic, Static: worker.StaticNodes{Nodes: 1, Type: "v100"}}},
		{"replay:traces/summit-idle-1.csv", worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{
			File: "traces/summit-idle-1.csv", Slots: worker.DefaultReplaySlots, Factor: 1}}},
		{"replay:t.csv,slots=8,factor=60,offset=3600", worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{
			File: "t.csv", Slots: 8, Factor: 60, Offset: time.Hour}}},
		{"replay:t.csv,offset=90m,factor=0.5,slots=2,type=a100", worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{
			File: "t.csv", Slots: 2, Factor: 0.5, Offset: 90 * time.Minute, Type: "a100"}}},
		{"static:4,gpus=none", worker.NodeSourceConfig{Kind: worker.NodeSourceStatic, Static: worker.StaticNodes{Nodes: 4}, NoGPUs: true}},
		{"static:2,gpus=auto", worker.NodeSourceConfig{Kind: worker.NodeSourceStatic, Static: worker.StaticNodes{Nodes: 2}}},
		{"replay:t.csv,loop=true,gpus=none", worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, NoGPUs: true, Replay: worker.ReplayNodes{
			File: "t.csv", Slots: worker.DefaultReplaySlots, Factor: 1, Loop: true}}},
		// A built-in trace: its name holds a colon, which must not end the
		// source kind or the file.
		{"replay:" + data.Prefix + data.SummitIdle + ",slots=8,factor=300", worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{
			File: data.Prefix + data.SummitIdle, Slots: 8, Factor: 300}}},
		{"replay:t.csv,offset=1.5", worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{
			File: "t.csv", Slots: worker.DefaultReplaySlots, Factor: 1, Offset: 1500 * time.Millisecond}}},
		{"slurm:partition=glean", worker.NodeSourceConfig{Kind: worker.NodeSourceSlurm, Slurm: worker.SlurmNodes{Partition: "glean"}}},
		{"slurm:partition=glean,pool=hpo,qos=scavenger,account=ml,max_pending=8,max_pilots=64,time=2h,time_min=10m,lead=45s,interval=5,type=a100,gpus=none",
			worker.NodeSourceConfig{Kind: worker.NodeSourceSlurm, NoGPUs: true,
				Slurm: worker.SlurmNodes{Partition: "glean", QOS: "scavenger", Account: "ml"},
				Pilots: worker.PilotNodes{Pool: "hpo", MaxPending: 8, MaxPilots: 64,
					Time: 2 * time.Hour, TimeMin: 10 * time.Minute, Lead: 45 * time.Second, Interval: 5 * time.Second, Type: "a100"}}},
		{"pbs:queue=preemptable,account=hpo,select=system=polaris,place=scatter:excl,gpus=4,pool=hpo", worker.NodeSourceConfig{Kind: worker.NodeSourcePBS,
			PBS: worker.PBSNodes{Queue: "preemptable", Account: "hpo", Select: "system=polaris", Place: "scatter:excl"}, Pilots: worker.PilotNodes{Pool: "hpo", GPUs: 4}}},
		{"slurm:partition=glean,yield=off", worker.NodeSourceConfig{Kind: worker.NodeSourceSlurm, Slurm: worker.SlurmNodes{Partition: "glean"}, Pilots: worker.PilotNodes{Yield: -1}}},
		{"slurm:partition=glean,yield=5", worker.NodeSourceConfig{Kind: worker.NodeSourceSlurm, Slurm: worker.SlurmNodes{Partition: "glean"}, Pilots: worker.PilotNodes{Yield: 5 * time.Second}}},
		{"slurm:partition=glean,yield=0", worker.NodeSourceConfig{Kind: worker.NodeSourceSlurm, Slurm: worker.SlurmNodes{Partition: "glean"}, Pilots: worker.PilotNodes{Yield: time.Nanosecond}}},
		{"slurm:partition=gpu,gpus=4,gres=nvme:1+shard:2,idle_release=10m", worker.NodeSourceConfig{Kind: worker.NodeSourceSlurm,
			Slurm: worker.SlurmNodes{Partition: "gpu", Gres: "nvme:1,shard:2"}, Pilots: worker.PilotNodes{GPUs: 4, IdleRelease: 10 * time.Minute}}},
		{"slurm:partition=gpu,gres=gpu:a100:4,gpus=auto", worker.NodeSourceConfig{Kind: worker.NodeSourceSlurm,
			Slurm: worker.SlurmNodes{Partition: "gpu", Gres: "gpu:a100:4"}}},
	} {
		got, err := worker.ParseNodeSource(tc.spec)
		if err != nil {
			t.Errorf("ParseNodeSource(%q): %v", tc.spec, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseNodeSource(%q) = %+v, want %+v", tc.spec, got, tc.want)
		}
		// String reads back.
		again, err := worker.ParseNodeSource(got.String())
		if err != nil || again != got {
			t.Errorf("ParseNodeSource(%q.String() = %q) = %+v, %v; want %+v", tc.spec, got.String(), again, err, got)
		}
	}
}

func TestParseNodeSourceErrorsNameThePart(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string
	}{
		{"", "want static:N"},
		{"static", "want static:N"},
		{"static:", "want static:N"},
		{"static:0", "node count"},
		{"static:-2", "node count"},
		{"static:four", "node count"},
		{"static:4,slots=2", `unknown option "slots"`},
		{"static:4,type", "option \"type\": want key=value"},
		{"slurm:partition", "option \"partition\": want key=value"},
		{"pbs:", "pbs: the options are missing: queue=NAME is required (the preemptible queue the pilots run in), e.g. --nodes pbs:queue=preemptable,select=system=polaris (docs/pbs.md)"},
		{"pbs:pool=x", "queue: missing"},
		{"pbs:queue=q,partition=p", `unknown option "partition"`},
		{"slurm:pool=x", "partition: missing (the preemptible partition the pilots run in), e.g. --nodes slurm:partition=glean,max_pending=4"},
		{"slurm:", "slurm: the options are missing: partition=NAME is required (the preemptible partition the pilots run in), e.g. --nodes slurm:partition=glean,max_pending=4"},
		{"slurm", "slurm: the options are missing: partition=NAME is required"},
		{"slurm:partition=glean,gpus=0", `gpus "0": want auto, none, or the GPUs per node each pilot asks for`},
		{"slurm:partition=glean,gpus=many", `gpus "many"`},
		{"slurm:partition=glean,gpus=2,gres=gpu:2", `gres "gpu:2" asks for GPUs and so does gpus=2`},
		{"slurm:partition=glean,gres=gpu=2", `gres "gpu=2": item "gpu=2": want name[:type][:count]`},
		{"slurm:partition=glean,idle_release=0", "idle_release"},
		{"static:2,gpus=2", `gpus "2": want auto or none`},
		{"slurm:partition=glean,max_pending=0", "max_pending"},
		{"slurm:partition=glean,time_min=soon", "time_min"},
		{"slurm:partition=glean,nodes=4", `unknown option "nodes"`},
		{"slurm:partition=glean,yield=-2s", "yield"},
		{"slurm:partition=glean,yield=never", "yield"},
		{"lsf:queue=x", `unknown source "lsf"`},
		{"replay:", "want static:N"},
		{"replay:,slots=2", "trace file"},
		{"replay:t.csv,slots=0", "slots"},
		{"replay:t.csv,slots=x", "slots"},
		{"replay:t.csv,factor=0", "factor"},
		{"replay:t.csv,factor=-1", "factor"},
		{"replay:t.csv,factor=NaN", "factor"},
		{"replay:t.csv,factor=Inf", "factor"},
		{"replay:t.csv,offset=-5", "offset"},
		{"replay:t.csv,offset=soon", "offset"},
		{"replay:t.csv,slots=2,slots=3", "given twice"},
		{"replay:t.csv,speed=2", `unknown option "speed"`},
		{"replay:t.csv,loop=sometimes", "loop"},
		{"static:2,gpus=some", "gpus"},
		{"static:2,loop=true", `unknown option "loop"`},
	} {
		_, err := worker.ParseNodeSource(tc.spec)
		checkFieldError(t, err, "--nodes", tc.want)
	}
}

func TestNodeSourceConfigIsAFlagValue(t *testing.T) {
	var n worker.NodeSourceConfig
	if err := n.Set("static:3"); err != nil {
		t.Fatal(err)
	}
	if n.Static.Nodes != 3 || n.Type() == "" {
		t.Errorf("after Set(static:3): %+v, Type %q", n, n.Type())
	}
	if err := n.Set("static:0"); err == nil {
		t.Error("Set(static:0) succeeded")
	}
	if n.Static.Nodes != 3 {
		t.Errorf("a failed Set changed the value to %+v", n)
	}
}

func TestNewLocalHostValidates(t *testing.T) {
	_, err := worker.NewLocalHost(context.Background(), worker.NodeSourceConfig{Kind: worker.NodeSourceStatic})
	checkFieldError(t, err, "--nodes", "≥ 1")
}

func TestNewSetupStatic(t *testing.T) {
	n, err := worker.ParseNodeSource("static:3,gpus=none")
	if err != nil {
		t.Fatal(err)
	}
	cfg := worker.DefaultConfig()
	cfg.Nodes, cfg.DataDir = n, t.TempDir()
	res, err := worker.NewSetup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := res.Nodes.Idle(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || res.Host.Slots != 3 || res.Launcher == nil || nodes[0].Type != "cpu" {
		t.Errorf("static:3,gpus=none: host %+v, idle %+v", res.Host, nodes)
	}

	typed, err := worker.ParseNodeSource("static:2,gpus=none,type=a100")
	if err != nil {
		t.Fatal(err)
	}
	src, err := worker.NewNodeSource(res.Host, typed)
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ = src.Idle(context.Background(), time.Now())
	if len(nodes) != 3 || nodes[0].Type != "a100" {
		t.Errorf("typed static source over a 3-slot host: %+v", nodes)
	}
}

// A replay source reads the built-in Summit trace from any working
// directory, and a built-in name that does not exist is refused naming it.
func TestNewSetupReplayBuiltInTrace(t *testing.T) {
	n, err := worker.ParseNodeSource("replay:" + data.Prefix + data.SummitIdle + ",slots=4,factor=600,offset=48h,gpus=none")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	cfg := worker.DefaultConfig()
	cfg.Nodes, cfg.DataDir = n, t.TempDir()
	res, err := worker.NewSetup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Nodes.Idle(context.Background(), time.Now()); err != nil {
		t.Errorf("Idle: %v", err)
	}

	missing := data.Prefix + "traces/missing.csv"
	bad, err := worker.ParseNodeSource("replay:" + missing + ",slots=2")
	if err != nil {
		t.Fatal(err)
	}
	checkFieldError(t, bad.Validate(), "nodes", missing)
}

// The JPA's library and GPU ratios load from the built-in reference data
// by their embedded: names as well as from disk.
func TestBuiltInPriorCurvesAndGPURatios(t *testing.T) {
	lib, err := worker.LoadPriorCurves(data.Prefix + data.Scaling)
	if err != nil || len(lib) == 0 {
		t.Fatalf("LoadPriorCurves(%q): %d curves, %v", data.Prefix+data.Scaling, len(lib), err)
	}
	sp, err := worker.LoadGPURatios(data.Prefix + data.Gavel)
	if err != nil {
		t.Fatalf("LoadGPURatios(%q): %v", data.Prefix+data.Gavel, err)
	}
	if _, _, ok := sp.Ratio("", "k80", "v100"); !ok {
		t.Errorf("no v100/k80 ratio in Gavel's table")
	}
	missing := data.Prefix + "gpus/missing.csv"
	_, err = worker.LoadGPURatios(missing)
	checkFieldError(t, err, "gpu-ratios", missing)
}

func TestNewSetupReplay(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.csv")
	body := "unix_time,event,nodes\n1000,idle,n1 n2\n1010,busy,n1\n"
	if err := os.WriteFile(trace, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := worker.ParseNodeSource("replay:" + trace + ",slots=2,factor=1,gpus=none")
	if err != nil {
		t.Fatal(err)
	}
	cfg := worker.DefaultConfig()
	cfg.Nodes, cfg.DataDir = n, t.TempDir()
	res, err := worker.NewSetup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	nodes, err := res.Nodes.Idle(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 {
		t.Fatalf("replay at its start: idle %+v, want local-0 and local-1", nodes)
	}
	nodes, _ = res.Nodes.Idle(context.Background(), now.Add(15*time.Second))
	if len(nodes) != 1 || nodes[0].ID != "local-1" {
		t.Errorf("replay 15 s in: idle %+v, want local-1 only", nodes)
	}

	bad := cfg
	bad.Nodes.Replay.File = filepath.Join(t.TempDir(), "garbage.csv")
	if err := os.WriteFile(bad.Nodes.Replay.File, []byte("1000,wake,n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = worker.NewSetup(context.Background(), bad)
	checkFieldError(t, err, "--nodes", "garbage.csv")
}
