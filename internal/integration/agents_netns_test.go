package integration_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/nethosts"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Agents on separate hosts: each in a network namespace of its own, with
// its own IP, against a real dev server on the bridge. Trials need two or
// three nodes and every agent offers one, so every run spans hosts. One
// agent is SIGKILLed mid-campaign, one joins, one is SIGTERMed; every
// trial must complete once, from its checkpoints, none lost.
// hostsSetup is n namespaces, a dev server on every interface, a worker
// without nodes in the root namespace, and start(i), which starts agent
// "h<i>" (one CPU slot) in namespace i.
type hostsSetup struct {
	c      client.Client
	data   string
	agents map[string]*WorkerProcess
	start  func(i int) string
}

func setupHosts(t *testing.T, n int, tq, pool string) *hostsSetup {
	hosts := nethosts.Up(t, n)
	// On every interface: a dev server bound to one address other than
	// 127.0.0.1 answers health checks but not task queue calls.
	srv := startServer(t, devserver.Options{IP: "0.0.0.0"})
	_, port, _ := net.SplitHostPort(srv.Address())
	addr := net.JoinHostPort(hosts.BridgeIP(), port)
	h := &hostsSetup{c: srv.Client(), data: filepath.Join(t.TempDir(), "shared"), agents: map[string]*WorkerProcess{}}
	startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: tq, Nodes: "none", DataDir: h.data})
	h.start = func(i int) string {
		name, ip := hosts.Host(i)
		prefix := fmt.Sprintf("h%d", i)
		o := agentOpts(tq, pool, prefix, ip, h.data, 1, "ip", "netns", "exec", name)
		o.Address = addr
		h.agents[prefix] = startWorkerProcess(t, srv, o)
		return prefix
	}
	return h
}

