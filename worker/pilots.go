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
	"github.com/gleaner-hpc/gleaner/cluster/pilot"
	"github.com/gleaner-hpc/gleaner/cluster/slurm"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// DefaultPool is the pool a node source feeds when it names none, as a
// campaign's spec does.
const DefaultPool = "default"

// NewPilots prepares the batch-scheduler source of cfg (cfg.Nodes.Kind's
// PilotJobs): pilot jobs whose agents join the pool, run by the worker
// beside its workflows (pilot.Pilots.Run; docs/slurm.md). The policy and
// its settings are every scheduler's; each scheduler is one case below.
func NewPilots(ctx context.Context, c tclient.Client, cfg Config, logf func(string, ...any)) (*pilot.Pilots, error) {
	bad := func(format string, args ...any) error {
		return client.NewFieldError("nodes", EnvNodeSource, cfg.Nodes.String(), format, args...)
	}
	if !cfg.Nodes.Kind.PilotJobs() {
		return nil, bad("not a batch scheduler's source")
	}
	pl := cfg.Nodes.Pilots
	pool := pl.Pool
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
	if pl.Type != "" {
		agentArgs = append(agentArgs, "--type", pl.Type)
	}
	set := pilot.Settings{
		Pool: pool, MaxPending: pl.MaxPending, MaxPilots: pl.MaxPilots,
		TimeLimit: pl.Time, TimeMin: pl.TimeMin, Lead: pl.Lead, Interval: pl.Interval, Yield: pl.Yield,
		AgentArgs: agentArgs,
	}
	// The scheduler's script and the pilots' logs.
	dir := filepath.Join(dataDir, string(cfg.Nodes.Kind))
	pc := poolClient{c: c, pool: pool}
	var p *pilot.Pilots
	switch cfg.Nodes.Kind {
	case NodeSourceSlurm:
		sl := cfg.Nodes.Slurm
		p, err = slurm.NewPilots(ctx, slurm.Settings{Pilots: set, Partition: sl.Partition, QOS: sl.QOS, Account: sl.Account, Dir: dir},
			slurm.ExecRunner{}, pc, logf)
	default:
		return nil, bad("no pilots for source %q", cfg.Nodes.Kind)
	}
	if err != nil {
		return nil, bad("%v", err)
	}
	return p, nil
}

// poolClient is pilot.Pool over the pool workflow: a query for demand, a
// signal for estimates.
type poolClient struct {
	c    tclient.Client
	pool string
}

func (p poolClient) Demand(ctx context.Context) (pilot.Demand, error) {
	v, err := p.c.QueryWorkflow(ctx, workflows.PoolWorkflowID(p.pool), "", workflows.QueryDemand)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return pilot.Demand{}, nil // no pool yet: no campaign needs nodes
	}
	if err != nil {
		return pilot.Demand{}, err
	}
	var d workflows.PoolDemand
	if err := v.Get(&d); err != nil {
		return pilot.Demand{}, fmt.Errorf("decoding the pool's demand: %w", err)
	}
	return pilot.Demand{Trials: d.Trials, Wanted: d.Wanted, MaxGrace: d.MaxGrace}, nil
}

func (p poolClient) SetIdleUntil(ctx context.Context, until map[string]time.Time) error {
	err := p.c.SignalWorkflow(ctx, workflows.PoolWorkflowID(p.pool), "", workflows.SignalIdleEstimates, workflows.IdleEstimates{IdleUntil: until})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil // no pool: nobody to tell; the next change is sent again
	}
	return err
}
