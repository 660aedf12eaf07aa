package cli

import (
	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/internal/slurmdemo"
)

func newPBSDemoCmd() *cobra.Command {
	o := &slurmDemoOptions{name: "pbs-demo", set: slurmdemo.Settings{PBS: &slurmdemo.PBSSettings{}}}
	s := &o.set
	cmd := &cobra.Command{
		Use:   "pbs-demo",
		Short: "The live BFTrainer scenario on PBS: a real batch workload replayed into OpenPBS, its holes harvested by an HPO campaign",
		Long: `slurm-demo's scenario on the one-machine OpenPBS cluster of
scripts/openpbs/cluster.sh (docs/pbs.md, docs/benchmarks.md "PBS: live
harvest"), as root:

  1. the cluster is started, or found running (cluster.sh start is
     idempotent), and drained of its jobs; it is left running at the end;
  2. a window of a real job log (--swf, --offset, --jobs), sizes scaled to
     its vnodes (--nodes) and time compressed (--compression), replayed
     into the queue "workq" with qsub (one 1-cpu chunk per node,
     place=excl), each job a real process;
  3. first without Gleaner (the baseline pass; the cluster is drained
     between passes, not restarted), then with a Temporal dev server, a
     gleaner worker with --nodes pbs:queue=gleaner,… whose pilots harvest
     the holes, and an HPO campaign of real trainers (examples/go-mlp);
  4. the monitor samples qstat -x -f -F json and the pool every --sample;
     a pilot PBS requeued counts as preempted, its next run as another
     pilot;
  5. the same measurements as slurm-demo, printed and written to
     --out/result.json, with the simulator's prediction on the same idle
     events.

Ctrl-C stops everything it started (jobs, worker and pilots, server),
still writes what was measured, and exits 130 (143 for SIGTERM).`,
		Example: `  go build -o bin/gleaner ./cmd/gleaner && go build -o bin/go-mlp ./examples/go-mlp
  ./bin/gleaner pbs-demo --baseline=false --jobs 60 --compression 300   # the lighter pass`,
		Args: cobra.NoArgs,
		RunE: o.runE,
	}
	f := cmd.Flags()
	f.IntVar(&s.Plan.ClusterNodes, "nodes", 8, "the cluster's vnodes (the plan is scaled to them; cluster.sh's GLEANER_PBS_VNODES)")
	f.StringVar(&s.PBS.Script, "cluster-script", "scripts/openpbs/cluster.sh", "the script that starts the cluster (start; it is left running)")
	f.StringVar(&s.PBS.Exec, "pbs-exec", "/opt/pbs", "where OpenPBS is installed (PBS_EXEC)")
	f.StringVar(&s.BatchPartition, "batch-queue", "workq", "the queue the batch jobs are replayed into")
	f.StringVar(&s.PilotPartition, "pilot-queue", "gleaner", "the preemptible queue the pilots run in")
	f.StringVar(&s.Pool, "pool", "pbs-demo", "pool the pilots' agents join")
	f.StringVar(&s.Out, "out", "bin/pbs-demo", "directory for result.json, idle-events.csv, the logs and the trials' data")
	o.addFlags(cmd)
	return cmd
}
