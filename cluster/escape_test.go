package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the processes of an escaping trainer, chosen
// by envHelper (TestHelperLauncher's "worker" is the older helper):
//
//   - "escape": runs the escapee named by envEscapee in a new session
//     (setsid) without waiting for it, so it is double-forked too, and
//     exits once the escapee is ready; "escapee-clearenv" is "escapee"
//     run with an environment of one variable besides envHelper,
//     GLEANER_CHECKPOINT_DIR, so without the run token;
//   - "escapee": writes its pid to $GLEANER_CHECKPOINT_DIR/escapee.pid,
//     ignores SIGTERM and SIGHUP, and idles until killed;
//   - "escapee-term": the same, but on SIGTERM writes escapee.term and
//     exits 0, so a test can see that a graceful stop reached it;
//   - "escape-worker": a stand-in worker that launches escapeScript with
//     the checkpoint dir in envTestCkpt, prints "ready" once the escapee
//     runs, and waits to be SIGKILLed.
const (
	envHelper   = "GLEANER_CLUSTER_HELPER"
	envTestBin  = "GLEANER_CLUSTER_TEST_BIN"
	envEscapee  = "GLEANER_CLUSTER_ESCAPEE" // the mode "escape" starts
	envTestCkpt = "GLEANER_CLUSTER_TEST_CKPT"
	envNoCgroup = "GLEANER_CLUSTER_TEST_NO_CGROUP"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "escape":
		os.Exit(runEscape())
	case "escapee", "escapee-term":
		os.Exit(runEscapee(os.Getenv(envHelper) == "escapee-term"))
	case "escape-worker":
		os.Exit(runEscapeWorker())
	}
	os.Exit(m.Run())
}

func runEscape() int {
	mode := os.Getenv(envEscapee)
	if mode == "" {
		mode = "escapee"
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envHelper+"="+mode)
	if mode == "escapee-clearenv" {
		cmd.Env = []string{envHelper + "=escapee", "GLEANER_CHECKPOINT_DIR=" + os.Getenv("GLEANER_CHECKPOINT_DIR")}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "escape:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "escape:", err)
		return 2
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		fmt.Fprintf(os.Stderr, "escape: escapee said %q, %v\n", line, err)
		return 2
	}
	return 0 // without waiting: the escapee is orphaned
}

func runEscapee(onTerm bool) int {
	dir := os.Getenv("GLEANER_CHECKPOINT_DIR")
	if onTerm {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() {
			<-term
			_ = os.WriteFile(filepath.Join(dir, "escapee.term"), nil, 0o644)
			os.Exit(0)
		}()
		signal.Ignore(syscall.SIGHUP)
	} else {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
	}
	tmp := filepath.Join(dir, "escapee.pid.tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "escapee:", err)
		return 2
	}
	if err := os.Rename(tmp, filepath.Join(dir, "escapee.pid")); err != nil {
		fmt.Fprintln(os.Stderr, "escapee:", err)
		return 2
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour) // idling until killed, not synchronising
	}
}

