package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster/pbs"
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
	if logf == nil {
		logf = func(string, ...any) {}
	}
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
	gleaner, err := nodeFiles(cfg, logf)
	if err != nil {
		return nil, err
	}
	set := pilot.Settings{
		Pool: pool, MaxPending: pl.MaxPending, MaxPilots: pl.MaxPilots,
		TimeLimit: pl.Time, TimeMin: pl.TimeMin, Lead: pl.Lead, Interval: pl.Interval, Yield: pl.Yield,
		IdleRelease: pl.IdleRelease, GPUs: pl.GPUs,
		AgentArgs: agentArgs, AgentEnv: agentEnv(cfg.Connection), Server: cfg.HostPort,
	}
	// The scheduler's script and the pilots' logs.
	dir := filepath.Join(dataDir, string(cfg.Nodes.Kind))
	pc := poolClient{c: c, pool: pool}
	var p *pilot.Pilots
	switch cfg.Nodes.Kind {
	case NodeSourceSlurm:
		sl := cfg.Nodes.Slurm
		p, err = slurm.NewPilots(ctx, slurm.Settings{Pilots: set, Partition: sl.Partition, QOS: sl.QOS, Account: sl.Account, Gres: sl.Gres,
			Gleaner: gleaner, Dir: dir}, slurm.ExecRunner{}, pc, logf)
	case NodeSourcePBS:
		pb := cfg.Nodes.PBS
		p, err = pbs.NewPilots(ctx, pbs.Settings{Pilots: set, Queue: pb.Queue, Account: pb.Account, Select: pb.Select, Place: pb.Place,
			Gleaner: gleaner, Dir: dir, Bin: pbsBin()}, pbs.ExecRunner{}, pc, logf)
	default:
		return nil, bad("no pilots for source %q", cfg.Nodes.Kind)
	}
	if errors.Is(err, pilot.ErrLoopbackServer) {
		return nil, client.NewFieldError("address", client.EnvAddress, cfg.HostPort, "%v", err)
	}
	if err != nil {
		return nil, bad("%v", err)
	}
	return p, nil
}

// agentEnv are the secrets the pilots' agents need, passed in the pilot
// job's environment, never on its command line (Connection.Args leaves
// them out): the API key, the codec's keys. A worker given --api-key has
// no TEMPORAL_API_KEY in its own environment for the job to inherit.
func agentEnv(c client.Connection) []string {
	var env []string
	if c.APIKey != "" {
		env = append(env, client.EnvAPIKey+"="+c.APIKey)
	}
	if c.Codec.Key != "" {
		env = append(env, client.EnvCodecKey+"="+c.Codec.Key)
	}
	return env
}

// nodeFiles checks the files the pilots' agents read on the compute
// nodes, at the paths the worker passes them: each must be absolute and
// exist here, and must exist at the same path on every node (a shared
// file system, or the same image). It returns the gleaner binary the
// pilots run: this one. Literal --allow-command paths (trainers) missing
// here are warned of: they may be on the nodes alone.
func nodeFiles(cfg Config, logf func(string, ...any)) (string, error) {
	gleaner, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the gleaner binary the pilots run: %w", err)
	}
	const everyNode = "the pilots' agents read it on the compute nodes: it must exist at the same path on every node"
	var errs []error
	for _, f := range []struct{ flag, env, path string }{
		{"tls-ca", client.EnvTLSCA, cfg.TLS.CAFile},
		{"tls-cert", client.EnvTLSCert, cfg.TLS.CertFile},
		{"tls-key", client.EnvTLSKey, cfg.TLS.KeyFile},
		{"codec-key-file", client.EnvCodecKeyFile, cfg.Codec.KeyFile},
		{"allow-command-file", EnvAllowCommandFile, cfg.Trainers.AllowCommandFile},
	} {
		switch {
		case f.path == "":
		case !filepath.IsAbs(f.path):
			errs = append(errs, client.NewFieldError(f.flag, f.env, f.path, "a relative path: %s, so give it as an absolute path", everyNode))
		default:
			if _, err := os.Stat(f.path); err != nil {
				errs = append(errs, client.NewFieldError(f.flag, f.env, f.path, "%v: %s, and here", errors.Unwrap(err), everyNode))
			}
		}
	}
	if _, err := os.Stat(gleaner); err != nil {
		errs = append(errs, fmt.Errorf("the gleaner binary the pilots run, %s: %w (%s)", gleaner, err, everyNode))
	}
	for _, c := range cfg.Trainers.AllowCommands {
		if !strings.ContainsAny(c, "*?[") {
			if _, err := os.Stat(c); err != nil {
				logf("warning: --allow-command %s: %v here; the pilots' trainers run it on the compute nodes, at this path on every node", c, errors.Unwrap(err))
			}
		}
	}
	return gleaner, errors.Join(errs...)
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
	return pilot.Demand{Trials: d.Trials, Wanted: d.Wanted, MaxGrace: d.MaxGrace, Nodes: d.NodeIDs, NodesKnown: true}, nil
}

func (p poolClient) SetIdleUntil(ctx context.Context, until map[string]time.Time) error {
	err := p.c.SignalWorkflow(ctx, workflows.PoolWorkflowID(p.pool), "", workflows.SignalIdleEstimates, workflows.IdleEstimates{IdleUntil: until})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil // no pool: nobody to tell; the next change is sent again
	}
	return err
}

// pbsBin is the folder the worker's qstat is in, for the pilots to find
// theirs at the same path (pbs.Settings.Bin); empty if none is on PATH.
func pbsBin() string {
	qstat, err := exec.LookPath("qstat")
	if err != nil {
		return ""
	}
	return filepath.Dir(qstat)
}