// The PyTorch example trains one trial data-parallel over three hosts:
// each host's process reports its own address, and the all-reduce check
// of every host shows all of them took part.
func TestDDPAcrossHosts(t *testing.T) {
	const tq, pool = "ddp-netns", "ddp-netns"
	h := setupHosts(t, 3, tq, pool)
	for i := 1; i <= 3; i++ {
		h.start(i)
	}
	waitAgents(t, h.c, pool, "h1", "h2", "h3")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	spec := gleaner.CampaignSpec{
		Name: pool, Pool: pool,
		Command: []string{"python3", filepath.Join(root, "examples", "pytorch", "train.py")},
		Env:     map[string]string{"OMP_NUM_THREADS": "1"},
		Space: hpo.Space{testenv.Fixed("steps", "40"), testenv.Fixed("hidden", "16"), testenv.Fixed("batch", "48"),
			testenv.Fixed("report_every", "5"), testenv.Fixed("checkpoint_every", "20")},
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: 1, MaxConcurrent: 1},
		Resources: gleaner.Resources{MinNodes: 3, MaxNodes: 3},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(30 * time.Second), MaxRestarts: 0},
	}
	err = startCampaign(t, h.c, tq, spec).Get(testContext(t, 5*time.Minute), nil)
	if r := trialReports(t, h.c, pool, 1)[0]; err != nil || r.State != workflows.TrialCompleted || r.Restarts > 0 {
		logs, _ := filepath.Glob(filepath.Join(h.data, pool, "t00001", "runs", "*", "*trainer.log"))
		more, _ := filepath.Glob(filepath.Join(h.data, pool, "t00001", "runs", "*", "*", "trainer.log"))
		for _, p := range append(logs, more...) {
			b, _ := os.ReadFile(p)
			t.Logf("%s:\n%s", p, b)
		}
		t.Fatalf("campaign: %v; trial: %s (%s)", err, r.State, r.Error)
	} else {
		t.Logf("trial: %d rescales, %d restarts", r.Rescales, r.Restarts)
	}
	type info struct {
		NodeRank  int     `json:"node_rank"`
		NumHosts  int     `json:"num_hosts"`
		HostAddr  string  `json:"host_addr"`
		WorldSize int     `json:"world_size"`
		AllReduce float64 `json:"allreduce"`
	}
	reports, _ := filepath.Glob(filepath.Join(h.data, pool, "t00001", "runs", "*", "report.jsonl"))
	more, _ := filepath.Glob(filepath.Join(h.data, pool, "t00001", "runs", "*", "rank-*", "report.jsonl"))
	addrs := map[string]int{}
	for _, p := range append(reports, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			var l struct {
				Rendezvous *info `json:"rendezvous"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.Rendezvous == nil {
				continue
			}
			in := *l.Rendezvous
			t.Logf("%s: %+v", p, in)
			if in.NumHosts != 3 || in.WorldSize != 3 || in.AllReduce != 6 {
				t.Errorf("%s: %+v, want 3 hosts, world size 3, all-reduce 1+2+3 = 6", p, in)
			}
			addrs[in.HostAddr]++
		}
	}
	if len(addrs) != 3 {
		t.Errorf("ranks reported host addresses %v, want three distinct hosts", addrs)
	}
}

func TestAgentsOnSeparateHosts(t *testing.T) {
	const tq, pool = "agents-netns", "agents-netns"
	h := setupHosts(t, 4, tq, pool)
	c, data, agents, start := h.c, h.data, h.agents, h.start
	for i := 1; i <= 3; i++ {
		start(i)
	}
	waitAgents(t, c, pool, "h1", "h2", "h3")

	const trials = 3
	spec := gleaner.CampaignSpec{
		Name: pool, Pool: pool,
		Command:   []string{"/bin/sh", "-c", rankTrainer},
		Env:       map[string]string{"STEPS": "300"},
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: trials, MaxConcurrent: 1},
		Resources: gleaner.Resources{MinNodes: 2, MaxNodes: 3},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(10 * time.Second), MaxRestarts: 0},
	}
	run := startCampaign(t, c, tq, spec)
	first := workflows.TrialWorkflowID(run.GetID(), 1)
	holder := func(node string) string { p, _, _ := strings.Cut(node, "/"); return p }
	running := func(what string, minStep int64, without string) workflows.TrialStatus {
		return waitTrial(t, c, first, 2*time.Minute, what, func(s workflows.TrialStatus) bool {
			return s.State == workflows.TrialRunning && len(s.Nodes) >= 2 && s.Step >= minStep &&
				!slices.ContainsFunc(s.Nodes, func(n string) bool { return holder(n) == without })
		})
	}

	// SIGKILL an agent that holds a rank of the running trial.
	s := running("trial 1 to run on two hosts", 20, "")
	victim := holder(s.Nodes[len(s.Nodes)-1])
	killed := time.Now()
	agents[victim].Kill()
	var rest []string
	for _, p := range []string{"h1", "h2", "h3"} {
		if p != victim {
			rest = append(rest, p)
		}
	}
	waitAgents(t, c, pool, rest...)
	t.Logf("agent %s SIGKILLed: the pool dropped it after %v", victim, time.Since(killed).Round(100*time.Millisecond))
	s = running("trial 1 to run again without "+victim, s.Step+10, victim)
	t.Logf("trial 1 runs again on %v after %v", s.Nodes, time.Since(killed).Round(100*time.Millisecond))

	// An agent joining gets work at once.
	joined := time.Now()
	start(4)
	waitAgents(t, c, pool, append(slices.Clone(rest), "h4")...)
	st := waitTrial(t, c, first, 2*time.Minute, "trial 1 to get h4's node", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && slices.Contains(s.Nodes, "h4/0")
	})
	t.Logf("agent h4 joined: trial 1 runs on %v after %v", st.Nodes, time.Since(joined).Round(100*time.Millisecond))
	// Trained on it (the run's trainers are up) before the next fault.
	st = waitTrial(t, c, first, 2*time.Minute, "trial 1 to train on h4", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && slices.Contains(s.Nodes, "h4/0") && s.Step >= st.Step+10
	})

	// SIGTERM an agent with a rank: its trainer checkpoints before it exits.
	term := holder(st.Nodes[0])
	ckpts := filepath.Join(data, pool, "t00001", "checkpoints")
	before := newestMtime(ckpts)
	termAt := time.Now()
	agents[term].Stop(90 * time.Second)
	if code := agents[term].ExitCode(); code != 0 {
		t.Errorf("agent %s exited %d after SIGTERM", term, code)
	}
	if after := newestMtime(ckpts); !after.After(before) || after.Before(termAt) {
		t.Errorf("no checkpoint written between agent %s's SIGTERM (%v) and its exit (newest: %v)", term, termAt, after)
	}
	t.Logf("agent %s SIGTERMed: left after %v, its trainers checkpointed", term, time.Since(termAt).Round(100*time.Millisecond))

	campaignResult(t, run, 6*time.Minute)
	for _, r := range trialReports(t, c, pool, trials) {
		if r.State != workflows.TrialCompleted || r.Restarts != 0 {
			t.Errorf("trial %s: %s, %d restarts (%s)", r.TrialID, r.State, r.Restarts, r.Error)
		}
	}
	// Ranks of one run ran on distinct hosts: each wrote its own address.
	dirs, _ := filepath.Glob(filepath.Join(data, pool, "*", "runs", "*"))
	multi := 0
	for _, dir := range dirs {
		addrs := []string{readEnv(t, filepath.Join(dir, "env.txt"))["GLEANER_HOST_ADDR"]}
		ranks, _ := filepath.Glob(filepath.Join(dir, "rank-*", "env.txt"))
		for _, p := range ranks {
			addrs = append(addrs, readEnv(t, p)["GLEANER_HOST_ADDR"])
		}
		if len(ranks) == 0 {
			continue
		}
		multi++
		sorted := slices.Clone(addrs)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(addrs) || slices.Contains(addrs, "") {
			t.Errorf("%s: ranks on hosts %v, want distinct addresses", dir, addrs)
		}
	}
	if multi == 0 {
		t.Errorf("no run spanned hosts")
	}
	// No trial trained to its end twice.
	finished := map[string]int{}
	runLogs, _ := filepath.Glob(filepath.Join(data, pool, "*", "runs", "*", "run.json"))
	for _, p := range runLogs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), `"finished":true`) {
			finished[filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(p))))]++
		}
	}
	for trial, n := range finished {
		if n > 1 {
			t.Errorf("trial %s finished %d times", trial, n)
		}
	}
}

func newestMtime(dir string) time.Time {
	var newest time.Time
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
	}
	return newest
}
