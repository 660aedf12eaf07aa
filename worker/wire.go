package worker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/nas"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Setup is what the activities work with, built from a Config: this
// host's slots, the node source driving them, the launcher starting
// trainers on them, and the data directory.
type Setup struct {
	Host     cluster.LocalHost
	Nodes    activities.NodeSource
	Launcher *cluster.LocalLauncher
	// DataDir holds checkpoints and run directories (absolute or relative
	// to the worker's working directory, as configured).
	DataDir string
	// ArchPrior is Config.ThroughputModel's model, nil without one.
	ArchPrior *nas.ThroughputModel
	// Pool configures the pools the activities start (Config.Pool).
	Pool workflows.PoolInput
	// Library and Speeds are Config.PriorCurves' and Config.GPURatios'.
	Library []jpa.PriorCurve
	Speeds  *jpa.TypeSpeeds
}

// NewSetup loads the JPA's files cfg names (throughput model, prior
// curves, GPU ratios) and resolves the local host (detecting GPUs unless
// gpus=none), the node source and the local launcher that cfg describes.
func NewSetup(ctx context.Context, cfg Config) (Setup, error) {
	prior, err := LoadThroughputModel(cfg.ThroughputModel)
	if err != nil {
		return Setup{}, err
	}
	lib, err := LoadPriorCurves(cfg.PriorCurves)
	if err != nil {
		return Setup{}, err
	}
	speeds, err := LoadGPURatios(cfg.GPURatios)
	if err != nil {
		return Setup{}, err
	}
	res := Setup{ArchPrior: prior, Pool: cfg.Pool.Input(), Library: lib, Speeds: speeds, DataDir: cfg.DataDir}
	if cfg.Nodes.Kind == NodeSourceNone || cfg.Nodes.Kind.PilotJobs() {
		// Agents hold every node (a batch scheduler's source's agents run
		// in its pilot jobs); trials never run on this worker.
		res.Nodes = noNodes{}
		return res, nil
	}
	host, err := NewLocalHost(ctx, cfg.Nodes)
	if err != nil {
		return Setup{}, err
	}
	src, err := NewNodeSource(host, cfg.Nodes)
	if err != nil {
		return Setup{}, err
	}
	launcher, err := cluster.NewLocalLauncher(host)
	if err != nil {
		return Setup{}, fmt.Errorf("local launcher: %w", err)
	}
	policy, err := cfg.Trainers.Policy()
	if err != nil {
		return Setup{}, err
	}
	if err := launcher.SetPolicy(policy); err != nil {
		return Setup{}, err
	}
	res.Host, res.Nodes, res.Launcher = host, src, launcher
	return res, nil
}

// LoadPriorCurves reads a directory of profiled scaling curves
// (dataset.LoadScaling: a directory on disk, or "embedded:scaling" for the
// built-in reference curves) as the JPA's library; nil, nil for an empty
// path. Errors name the flag and its variable.
func LoadPriorCurves(dir string) ([]jpa.PriorCurve, error) {
	if dir == "" {
		return nil, nil
	}
	curves, err := dataset.LoadScaling(dir)
	if err != nil {
		return nil, client.NewFieldError("prior-curves", EnvPriorCurves, dir, "%v", err)
	}
	out := make([]jpa.PriorCurve, 0, len(curves))
	for _, c := range curves {
		out = append(out, jpa.PriorFromScaling(c))
	}
	if _, err := jpa.NewLibrary(out); err != nil {
		return nil, client.NewFieldError("prior-curves", EnvPriorCurves, dir, "%v", err)
	}
	return out, nil
}

// LoadGPURatios reads a Gavel-format throughput table (jpa.ParseGavel): a
// file on disk, or "embedded:gpus/gavel-isolated-throughputs.csv" for
// Gavel's own; nil, nil for an empty path. Errors name the flag and its
// variable.
func LoadGPURatios(path string) (*jpa.TypeSpeeds, error) {
	if path == "" {
		return nil, nil
	}
	f, err := data.Open(path)
	if err != nil {
		return nil, client.NewFieldError("gpu-ratios", EnvGPURatios, path, "%v", err)
	}
	defer f.Close()
	s, err := jpa.ParseGavel(f)
	if err != nil {
		return nil, client.NewFieldError("gpu-ratios", EnvGPURatios, path, "%v", err)
	}
	return s, nil
}