func runEscapeWorker() int {
	l, err := NewLocalLauncher(LocalHost{Slots: 1})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	if os.Getenv(envNoCgroup) != "" {
		disableCgroups(l)
	}
	spec := LaunchSpec{
		TrialID:       "t-leftover",
		Command:       []string{"/bin/sh", "-c", escapeScript(trapScript("exit 0"))},
		Env:           map[string]string{envHelper: "escape", envTestBin: testBinary(nil)},
		Nodes:         []string{SlotID(0)},
		CheckpointDir: os.Getenv(envTestCkpt),
		RunDir:        filepath.Join(os.Getenv(envTestCkpt), "..", "run-worker"),
	}
	p, err := l.Launch(context.Background(), spec)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	deadline := time.Now().Add(testTimeout)
	for {
		if _, err := os.Stat(filepath.Join(spec.CheckpointDir, "ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("error: trainer not ready")
			return 2
		}
		time.Sleep(5 * time.Millisecond) // polling a real condition
	}
	fmt.Println("pid", p.(*LocalProcess).PID())
	<-p.Done() // until killed
	return 0
}

// escapeScript is a trainer script that first starts an escapee (in a new
// session, orphaned) and then runs rest.
func escapeScript(rest string) string {
	return `"$` + envTestBin + `" || exit 9; ` + rest
}

// escapeSpec is a spec whose trainer starts an escapee of the given mode
// ("escapee" or "escapee-term"), then runs rest.
func escapeSpec(t *testing.T, mode, rest string) LaunchSpec {
	t.Helper()
	spec := shSpec(t, escapeScript(rest))
	spec.Env = map[string]string{envHelper: "escape", envEscapee: mode, envTestBin: testBinary(t)}
	return spec
}

// escapeePID reads the escapee's pid and checks that it really left the
// trainer's session and process group.
func escapeePID(t *testing.T, spec LaunchSpec, trainer int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(spec.CheckpointDir, "escapee.pid"))
	if err != nil {
		t.Fatalf("escapee pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killEscapee(pid) })
	if _, pg, ok := procStat(pid); ok && pg == trainer {
		t.Fatalf("escapee %d is in the trainer's group %d: it did not escape", pid, trainer)
	}
	return pid
}

// killEscapee kills pid if a failed test left it running and it still is
// an escapee (its pid not reused).
func killEscapee(pid int) {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if mode, _ := environValue(env, envHelper); err == nil && strings.HasPrefix(mode, "escapee") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// alive reports whether pid runs (a zombie is dead: only its parent,
// maybe init, has yet to reap it).
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

// assertGone checks, once the trainer's Done is closed, that the escapee
// is dead: Done waits for that.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if alive(pid) {
		t.Errorf("escapee %d alive after the trainer's Done", pid)
	}
}

// launchers returns one launcher per way of tracking a trainer's
// processes that this machine offers: run token only, and with a cgroup
// per run where cgroup v2 is writable here.
func launchers(t *testing.T) map[string]*LocalLauncher {
	t.Helper()
	token := newLauncher(t, 1)
	disableCgroups(token)
	ls := map[string]*LocalLauncher{"token": token}
	if cg := newLauncher(t, 1); cg.Cgroup() != "" {
		ls["cgroup"] = cg
	} else {
		t.Log("no writable cgroup v2 with cgroup.kill here: testing the run token only")
	}
	return ls
}

func disableCgroups(l *LocalLauncher) { l.cgroups = cgroupHome{} }

// launchIn is launch, checking that the run got a cgroup exactly when
// its launcher offers them, and that once Done is closed the cgroup is
// removed and no process of the run is left alive.
func launchIn(t *testing.T, l *LocalLauncher, spec LaunchSpec) *LocalProcess {
	t.Helper()
	p := launch(t, l, spec)
	if (p.Cgroup() != "") != (l.Cgroup() != "") {
		t.Fatalf("run cgroup %q under launcher cgroup %q", p.Cgroup(), l.Cgroup())
	}
	t.Cleanup(func() {
		p.Stop(0) // a no-op unless the test failed with the trainer running
		if u := p.Unkilled(); u != nil {
			t.Errorf("Unkilled() = %v, want none", u)
		}
		if _, err := os.Stat(p.Cgroup()); p.Cgroup() != "" && !os.IsNotExist(err) {
			t.Errorf("run cgroup %s not removed: %v", p.Cgroup(), err)
		}
	})
	return p
}

// A process the trainer starts in a new session (setsid), orphaned, and
// deaf to SIGTERM, must not outlive the trainer, however the trainer ends.
func TestSetsidChildIsStoppedWithTrainer(t *testing.T) {
	for name, l := range launchers(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("exit 0", func(t *testing.T) {
				spec := escapeSpec(t, "escapee", "exit 0")
				p := launchIn(t, l, spec)
				if st := waitExit(t, p); !st.OK() {
					t.Fatalf("exit %+v, want OK", st)
				}
				assertGone(t, escapeePID(t, spec, p.PID()))
			})
			t.Run("exit 3", func(t *testing.T) {
				spec := escapeSpec(t, "escapee", "exit 3")
				p := launchIn(t, l, spec)
				if st := waitExit(t, p); st.Code != 3 {
					t.Fatalf("exit %+v, want code 3", st)
				}
				assertGone(t, escapeePID(t, spec, p.PID()))
			})
			t.Run("stopped", func(t *testing.T) {
				spec := escapeSpec(t, "escapee", trapScript("exit 0"))
				p := launchIn(t, l, spec)
				waitReady(t, spec)
				pid := escapeePID(t, spec, p.PID())
				if !alive(pid) {
					t.Fatalf("escapee %d not running before Stop", pid)
				}
				if st := p.Stop(testTimeout); !st.OK() || st.Killed {
					t.Errorf("Stop = %+v, want a graceful exit of the trainer", st)
				}
				assertGone(t, pid)
			})
			t.Run("stop escalates", func(t *testing.T) {
				spec := escapeSpec(t, "escapee", trapScript(""))
				p := launchIn(t, l, spec)
				waitReady(t, spec)
				pid := escapeePID(t, spec, p.PID())
				if st := p.Stop(50 * time.Millisecond); !st.Killed {
					t.Errorf("Stop = %+v, want Killed", st)
				}
				assertGone(t, pid)
			})
			t.Run("escapee clears its environment", func(t *testing.T) {
				if l.Cgroup() == "" {
					t.Skip("only a cgroup tracks a process without the run token")
				}
				spec := escapeSpec(t, "escapee-clearenv", "exit 0")
				p := launchIn(t, l, spec)
				waitExit(t, p)
				assertGone(t, escapeePID(t, spec, p.PID()))
			})
			t.Run("stop sends SIGTERM first", func(t *testing.T) {
				// The trainer checkpoints only once its escapee has seen
				// SIGTERM; were it never sent, Stop would have to kill.
				term := `"$GLEANER_CHECKPOINT_DIR/escapee.term"`
				spec := escapeSpec(t, "escapee-term", trapScript(`while [ ! -e `+term+` ]; do sleep 0.01; done; exit 0`))
				p := launchIn(t, l, spec)
				waitReady(t, spec)
				pid := escapeePID(t, spec, p.PID())
				if st := p.Stop(testTimeout); !st.OK() || st.Killed {
					t.Errorf("Stop = %+v, want a graceful exit: the escapee got no SIGTERM", st)
				}
				assertGone(t, pid)
			})
		})
	}
}

