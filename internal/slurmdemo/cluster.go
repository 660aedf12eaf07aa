package slurmdemo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/slurm"
)

// ClusterSettings start a cluster with deploy/slurm-cluster.sh.
type ClusterSettings struct {
	// Script is the path of deploy/slurm-cluster.sh.
	Script string
	// Dir is the cluster's directory (short: munge's socket lives there).
	Dir string
	// Nodes, Grace, BackfillInterval and MinJobAge are the script's
	// GLEANER_SLURM_* settings.
	Nodes            int
	Grace            time.Duration
	BackfillInterval time.Duration
	MinJobAge        time.Duration
	// SignalUser sets SlurmctldParameters=preempt_send_user_signal: a
	// preempted pilot's agent gets its --signal (SIGTERM) at once rather
	// than when GraceTime has run out.
	SignalUser bool
}

// Cluster is a Slurm cluster the demo runs on.
type Cluster struct {
	// env is what Slurm's commands need (SLURM_CONF=...); Run runs them
	// (a slurm.ExecRunner with env).
	env []string
	Run slurm.Runner
	set ClusterSettings
	// started: this process started it and stops it.
	started bool
}

// StartCluster starts a cluster with the script (its progress on
// stderr); Stop stops it.
func StartCluster(ctx context.Context, set ClusterSettings, stderr io.Writer) (*Cluster, error) {
	script, err := filepath.Abs(set.Script)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("cluster script: %w (run from the repository root, or give --cluster-script)", err)
	}
	set.Script = script
	c := &Cluster{set: set}
	cmd := exec.CommandContext(ctx, "bash", script, "start", set.Dir)
	cmd.Env = append(os.Environ(), set.env()...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	// Interrupted, the script is killed; a child of it still holding its
	// output does not keep the demo waiting.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		// Interrupted half way (Ctrl-C): whatever started goes. (Not on
		// other failures: DIR may hold another cluster the script refused
		// to touch.)
		if ctx.Err() != nil {
			c.started = true
			_ = c.Stop(stderr)
			return nil, fmt.Errorf("starting the Slurm cluster (%s start %s): %w", script, set.Dir, ctx.Err())
		}
		return nil, fmt.Errorf("starting the Slurm cluster (%s start %s): %w", script, set.Dir, err)
	}
	c.started = true
	for _, line := range strings.Split(stdout.String(), "\n") {
		if kv, ok := strings.CutPrefix(line, "export "); ok {
			c.env = append(c.env, kv)
		}
	}
	if len(c.env) == 0 {
		_ = c.Stop(stderr)
		return nil, fmt.Errorf("starting the Slurm cluster: %s printed no export lines", script)
	}
	c.Run = slurm.ExecRunner{Env: c.env}
	return c, nil
}

// UseCluster is a running cluster whose slurm.conf is conf; Stop leaves
// it running.
func UseCluster(conf string) *Cluster {
	env := []string{"SLURM_CONF=" + conf}
	return &Cluster{env: env, Run: slurm.ExecRunner{Env: env}}
}

func (s ClusterSettings) env() []string {
	secs := func(d time.Duration) string { return strconv.Itoa(int(d.Round(time.Second) / time.Second)) }
	env := []string{"GLEANER_SLURM_NODES=" + strconv.Itoa(s.Nodes)}
	if s.Grace > 0 {
		env = append(env, "GLEANER_SLURM_GRACE="+secs(s.Grace))
	}
	if s.BackfillInterval > 0 {
		env = append(env, "GLEANER_SLURM_BF_INTERVAL="+secs(s.BackfillInterval))
	}
	if s.MinJobAge > 0 {
		env = append(env, "GLEANER_SLURM_MIN_JOB_AGE="+secs(s.MinJobAge))
	}
	if s.SignalUser {
		env = append(env, "GLEANER_SLURM_SIGNAL_USER=1")
	} else {
		env = append(env, "GLEANER_SLURM_SIGNAL_USER=0")
	}
	return env
}

// Stop stops a cluster this process started (every job cancelled, every
// daemon and job process gone, its directory removed).
func (c *Cluster) Stop(stderr io.Writer) error {
	if !c.started {
		return nil
	}
	c.started = false
	cmd := exec.Command("bash", c.set.Script, "stop", c.set.Dir)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("stopping the Slurm cluster (%s stop %s): %w", c.set.Script, c.set.Dir, err)
	}
	return nil
}

// Restart stops and starts a cluster this process started: a fresh
// controller (job ids from 1, no history) for the next pass.
func (c *Cluster) Restart(ctx context.Context, stderr io.Writer) error {
	if !c.started {
		return nil
	}
	if err := c.Stop(stderr); err != nil {
		return err
	}
	n, err := StartCluster(ctx, c.set, stderr)
	if err != nil {
		return err
	}
	*c = *n
	return nil
}

