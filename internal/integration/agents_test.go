package integration_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// rankTrainer is a trainer script for multi-host runs: every rank writes
// its rendezvous environment to env.txt in its run directory; rank 0
// reports, checkpoints on SIGTERM and finishes after `steps` steps of
// 100 ms.
const rankTrainer = `
env | grep -E '^(GLEANER_|MASTER_|WORLD_SIZE=|RANK=|LOCAL_RANK=|GLOO_)' | sort > "$(dirname "$GLEANER_REPORT_FILE")/env.txt"
i=${GLEANER_RESUME_FROM##*/c}; i=${i:-0}
trap 'touch "$GLEANER_CHECKPOINT_DIR/c$i"; echo "{\"samples\": $i, \"step\": $i, \"checkpoint\": \"$GLEANER_CHECKPOINT_DIR/c$i\"}" >> "$GLEANER_REPORT_FILE"; exit 0' TERM
while [ "$i" -lt "$STEPS" ]; do
  i=$((i+1))
  [ "$GLEANER_NODE_RANK" = 0 ] && echo "{\"samples\": $i, \"step\": $i, \"metrics\": {\"val_loss\": 1}}" >> "$GLEANER_REPORT_FILE"
  sleep 0.1 & wait $!
done
[ "$GLEANER_NODE_RANK" = 0 ] && echo "{\"samples\": $i, \"step\": $i, \"metrics\": {\"val_loss\": 0.5}}" >> "$GLEANER_REPORT_FILE"
exit 0
`

// agentOpts are the options of agent prefix on a pool, queue tq, data dir.
func agentOpts(tq, pool, prefix, addr, data string, slots int, wrap ...string) WorkerProcessOptions {
	return WorkerProcessOptions{
		TaskQueue: tq,
		DataDir:   data,
		Agent: []string{"--pool", pool, "--slots", itoa(slots), "--gpus", "none", "--node-prefix", prefix,
			"--advertise-addr", addr, "--stop-timeout", "60s", "--log-level", "warn"},
		Wrap: wrap,
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func poolStatus(t testing.TB, c client.Client, pool string) (workflows.PoolStatus, error) {
	v, err := c.QueryWorkflow(testContext(t, 10*time.Second), workflows.PoolWorkflowID(pool), "", workflows.QueryStatus)
	if err != nil {
		return workflows.PoolStatus{}, err
	}
	var s workflows.PoolStatus
	return s, v.Get(&s)
}

func waitAgents(t testing.TB, c client.Client, pool string, want ...string) workflows.PoolStatus {
	t.Helper()
	var last workflows.PoolStatus
	waitFor(t, time.Minute, "the pool's agents to be "+strings.Join(want, ","), func() (bool, error) {
		s, err := poolStatus(t, c, pool)
		if err != nil {
			return false, err
		}
		last = s
		var got []string
		for _, a := range s.Agents {
			got = append(got, a.Agent)
		}
		return strings.Join(got, ",") == strings.Join(want, ","), nil
	})
	return last
}

// readEnv reads an env.txt a rank wrote.
func readEnv(t testing.TB, path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		env[k] = v
	}
	return env
}

// Agents on one machine (one network): trials that need two or three
// nodes, one slot per agent, so every run spans hosts; the ranks get a
// consistent rendezvous, rank 0 reports, and a join and a leave reach the
// pool at once.
func TestAgentsRunTrialsAcrossHosts(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	data := filepath.Join(t.TempDir(), "shared")
	const tq, pool = "agents-local", "agents-local"
	startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: tq, Nodes: "none", DataDir: data})
	for _, p := range []string{"h1", "h2", "h3"} {
		startWorkerProcess(t, srv, agentOpts(tq, pool, p, "127.0.0.1", data, 1))
	}
	waitAgents(t, srv.Client(), pool, "h1", "h2", "h3")

	spec := gleaner.CampaignSpec{
		Name: pool, Pool: pool,
		Command:   []string{"/bin/sh", "-c", rankTrainer},
		Env:       map[string]string{"STEPS": "60"},
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: 2, MaxConcurrent: 1},
		Resources: gleaner.Resources{MinNodes: 2, MaxNodes: 3},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(5 * time.Second), MaxRestarts: 1},
	}
	run := startCampaign(t, srv.Client(), tq, spec)
	res := campaignResult(t, run, 4*time.Minute)
	reports := trialReports(t, srv.Client(), pool, 2)
	for _, r := range reports {
		if r.State != workflows.TrialCompleted {
			t.Errorf("trial %s: %s (%s)", r.TrialID, r.State, r.Error)
		}
	}
	_ = res
	// Every run's ranks: distinct agents, one rendezvous.
	runs, _ := filepath.Glob(filepath.Join(data, pool, "*", "runs", "*"))
	sort.Strings(runs)
	multi := 0
	for _, dir := range runs {
		rank0 := readEnv(t, filepath.Join(dir, "env.txt"))
		if rank0 == nil {
			continue
		}
		hosts := rank0["GLEANER_NUM_HOSTS"]
		if hosts == "1" {
			continue
		}
		multi++
		ranks, _ := filepath.Glob(filepath.Join(dir, "rank-*", "env.txt"))
		if len(ranks)+1 != int(hosts[0]-'0') {
			t.Errorf("%s: %s hosts but %d rank directories", dir, hosts, len(ranks))
		}
		for _, p := range ranks {
			e := readEnv(t, p)
			for _, k := range []string{"GLEANER_MASTER_ADDR", "GLEANER_MASTER_PORT", "MASTER_PORT", "WORLD_SIZE", "GLEANER_NODES", "GLEANER_NUM_HOSTS"} {
				if e[k] != rank0[k] || e[k] == "" {
					t.Errorf("%s: %s=%q, rank 0 has %q", p, k, e[k], rank0[k])
				}
			}
			if e["GLEANER_NODE_RANK"] == "0" || e["RANK"] != e["GLEANER_NODE_RANK"] {
				t.Errorf("%s: node rank %q, RANK %q", p, e["GLEANER_NODE_RANK"], e["RANK"])
			}
		}
	}
	if multi == 0 {
		t.Errorf("no run spanned several hosts (runs: %v)", runs)
	}
}