// When the worker is SIGKILLed, Pdeathsig kills the trainer but not the
// processes it started; the next launch of the same trial (same checkpoint
// directory) must kill them before it starts the new trainer.
func TestLaunchKillsLeftoversOfADeadWorker(t *testing.T) {
	for name, noCgroup := range map[string]bool{"default": false, "no cgroup": true} {
		t.Run(name, func(t *testing.T) {
			ckpt := filepath.Join(t.TempDir(), "ckpt")
			worker := exec.Command(os.Args[0])
			worker.Env = append(os.Environ(), envHelper+"=escape-worker", envTestCkpt+"="+ckpt)
			if noCgroup {
				worker.Env = append(worker.Env, envNoCgroup+"=1")
			}
			worker.Stderr = os.Stderr
			out, err := worker.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := worker.Start(); err != nil {
				t.Fatal(err)
			}
			defer worker.Wait()
			defer worker.Process.Kill()
			trainer := 0
			sc := bufio.NewScanner(out)
			for trainer == 0 && sc.Scan() {
				if rest, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
					trainer, _ = strconv.Atoi(rest)
				} else {
					t.Fatalf("helper worker: %s", sc.Text())
				}
			}
			if trainer == 0 {
				t.Fatalf("helper worker printed no trainer pid (%v)", sc.Err())
			}
			spec := LaunchSpec{CheckpointDir: ckpt}
			escapee := escapeePID(t, spec, trainer)
			if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the trainer to die with its worker", func() bool { return !alive(trainer) })
			if !alive(escapee) {
				t.Fatalf("escapee %d died with the worker: nothing left over to test", escapee)
			}

			l := newLauncher(t, 1)
			if noCgroup {
				disableCgroups(l)
			}
			next := shSpec(t, "exit 0")
			next.CheckpointDir = ckpt
			p := launch(t, l, next)
			if alive(escapee) {
				t.Errorf("escapee %d of the dead worker's run still alive after Launch", escapee)
			}
			if got := p.LeftoversKilled(); !slices.Contains(got, escapee) {
				t.Errorf("LeftoversKilled() = %v, want it to list the escapee %d", got, escapee)
			}
			waitExit(t, p)
			if alive(escapee) {
				t.Errorf("escapee %d still alive", escapee)
				_ = syscall.Kill(escapee, syscall.SIGKILL)
			}
		})
	}
}

// Two launches of one trial on one host would write one checkpoint
// directory: the second kills the first, leader and escapee alike.
func TestLaunchTwiceKillsTheFirstRun(t *testing.T) {
	for name, l := range launchers(t) {
		t.Run(name, func(t *testing.T) {
			first := escapeSpec(t, "escapee", trapScript("exit 0"))
			p1 := launchIn(t, l, first)
			waitReady(t, first)
			escapee := escapeePID(t, first, p1.PID())

			second := shSpec(t, "exit 0")
			second.CheckpointDir = first.CheckpointDir
			p2 := launchIn(t, l, second)
			// The escapee may be among them, or already gone: once its
			// leader was killed, the first run's own sweep may get to it
			// first. Either way it must be dead once Launch returns.
			if got := p2.LeftoversKilled(); !slices.Contains(got, p1.PID()) {
				t.Errorf("LeftoversKilled() = %v, want the first run's trainer %d", got, p1.PID())
			}
			if alive(escapee) {
				t.Errorf("escapee %d of the first run alive after the second Launch", escapee)
			}
			if st := waitExit(t, p1); st.Signal != "killed" || st.Killed {
				t.Errorf("first run's exit %+v, want SIGKILLed by the second Launch, without Stop", st)
			}
			if st := waitExit(t, p2); !st.OK() || len(p1.LeftoversKilled()) != 0 {
				t.Errorf("second run's exit %+v, first run's leftovers %v", st, p1.LeftoversKilled())
			}
		})
	}
}

