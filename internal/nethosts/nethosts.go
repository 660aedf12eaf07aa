package nethosts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// EnvRequire, set to 1, turns "cannot make network namespaces here" from a
// skip into a failure in Up. CI, which runs as root, sets it.
const EnvRequire = "GLEANER_REQUIRE_NETNS"

// ScriptPath is the script Up runs, relative to the module root.
const ScriptPath = "scripts/netns-hosts.sh"

// Required reports whether GLEANER_REQUIRE_NETNS=1.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Available returns nil when this process can make hosts, else what is
// missing.
func Available() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("network namespaces are Linux-only (this is %s)", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (run the tests as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the 'ip' command (iproute2) is not on PATH")
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return errors.New("this kernel has no network namespaces (/proc/self/ns/net is missing)")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Errorf("'ip netns list' fails: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Script returns the absolute path of scripts/netns-hosts.sh in the module
// holding this package: found by walking up to go.mod from the working
// directory (a test's package directory), else from this source file's
// directory (a test binary run elsewhere, built without -trimpath).
func Script() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		if root, ok := moduleRoot(dir); ok {
			p := filepath.Join(root, filepath.FromSlash(ScriptPath))
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("nethosts: %w", err)
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("nethosts: no go.mod above %s", strings.Join(starts, " or "))
}

func moduleRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Hosts is a set of hosts made by Up: namespaces PREFIX1..PREFIXn on the
// subnet 10.X.0.0/24, host i at 10.X.0.(10+i), the bridge at 10.X.0.1.
// Hosts are numbered from 1, as the namespaces are.
type Hosts struct {
	script string
	prefix string
	octet  int
	names  []string // names[i-1] is host i's namespace
	ips    []string

	mu   sync.Mutex
	down bool
}

// registry holds the sets this process made and has not removed, for
// DownAll.
var registry = struct {
	sync.Mutex
	sets map[*Hosts]bool
}{sets: map[*Hosts]bool{}}

// Up makes n hosts for t and removes them (killing what still runs in
// them) when t ends, whether it passed, failed or panicked. It skips t when
// the machine cannot make network namespaces (not root, no `ip`, no netns),
// or fails it when GLEANER_REQUIRE_NETNS=1. Before making the set it removes
// the sets earlier test processes left behind when they died.
func Up(t testing.TB, n int) *Hosts {
	t.Helper()
	if n < 1 || n > 244 {
		t.Fatalf("nethosts.Up: n = %d, want 1..244", n)
	}
	if err := Available(); err != nil {
		if Required() {
			t.Fatalf("%s=1 but: %v", EnvRequire, err)
		}
		t.Skipf("skipping: %v", err)
	}
	script, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	me, err := self()
	if err != nil {
		t.Fatalf("nethosts: %v", err)
	}
	r, err := reserve(script, me)
	for _, s := range r.swept {
		t.Logf("nethosts: %s", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	h := &Hosts{script: script, prefix: r.prefix, octet: r.octet}
	registry.Lock()
	registry.sets[h] = true
	registry.Unlock()
	// Registered before `up` runs, so a half-made set goes too.
	t.Cleanup(func() {
		if err := h.Down(); err != nil {
			t.Errorf("%v", err)
		}
	})

	cmd := exec.Command("bash", script, "up", h.prefix, strconv.Itoa(n), strconv.Itoa(h.octet))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		t.Logf("%s", msg)
	}
	if err != nil {
		t.Fatalf("nethosts: %s up %s %d %d: %v", script, h.prefix, n, h.octet, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("nethosts: unexpected line from %s up: %q", script, line)
		}
		h.names = append(h.names, f[0])
		h.ips = append(h.ips, f[1])
	}
	if len(h.names) != n {
		t.Fatalf("nethosts: %s up made %d hosts, want %d:\n%s", script, len(h.names), n, stdout.String())
	}
	return h
}

// Prefix is the set's prefix: namespaces PREFIX1..PREFIXn, bridge PREFIXbr.
func (h *Hosts) Prefix() string { return h.prefix }

// Len is the number of hosts.
func (h *Hosts) Len() int { return len(h.names) }

// BridgeName is the bridge interface in the root namespace.
func (h *Hosts) BridgeName() string { return h.prefix + "br" }

// BridgeIP is the root namespace's address on the bridge, which every host
// reaches (its default route): where a server for all hosts listens.
func (h *Hosts) BridgeIP() string { return fmt.Sprintf("10.%d.0.1", h.octet) }

// Host returns host i's namespace name and IP, for i in 1..Len().
func (h *Hosts) Host(i int) (name, ip string) {
	h.check(i)
	return h.names[i-1], h.ips[i-1]
}

// Command is exec.Command(name, args...) run inside host i (1..Len()), as
// `ip netns exec NAMESPACE name args...`. ip resolves name on PATH and
// execs it without forking, so the returned command's Process is the
// program itself: its Pid is the program's, and Process.Kill or Signal
// reach the program (its own children are its business). The program also
// gets SIGKILL if the test process dies (Linux parent-death signal). The
// environment is the test's unless Env is set; Dir and the I/O fields work
// as usual.
func (h *Hosts) Command(i int, name string, args ...string) *exec.Cmd {
	h.check(i)
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.names[i-1], name}, args...)...)
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}

func (h *Hosts) check(i int) {
	if i < 1 || i > len(h.names) {
		panic(fmt.Sprintf("nethosts: host %d of %d (hosts are numbered from 1)", i, len(h.names)))
	}
}

// Down kills every process still in the hosts and removes the namespaces,
// their veths, the bridge and the marker. Up's cleanup calls it; it is
// idempotent.
func (h *Hosts) Down() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return nil
	}
	out, err := exec.Command("bash", h.script, "down", h.prefix).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nethosts: %s down %s: %v\n%s", h.script, h.prefix, err, out)
	}
	h.down = true
	registry.Lock()
	delete(registry.sets, h)
	registry.Unlock()
	return nil
}

// DownAll removes every set this process made and has not removed yet. It
// is for paths where t.Cleanup does not run: a signal handler (see
// CleanupOnSignal) or the end of TestMain.
func DownAll() error {
	registry.Lock()
	sets := make([]*Hosts, 0, len(registry.sets))
	for h := range registry.sets {
		sets = append(sets, h)
	}
	registry.Unlock()
	var errs []error
	for _, h := range sets {
		errs = append(errs, h.Down())
	}
	return errors.Join(errs...)
}
