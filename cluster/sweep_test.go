package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/trial"
)

// fakeProc writes a procfs with one environ file per pid (NUL-joined
// entries); a nil environment leaves the pid's directory without one, as
// for a process that exited during the scan.
func fakeProc(t *testing.T, procs map[int][]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, env := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if env == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "environ"), []byte(strings.Join(env, "\x00")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range []string{"self", "sys", "0"} { // not processes
		if err := os.Mkdir(filepath.Join(root, other), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, other, "environ"), []byte(EnvRunToken+"=tok\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestScanProcsFindsTheRun(t *testing.T) {
	const tok = "0123456789ab-00112233aabbccdd"
	root := fakeProc(t, map[int][]string{
		101:         {"PATH=/bin", EnvRunToken + "=" + tok, "HOME=/root"},       // the trainer
		102:         {EnvRunToken + "=" + tok},                                  // first entry, no trailing NUL
		103:         {EnvRunToken + "=" + tok, ""},                              // trailing NUL
		104:         {"A=1", EnvRunToken + "=" + tok + "x"},                     // another token it starts with
		105:         {"A=1", EnvRunToken + "=" + tok[:10]},                      // a prefix of the token
		106:         {"NOT_" + EnvRunToken + "=" + tok},                         // a name it ends
		107:         {"X=" + EnvRunToken + "=" + tok},                           // a value holding it
		108:         {EnvRunToken + "=other", EnvRunToken + "=" + tok},          // getenv sees the first
		109:         {},                                                         // a kernel thread or zombie
		110:         nil,                                                        // gone
		os.Getpid(): {EnvRunToken + "=" + tok},                                  // the scanner itself
		111:         {"PATH=/bin", EnvRunToken + "=" + tok, EnvRunToken + "=x"}, // the first wins
	})
	got := scanProcs(root, runMatch(tok))
	slices.Sort(got)
	if want := []int{101, 102, 103, 111}; !slices.Equal(got, want) {
		t.Errorf("scanProcs = %v, want %v", got, want)
	}
	if got := scanProcs(filepath.Join(root, "missing"), runMatch(tok)); got != nil {
		t.Errorf("scanProcs of a missing root = %v, want none", got)
	}
}

func TestScanProcsFindsLeftoversOfTheTrial(t *testing.T) {
	const dir = "/data/c-1/t-1/checkpoints"
	ckpt := trial.EnvCheckpointDir + "=" + dir
	root := fakeProc(t, map[int][]string{
		201: {ckpt, EnvRunToken + "=key-run1"},                                 // an earlier run
		202: {"A=1", EnvRunToken + "=key-run2", ckpt, "B=2"},                   // another one
		203: {ckpt},                                                            // a shell where someone exported it
		204: {ckpt, EnvRunToken + "="},                                         // an empty token
		205: {trial.EnvCheckpointDir + "=" + dir + "/sub", EnvRunToken + "=k"}, // another trial's, below it
		206: {trial.EnvCheckpointDir + "=/data/c-1/t-10/checkpoints", EnvRunToken + "=k"},
		207: {"OLD_" + ckpt, EnvRunToken + "=k"},
		208: {ckpt, EnvRunToken + "=otherkey-run3"}, // another agent's rank of the trial
		209: {ckpt, EnvRunToken + "=keyx-run4"},
	})
	got := scanProcs(root, leftoverMatch(dir, "key"))
	slices.Sort(got)
	if want := []int{201, 202}; !slices.Equal(got, want) {
		t.Errorf("scanProcs = %v, want %v", got, want)
	}
}

func TestEnvironValue(t *testing.T) {
	env := []byte("A=1\x00AB=2\x00B=\x00C=x=y\x00A=3")
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"A", "1", true}, {"AB", "2", true}, {"B", "", true}, {"C", "x=y", true},
		{"", "", false}, {"ABC", "", false}, {"x", "", false},
	} {
		if got, ok := environValue(env, tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("environValue(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRunTokenNamesTheTrial(t *testing.T) {
	a, b := newRunToken(trialKey("/ckpt/t-1")), newRunToken(trialKey("/ckpt/t-1"))
	if a == b {
		t.Errorf("two launches got the same token %q", a)
	}
	key := trialKey("/ckpt/t-1")
	if !strings.HasPrefix(a, key+"-") || !strings.HasPrefix(b, key+"-") {
		t.Errorf("tokens %q, %q do not start with the trial key %q", a, b, key)
	}
	if trialKey("/ckpt/t-2") == key {
		t.Errorf("two trials share the key %q", key)
	}
}

func TestFindCgroup2(t *testing.T) {
	const hybrid = `25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
33 25 0:28 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
34 33 0:29 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 33 0:30 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
`
	const unified = `24 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw
28 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// A container without a cgroup namespace sees its own subtree mounted.
	const subtree = `1200 1100 0:26 /system.slice/docker-abc.scope /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw
`
	const spaced = `28 24 0:26 / /mnt/my\040cgroups rw shared:4 - cgroup2 cgroup2 rw
`
	for _, tc := range []struct {
		name, mountinfo, self string
		want                  cgroupHome
		ok                    bool
	}{
		{"unified", unified, "0::/user.slice/user-1000.slice/session-2.scope\n",
			cgroupHome{dir: "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope", rel: "/user.slice/user-1000.slice/session-2.scope"}, true},
		{"hybrid", hybrid, "1:name=systemd:/user.slice\n0::/user.slice\n",
			cgroupHome{dir: "/sys/fs/cgroup/unified/user.slice", rel: "/user.slice"}, true},
		{"root", hybrid, "0::/\n", cgroupHome{dir: "/sys/fs/cgroup/unified", rel: "/"}, true},
		{"subtree", subtree, "0::/system.slice/docker-abc.scope/worker\n",
			cgroupHome{dir: "/sys/fs/cgroup/worker", rel: "/system.slice/docker-abc.scope/worker"}, true},
		{"outside the subtree", subtree, "0::/system.slice/docker-abcd.scope\n", cgroupHome{}, false},
		{"escaped mount point", spaced, "0::/w\n", cgroupHome{dir: "/mnt/my cgroups/w", rel: "/w"}, true},
		{"v1 only", `35 33 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory` + "\n", "4:memory:/\n", cgroupHome{}, false},
		{"not in a v2 cgroup", unified, "4:memory:/\n", cgroupHome{}, false},
		{"empty", "", "", cgroupHome{}, false},
	} {
		got, ok := findCgroup2([]byte(tc.mountinfo), []byte(tc.self))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: findCgroup2 = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// The process table of this machine, read for real: the trainer is found
// by its run token, and by no other.
func TestScanProcsOnThisMachine(t *testing.T) {
	l := newLauncher(t, 1)
	p := launch(t, l, shSpec(t, trapScript("exit 0")))
	waitFor(t, "the trainer to exec with its token", func() bool {
		return slices.Contains(scanProcs(procRoot, p.match), p.PID())
	})
	if got := scanProcs(procRoot, runMatch(newRunToken(trialKey("/elsewhere")))); slices.Contains(got, p.PID()) {
		t.Errorf("the trainer %d matched another run's token", p.PID())
	}
}

func TestIsRunCgroup(t *testing.T) {
	for name, want := range map[string]bool{
		runCgroupPrefix + newRunToken(trialKey("/ckpt")):        true,
		runCgroupPrefix + "0123456789ab-0123456789abcdef":       true,
		runCgroupPrefix + "probe-0123456789ab-0123456789abcdef": false,
		runCgroupPrefix + "0123456789AB-0123456789abcdef":       false,
		runCgroupPrefix + "0123456789ab-0123456789abcde":        false,
		runCgroupPrefix + "0123456789ab":                        false,
		"0123456789ab-0123456789abcdef":                         false,
		"system.slice":                                          false,
	} {
		if got := isRunCgroup(name); got != want {
			t.Errorf("isRunCgroup(%q) = %v, want %v", name, got, want)
		}
	}
}

// A run's scan skips, unread, the trainers this process launched for other
// runs (each carries only its own token), never its own leader, and reads
// a pid again once its trainer is reaped (the pid may then be anyone's).
func TestScanRunProcsSkipsOtherRunsLeaders(t *testing.T) {
	const tok = "0123456789ab-00112233aabbccdd"
	withTok := []string{"PATH=/bin", EnvRunToken + "=" + tok}
	root := fakeProc(t, map[int][]string{201: withTok, 202: withTok, 203: withTok})
	// 201 is contrived: a live leader of another run cannot carry tok, so
	// finding it would mean it was read.
	for _, pid := range []int{201, 202} {
		liveLeaders.Store(pid, struct{}{})
	}
	t.Cleanup(func() { liveLeaders.Delete(201); liveLeaders.Delete(202) })
	got := scanRunProcs(root, runMatch(tok), 202)
	slices.Sort(got)
	if want := []int{202, 203}; !slices.Equal(got, want) {
		t.Errorf("scanRunProcs with 201 another run's leader = %v, want %v", got, want)
	}
	liveLeaders.Delete(201)
	got = scanRunProcs(root, runMatch(tok), 202)
	slices.Sort(got)
	if want := []int{201, 202, 203}; !slices.Equal(got, want) {
		t.Errorf("scanRunProcs once 201 is reaped = %v, want %v", got, want)
	}
	// Leftovers of a trial are looked for in every process, leaders too.
	liveLeaders.Store(201, struct{}{})
	if got := scanProcs(root, runMatch(tok)); len(got) != 3 {
		t.Errorf("scanProcs = %v, want all three", got)
	}
}