// Nodes are the cluster's nodes, in natural order (g2 before g10).
func (c *Cluster) Nodes(ctx context.Context) ([]string, error) {
	out, err := c.Run.Run(ctx, "sinfo", "-h", "-N", "-o", "%N")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var nodes []string
	for _, n := range strings.Fields(string(out)) {
		if !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return naturalLess(nodes[i], nodes[j]) })
	if len(nodes) == 0 {
		return nil, fmt.Errorf("sinfo lists no node")
	}
	return nodes, nil
}

// naturalLess orders names by their prefix, then their number suffix.
func naturalLess(a, b string) bool {
	split := func(s string) (string, int) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n, _ := strconv.Atoi(s[i:])
		return s[:i], n
	}
	pa, na := split(a)
	pb, nb := split(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

// describe reads Slurm's configuration and the pilots' partition.
func (c *Cluster) describe(ctx context.Context, partition string) (slurm.Config, slurm.Partition, error) {
	out, err := c.Run.Run(ctx, "scontrol", "show", "config")
	if err != nil {
		return slurm.Config{}, slurm.Partition{}, err
	}
	conf, err := slurm.ParseConfig(out)
	if err != nil {
		return conf, slurm.Partition{}, err
	}
	out, err = c.Run.Run(ctx, "scontrol", "show", "partition", partition, "-o")
	if err != nil {
		return conf, slurm.Partition{}, err
	}
	parts, err := slurm.ParsePartitions(out)
	if err != nil {
		return conf, slurm.Partition{}, err
	}
	if len(parts) != 1 {
		return conf, slurm.Partition{}, fmt.Errorf("partition %s: scontrol listed %d", partition, len(parts))
	}
	return conf, parts[0], nil
}

// Describe reads Slurm's configuration and the pilots' partition.
func (c *Cluster) Describe(ctx context.Context, partition string) (ClusterInfo, error) {
	conf, part, err := c.describe(ctx, partition)
	if err != nil {
		return ClusterInfo{}, err
	}
	return ClusterInfo{
		Grace: part.GraceTime, PlanInterval: conf.BackfillInterval,
		Version: "Slurm " + conf.Version,
		Line: fmt.Sprintf("partition %s GraceTime %v, KillWait %v, bf_interval %v, preempt_send_user_signal %s",
			part.Name, part.GraceTime, conf.KillWait, conf.BackfillInterval, onOff(conf.SendsUserSignal())),
		Slurm: &SlurmSummary{Version: conf.Version, GraceS: part.GraceTime.Seconds(), KillWaitS: conf.KillWait.Seconds(),
			BFInterval: conf.BackfillInterval.Seconds(), SignalUser: conf.SendsUserSignal()},
	}, nil
}

// Drain cancels the jobs of partition (every partition when empty) and
// waits, up to timeout, until none is pending or holds a node. It returns
// how many jobs it cancelled.
func (c *Cluster) Drain(ctx context.Context, partition string, timeout time.Duration) (int, error) {
	return drain(ctx, timeout, 200*time.Millisecond, "scancel", func() ([]string, error) {
		out, err := c.Run.Run(ctx, "squeue", "-h", "-o", slurm.PilotFormat)
		if err != nil {
			return nil, err
		}
		jobs, err := slurm.ParseJobs(out, time.Local)
		if err != nil {
			return nil, err
		}
		var left []string
		for _, j := range jobs {
			if (partition == "" || j.Partition == partition) && (Active(j.State) || j.State == "PENDING") {
				left = append(left, j.ID)
			}
		}
		return left, nil
	}, func(ids []string) error {
		_, err := c.Run.Run(ctx, "scancel", ids...)
		return err
	})
}

// drain lists the jobs left and cancels them, again each round (a job
// that came meanwhile goes too) every poll, until none is left or timeout
// has passed; it returns how many jobs it cancelled. cancel names the
// scheduler's command in the timeout's error.
func drain(ctx context.Context, timeout, poll time.Duration, cancel string, list func() ([]string, error), del func([]string) error) (int, error) {
	deadline := time.Now().Add(timeout)
	cancelled := map[string]bool{}
	for {
		left, err := list()
		if err != nil {
			return len(cancelled), err
		}
		if len(left) == 0 {
			return len(cancelled), nil
		}
		if err := del(left); err != nil {
			return len(cancelled), err
		}
		for _, id := range left {
			cancelled[id] = true
		}
		if time.Now().After(deadline) {
			return len(cancelled), fmt.Errorf("%d jobs still there %v after %s", len(left), timeout, cancel)
		}
		if err := (WallClock{}).Sleep(ctx, poll); err != nil {
			return len(cancelled), err
		}
	}
}

// SaveLog copies slurmctld's log of a cluster this process started to
// dst (the script removes it with the cluster); it returns false when
// there is none.
func (c *Cluster) SaveLog(dst string) bool {
	if !c.started {
		return false
	}
	b, err := os.ReadFile(filepath.Join(c.set.Dir, "log", "slurmctld.log"))
	if err != nil {
		return false
	}
	return os.WriteFile(dst, b, 0o644) == nil
}