// LoadThroughputModel reads a fitted nas.ThroughputModel from path; nil,
// nil for an empty path. Errors name the flag and its variable.
func LoadThroughputModel(path string) (*nas.ThroughputModel, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err == nil {
		var m *nas.ThroughputModel
		if m, err = nas.ParseThroughputModel(b); err == nil {
			return m, nil
		}
	}
	return nil, client.NewFieldError("throughput-model", EnvThroughputModel, path, "%v", err)
}

// NewLocalHost resolves the local slots a node source drives: N for
// static:N, K for replay slots=K, each owning one GPU on a host with GPUs
// unless gpus=none.
func NewLocalHost(ctx context.Context, n NodeSourceConfig) (cluster.LocalHost, error) {
	if err := n.Validate(); err != nil {
		return cluster.LocalHost{}, err
	}
	lc := cluster.LocalConfig{Slots: n.Static.Nodes}
	if n.Kind == NodeSourceReplay {
		lc.Slots = n.Replay.Slots
	}
	if n.NoGPUs {
		lc.GPUs = []cluster.GPU{}
	}
	host, err := cluster.NewLocalHost(ctx, lc)
	if err != nil {
		return cluster.LocalHost{}, client.NewFieldError("nodes", EnvNodeSource, n.String(), "%v (gpus=none makes CPU slots)", err)
	}
	return host, nil
}

// NewNodeSource builds the node source n describes over host's slots. A
// node type given in n wins over the host's (its GPU model, or "cpu").
func NewNodeSource(host cluster.LocalHost, n NodeSourceConfig) (activities.NodeSource, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	switch n.Kind {
	case NodeSourceStatic:
		if n.Static.Type == "" {
			return host.StaticSource(), nil
		}
		src, err := cluster.NewStaticSource(host.Slots, n.Static.Type)
		if err != nil {
			return nil, client.NewFieldError("nodes", EnvNodeSource, n.String(), "%v", err)
		}
		return src, nil
	case NodeSourceReplay:
		r := n.Replay
		typ := r.Type
		if typ == "" && host.Slots > 0 {
			typ = host.NodeType(0)
		}
		src, err := cluster.OpenReplaySource(r.File, cluster.ReplayOptions{
			Slots: host.Slots, Factor: r.Factor, Offset: r.Offset, Loop: r.Loop, Type: typ,
		})
		if err != nil {
			return nil, client.NewFieldError("nodes", EnvNodeSource, n.String(), "%v", err)
		}
		return src, nil
	}
	return nil, client.NewFieldError("nodes", EnvNodeSource, n.String(), "unknown source %q", n.Kind)
}

// Build constructs what a worker runs from cfg: its Setup, then the
// activities and workflow functions (components). cleanup releases what
// Build acquired; it is never nil.
func Build(ctx context.Context, cfg Config) (comps Components, cleanup func(), err error) {
	res, err := NewSetup(ctx, cfg)
	if err != nil {
		return Components{}, func() {}, err
	}
	return components(res)
}

// components builds the workflow and activity components over res. The
// activities get the worker's client in New.
func components(res Setup) (Components, func(), error) {
	var launcher activities.Launcher
	if res.Launcher != nil {
		launcher = res.Launcher
	}
	acts := &activities.Activities{
		Launcher: launcher,
		Default:  res.Nodes,
		DataDir:  res.DataDir,
		Pool:     res.Pool,
		Library:  res.Library,
		Speeds:   res.Speeds,
	}
	if res.ArchPrior != nil {
		acts.ArchPrior = res.ArchPrior
	}
	return Components{
		CampaignWorkflow: workflows.CampaignWorkflow,
		TrialWorkflow:    workflows.TrialWorkflow,
		PoolWorkflow:     workflows.PoolWorkflow,
		TrialRecords:     workflows.TrialRecordsWorkflow,
		PoolRecords:      workflows.PoolRecordsWorkflow,
		RunTrial:         acts.RunTrial,
		Allocate:         acts.Allocate,
		PollNodes:        acts.PollNodes,
		RegisterTrial:    acts.RegisterTrial,
		WarmStart:        acts.WarmStart,
		ActivityDeps:     acts,
	}, func() {}, nil
}

// noNodes is the node source of a worker without nodes of its own.
type noNodes struct{}

func (noNodes) Idle(context.Context, time.Time) ([]cluster.Node, error) { return []cluster.Node{}, nil }
