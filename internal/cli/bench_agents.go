package cli

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/internal/benchrun"
)

func newBenchAgentsCmd() *cobra.Command {
	o := benchrun.AgentsOptions{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Measure a pool of many agents: join → allocation, signals per second, history per hour",
		Long: `Starts a Temporal dev server and an in-process worker running the pool
(with the production pool defaults and no nodes of its own), registers
--trials trials with the pool directly (fake trial workflow ids: nothing
trains, the pool's assignment signals to them fail and are dropped; this
measures the control plane, not trainers), then runs --agents lightweight
agents in this process — one worker each on its own task queue, sharing one
client, serving the real lease activity — with --slots CPU nodes each.

All agents join at once (SignalWithStart, as gleaner agent does). It
reports the time from the last join to the pool taking it and to the first
allocation over all nodes; then every agent re-sends its join --burst times
at once and it reports how many signals per second the pool took; then it
counts the pool's history over --duration of steady state (across
continue-as-new) and extrapolates events, bytes and continue-as-new per
hour, against Temporal's per-run limits.

Run it from the gleaner checkout (see bench campaign). Progress goes to
stderr; --json prints one object on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := benchrun.RunAgents(ctx, o)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), asJSON, rep, rep.WriteText)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Agents, "agents", 100, "lightweight agents in this process")
	f.IntVar(&o.Slots, "slots", 10, "CPU nodes per agent")
	f.IntVar(&o.Trials, "trials", 50, "trials registered with the pool")
	f.IntVar(&o.Burst, "burst", 1, "how many times every agent re-sends its join in the signal burst")
	f.DurationVar(&o.Duration, "duration", benchrun.AgentsDefaultDuration, "steady-state window over which the pool's history is counted")
	f.DurationVar(&o.Timeout, "timeout", 0, "how long to wait for each phase (default 2m)")
	f.DurationVar(&o.StartSpread, "start-spread", 10*time.Second, "spread the agents' worker starts over this long (0: all at once); the joins go at once")
	f.DurationVar(&o.HeartbeatThrottle, "heartbeat-throttle", benchrun.AgentHeartbeatThrottle, "the agents' workers' heartbeat throttle (gleaner agent uses 500ms); a heartbeat RPC gets max(this, 1s)")
	f.StringVar(&o.RepoDir, "repo", "", "the gleaner checkout to build go-mlp from (default: go list -m)")
	f.StringArrayVar(&o.ServerConfig, "server-config", nil, "dev server dynamic config KEY=VALUE (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