// A dead worker leaves empty run cgroups; the next launcher removes them,
// but neither a live run's cgroup nor a cgroup it did not name.
func TestNewLauncherPrunesEmptyRunCgroups(t *testing.T) {
	home := newLauncher(t, 1).cgroups
	if home.dir == "" {
		t.Skip("no writable cgroup v2 with cgroup.kill here")
	}
	empty, fd, err := home.create(newRunToken(trialKey(t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	live, fd, err := home.create(newRunToken(trialKey(t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "300")
	sleeper.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = sleeper.Start()
	syscall.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := live.remove(time.Now().Add(testTimeout)); err != nil {
			t.Error(err)
		}
		sleeper.Wait()
	})
	other := filepath.Join(home.dir, runCgroupPrefix+"not-a-run-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Rmdir(other) })

	newLauncher(t, 1)
	if _, err := os.Stat(empty.dir); !os.IsNotExist(err) {
		t.Errorf("empty run cgroup %s not pruned: %v", empty.dir, err)
	}
	for _, dir := range []string{live.dir, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("cgroup %s pruned: %v", dir, err)
		}
	}
	if !slices.Equal(live.procs(), []int{sleeper.Process.Pid}) {
		t.Errorf("live run cgroup holds %v, want the sleeper %d", live.procs(), sleeper.Process.Pid)
	}
}

// testBinary is this test binary's absolute path: trainers run it from
// their run directory, where a relative os.Args[0] (a test binary run by
// hand as ../bin/cluster.test) names nothing.
func testBinary(t *testing.T) string {
	p, err := os.Executable()
	if err != nil {
		if t == nil {
			return os.Args[0] // the helper worker: nothing to report to
		}
		t.Fatal(err)
	}
	return p
}

// Agents sharing one machine (network namespaces, or several agents per
// host) run ranks of the same trial, with the same checkpoint directory:
// one agent's launch must not take another's rank for a leftover.
func TestLaunchLeavesOtherAgentsRanksAlone(t *testing.T) {
	prefixed := func(prefix string) *LocalLauncher {
		host, err := NewLocalHost(context.Background(), LocalConfig{Slots: 1, GPUs: []GPU{}, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLocalLauncher(host)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := prefixed("hosta"), prefixed("hostb")
	rank0 := shSpec(t, trapScript("exit 0"), "hosta/0")
	p0 := launch(t, a, rank0)
	waitReady(t, rank0)

	rank1 := shSpec(t, "exit 0", "hostb/0")
	rank1.CheckpointDir = rank0.CheckpointDir
	p1 := launch(t, b, rank1)
	if got := p1.LeftoversKilled(); len(got) != 0 {
		t.Errorf("agent b's launch killed %v, want none (agent a's rank is %d)", got, p0.PID())
	}
	if st := waitExit(t, p1); !st.OK() {
		t.Errorf("agent b's rank exited %+v", st)
	}
	if got, _ := b.KillLeftovers(rank0.CheckpointDir); len(got) != 0 {
		t.Errorf("agent b's KillLeftovers killed %v", got)
	}
	select {
	case <-p0.Done():
		t.Fatalf("agent a's rank exited %+v while agent b launched", p0.Exit())
	default:
	}
	// Its own agent does sweep it.
	if got, err := a.KillLeftovers(rank0.CheckpointDir); err != nil || !slices.Contains(got, p0.PID()) {
		t.Errorf("agent a's KillLeftovers = %v, %v; want its rank %d", got, err, p0.PID())
	}
	waitExit(t, p0)
}

func TestPrefixedNodeIDs(t *testing.T) {
	h := LocalHost{Slots: 3, Prefix: "n17"}
	if got := h.NodeID(2); got != "n17/2" {
		t.Errorf("NodeID(2) = %q", got)
	}
	for _, bad := range []string{"n17/", "n17/03", "n17/-1", "n17/+1", "n1/1", "local-1", "n17/1/2"} {
		if i, err := h.ParseNodeID(bad); err == nil {
			t.Errorf("ParseNodeID(%q) = %d, want an error", bad, i)
		}
	}
	if i, err := h.ParseNodeID("n17/10"); err != nil || i != 10 {
		t.Errorf("ParseNodeID(n17/10) = %d, %v", i, err)
	}
	if i, err := (LocalHost{Slots: 1}).ParseNodeID("local-0"); err != nil || i != 0 {
		t.Errorf("without a prefix ParseNodeID(local-0) = %d, %v", i, err)
	}
}
