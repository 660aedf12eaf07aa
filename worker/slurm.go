package worker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster/slurm"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// DefaultPool is the pool a node source feeds when it names none, as a
// campaign's spec does.
const DefaultPool = "default"

// NewSlurmPilots prepares the Slurm source of cfg (cfg.Nodes.Kind
// NodeSourceSlurm): pilot jobs whose agents join the pool, run by the
// worker beside its workflows (Pilots.Run; docs/slurm.md). run runs the
// Slurm commands (nil: this machine's, slurm.ExecRunner).
func NewSlurmPilots(ctx context.Context, c tclient.Client, cfg Config, run slurm.Runner, logf func(string, ...any)) (*slurm.Pilots, error) {
	sl := cfg.Nodes.Slurm
	if cfg.Nodes.Kind != NodeSourceSlurm {
		return nil, client.NewFieldError("nodes", EnvNodeSource, cfg.Nodes.String(), "not a slurm source")
	}
	if run == nil {
		run = slurm.ExecRunner{}
	}
	pool := sl.Pool
	if pool == "" {
		pool = DefaultPool
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, client.NewFieldError("data-dir", EnvDataDir, cfg.DataDir, "%v", err)
	}
	gpus := "auto"
	if cfg.Nodes.NoGPUs {
		gpus = "none"
	}
	agentArgs := append(cfg.Connection.Args(), "--data-dir", dataDir, "--gpus", gpus)
	// The pilots' agents run trainers under the worker's own allow-list
	// and environment policy (docs/security.md).
	agentArgs = append(agentArgs, cfg.Trainers.Args()...)
	if sl.Type != "" {
		agentArgs = append(agentArgs, "--type", sl.Type)
	}
	set := slurm.Settings{
		Pool: pool, Partition: sl.Partition, QOS: sl.QOS, Account: sl.Account,
		MaxPending: sl.MaxPending, MaxPilots: sl.MaxPilots,
		TimeLimit: sl.Time, TimeMin: sl.TimeMin, Lead: sl.Lead, Interval: sl.Interval, Yield: sl.Yield,
		AgentArgs: agentArgs,
		Dir:       filepath.Join(dataDir, "slurm"),
	}
	p, err := slurm.NewPilots(ctx, set, run, poolClient{c: c, pool: pool}, logf)
	if err != nil {
		return nil, client.NewFieldError("nodes", EnvNodeSource, cfg.Nodes.String(), "%v", err)
	}
	return p, nil
}

// poolClient is slurm.Pool over the pool workflow: a query for demand, a
// signal for estimates.
type poolClient struct {
	c    tclient.Client
	pool string
}

func (p poolClient) Demand(ctx context.Context) (slurm.Demand, error) {
	v, err := p.c.QueryWorkflow(ctx, workflows.PoolWorkflowID(p.pool), "", workflows.QueryDemand)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return slurm.Demand{}, nil // no pool yet: no campaign needs nodes
	}
	if err != nil {
		return slurm.Demand{}, err
	}
	var d workflows.PoolDemand
	if err := v.Get(&d); err != nil {
		return slurm.Demand{}, fmt.Errorf("decoding the pool's demand: %w", err)
	}
	return slurm.Demand{Trials: d.Trials, Wanted: d.Wanted, MaxGrace: d.MaxGrace}, nil
}

func (p poolClient) SetIdleUntil(ctx context.Context, until map[string]time.Time) error {
	err := p.c.SignalWorkflow(ctx, workflows.PoolWorkflowID(p.pool), "", workflows.SignalIdleEstimates, workflows.IdleEstimates{IdleUntil: until})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil // no pool: nobody to tell; the next change is sent again
	}
	return err
}