// An agent whose data directory is not the one the pool's other agents
// use is refused, and exits with an error that says so.
func TestAgentWithUnsharedDataDirIsRefused(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	const tq, pool = "agents-refused", "agents-refused"
	startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: tq, Nodes: "none"})
	startWorkerProcess(t, srv, agentOpts(tq, pool, "h1", "127.0.0.1", filepath.Join(t.TempDir(), "shared"), 1))
	waitAgents(t, srv.Client(), pool, "h1")

	elsewhere := filepath.Join(t.TempDir(), "not-shared")
	cmd := exec.CommandContext(testContext(t, 2*time.Minute), gleanerBinary(t), "agent",
		"--address", srv.Address(), "--namespace", srv.Namespace(), "--task-queue", tq, "--data-dir", elsewhere,
		"--pool", pool, "--slots", "1", "--gpus", "none", "--node-prefix", "h2", "--advertise-addr", "127.0.0.1")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("an agent with another data directory ran and exited 0:\n%s", out)
	}
	for _, want := range []string{"refused agent h2", elsewhere, "agent h1", "shared data directory"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not name %q:\n%s", want, out)
		}
	}
	if s, err := poolStatus(t, srv.Client(), pool); err != nil || len(s.Agents) != 1 {
		t.Errorf("pool agents %+v (%v), want h1 only", s.Agents, err)
	}
}

// A pool that drops a live agent (its lease timed out while the server
// was away longer than the agent timeout) gets it back: the agent, which
// hears no lease, joins again.
func TestAgentJoinsAgainAfterAServerOutage(t *testing.T) {
	srv := startServer(t, devserver.Options{DBFile: filepath.Join(t.TempDir(), "temporal.db")})
	const tq, pool = "agents-outage", "agents-outage"
	startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: tq, Nodes: "none"})
	a := startWorkerProcess(t, srv, agentOpts(tq, pool, "h1", "127.0.0.1", filepath.Join(t.TempDir(), "shared"), 1))
	waitAgents(t, srv.Client(), pool, "h1")

	// Down for longer than the pool's agent timeout (10 s): the lease's
	// heartbeat timer fires when the server is back.
	outage := workflows.DefaultAgentTimeout + 5*time.Second
	err := srv.RestartAfter(testContext(t, 2*time.Minute), func(ctx context.Context) error {
		timer := time.NewTimer(outage)
		defer timer.Stop()
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitFor(t, 2*time.Minute, "the agent to be in the pool again after the outage", func() (bool, error) {
		s, err := poolStatus(t, srv.Client(), pool)
		if err != nil {
			return false, nil // the pool's workflow task may not have run yet
		}
		return len(s.Agents) == 1 && len(s.Nodes) == 1 && strings.Contains(a.Log(), "joining again"), nil
	})
	t.Logf("the agent was in the pool again %v after the server came back", time.Since(back).Round(100*time.Millisecond))
}
