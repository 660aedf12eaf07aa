package nethosts

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// TestHostsIsolatedAndConnected makes 3 hosts and checks, with real
// processes, that each host sees only its own address, that hosts reach
// each other and the root namespace over the bridge, that a host's
// 127.0.0.1 is its own, and that the cleanup removes everything, killing
// what still runs in a host.
func TestHostsIsolatedAndConnected(t *testing.T) {
	var (
		prefix  string
		blocker *exec.Cmd
		blocked = make(chan error, 1)
	)
	t.Run("hosts", func(t *testing.T) {
		h := Up(t, 3)
		prefix = h.Prefix()
		_, ip1 := h.Host(1)
		_, ip2 := h.Host(2)
		_, ip3 := h.Host(3)

		t.Run("host3 to host2", func(t *testing.T) {
			lis, port, rest := startListener(t, h, 2)
			d := dial(t, h, 3, net.JoinHostPort(ip2, port))
			got := finishListener(t, lis, rest)
			if d.Err != "" {
				t.Fatalf("host 3 cannot reach host 2 at %s:%s: %s", ip2, port, d.Err)
			}
			if got.PID != lis.Process.Pid {
				t.Errorf("listener pid %d, exec.Cmd started pid %d: ip netns exec should exec the program itself", got.PID, lis.Process.Pid)
			}
			if host := hostOf(t, got.Peer); host != ip3 {
				t.Errorf("host 2 saw a connection from %s, want host 3's %s", host, ip3)
			}
			if diff := addrDiff(got.Addrs, ip2); diff != "" {
				t.Errorf("host 2's addresses: %s", diff)
			}
			if diff := addrDiff(d.Addrs, ip3); diff != "" {
				t.Errorf("host 3's addresses: %s", diff)
			}
			if d.Got == nil || d.Got.PID != got.PID {
				t.Errorf("host 3 got report %+v, the listener sent %+v", d.Got, got)
			}
		})

		t.Run("root to host2", func(t *testing.T) {
			lis, port, rest := startListener(t, h, 2)
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ip2, port), 10*time.Second)
			if err != nil {
				t.Fatalf("root namespace cannot reach host 2: %v", err)
			}
			_ = c.Close()
			got := finishListener(t, lis, rest)
			if host := hostOf(t, got.Peer); host != h.BridgeIP() {
				t.Errorf("host 2 saw a connection from %s, want the bridge's %s", host, h.BridgeIP())
			}
		})

		t.Run("host1 to bridge", func(t *testing.T) {
			peer := rootListener(t, h.BridgeIP())
			d := dial(t, h, 1, <-peer)
			if d.Err != "" {
				t.Fatalf("host 1 cannot reach the bridge address: %s", d.Err)
			}
			if host := hostOf(t, <-peer); host != ip1 {
				t.Errorf("root namespace saw a connection from %s, want host 1's %s", host, ip1)
			}
		})

		t.Run("loopback is per host", func(t *testing.T) {
			peer := rootListener(t, "127.0.0.1")
			addr := <-peer
			d := dial(t, h, 1, addr)
			if d.Err == "" {
				t.Fatalf("host 1 reached the root namespace's %s: loopback is not isolated", addr)
			}
			if !strings.Contains(d.Err, "refused") {
				t.Errorf("host 1 dialing the root's %s: %s, want connection refused", addr, d.Err)
			}
		})

		// Left running on purpose: the cleanup must kill it.
		blocker = helper(t, h, 1, "block")
		out, err := blocker.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := blocker.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			t.Fatalf("block helper: %q, %v", line, err)
		}
		go func() { blocked <- blocker.Wait() }()
	})
	if prefix == "" {
		t.Skip("no hosts were made")
	}

	select {
	case err := <-blocked:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != -1 {
			t.Errorf("the process left in host 1 ended with %v, want killed by a signal", err)
		}
	case <-time.After(10 * time.Second):
		_ = blocker.Process.Kill()
		t.Errorf("the process left in host 1 survived the cleanup")
	}
	if left := namespacesOf(t, prefix); len(left) > 0 {
		t.Errorf("namespaces left after cleanup: %v", left)
	}
	if out, err := exec.Command("ip", "link", "show", prefix+"br").CombinedOutput(); err == nil {
		t.Errorf("bridge %sbr left after cleanup:\n%s", prefix, out)
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err != nil {
		t.Error(err)
	} else if strings.Contains(string(out), ": "+prefix) {
		t.Errorf("links of %s left after cleanup:\n%s", prefix, out)
	}
	if _, err := os.Stat(filepath.Join(MarkerDir, prefix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("marker %s left after cleanup (%v)", prefix, err)
	}
}

// TestUpRemovesStaleSets leaves a set whose creator is gone, as a test
// binary killed by -timeout would, and checks that the next Up removes it
// and leaves a live process's set alone.
func TestUpRemovesStaleSets(t *testing.T) {
	live := Up(t, 1)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command(exe)
	gone.Env = append(os.Environ(), envHelper+"=exit")
	if out, err := gone.CombinedOutput(); err != nil {
		t.Fatalf("exit helper: %v\n%s", err, out)
	}
	r, err := reserve(live.script, owner{pid: gone.Process.Pid, start: 1})
	if err != nil {
		t.Fatal(err)
	}
	stale := r.prefix
	t.Cleanup(func() { _ = exec.Command("bash", live.script, "down", stale).Run() })
	if out, err := exec.Command("bash", live.script, "up", stale, "2", strconv.Itoa(r.octet)).CombinedOutput(); err != nil {
		t.Fatalf("up %s: %v\n%s", stale, err, out)
	}
	if got := namespacesOf(t, stale); len(got) != 2 {
		t.Fatalf("stale set %s has namespaces %v, want 2", stale, got)
	}

	Up(t, 1)
	if left := namespacesOf(t, stale); len(left) > 0 {
		t.Errorf("stale namespaces %v survived Up", left)
	}
	if _, err := net.InterfaceByName(stale + "br"); err == nil {
		t.Errorf("stale bridge %sbr survived Up", stale)
	}
	if _, err := os.Stat(filepath.Join(MarkerDir, stale)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale marker %s survived Up (%v)", stale, err)
	}
	if got := namespacesOf(t, live.Prefix()); len(got) != 1 {
		t.Errorf("the live set %s has namespaces %v after another Up, want its 1", live.Prefix(), got)
	}
}

// TestDevServerReachableFromHost starts a Temporal dev server on the
// bridge address and has a program in a host dial it, as agents on other
// hosts will.
func TestDevServerReachableFromHost(t *testing.T) {
	h := Up(t, 2)
	srv := testenv.DevServer(t, devserver.Options{IP: h.BridgeIP()})
	cmd := helper(t, h, 2, "temporal", envAddr+"="+srv.Address())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("host 2 cannot use the dev server at %s: %v\n%s", srv.Address(), err, out)
	}
	t.Logf("host 2: %s", strings.TrimSpace(string(out)))
}

// TestUpDistinctSubnets makes two sets side by side: different prefixes,
// different subnets, each with its own bridge.
func TestUpDistinctSubnets(t *testing.T) {
	a, b := Up(t, 1), Up(t, 1)
	if a.Prefix() == b.Prefix() || a.BridgeIP() == b.BridgeIP() {
		t.Errorf("two sets share a prefix or subnet: %s %s, %s %s", a.Prefix(), a.BridgeIP(), b.Prefix(), b.BridgeIP())
	}
	if _, ip := a.Host(1); !strings.HasPrefix(ip, strings.TrimSuffix(a.BridgeIP(), "1")) {
		t.Errorf("host 1 of %s at %s, not on the bridge's subnet %s/24", a.Prefix(), ip, a.BridgeIP())
	}
}

// startListener starts the listen helper in host i and returns it, its
// port and the rest of its stdout.
func startListener(t *testing.T, h *Hosts, i int) (*exec.Cmd, string, *bufio.Reader) {
	t.Helper()
	cmd := helper(t, h, i, "listen")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rest := bufio.NewReader(out)
	line, err := rest.ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "port ")
	if !ok {
		t.Fatalf("listen helper in host %d: %q, %v", i, line, err)
	}
	return cmd, port, rest
}

// finishListener reads the listen helper's report and waits for it.
func finishListener(t *testing.T, cmd *exec.Cmd, rest *bufio.Reader) report {
	t.Helper()
	var r report
	if err := json.NewDecoder(rest).Decode(&r); err != nil {
		t.Fatalf("listen helper's report: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("listen helper: %v", err)
	}
	return r
}

// rootListener listens on ip in the root namespace, sends its address and
// then the peer of the one connection it accepts (answering it with an
// empty report).
func rootListener(t *testing.T, ip string) <-chan string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	peer := make(chan string, 2)
	peer <- l.Addr().String()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		peer <- c.RemoteAddr().String()
		_ = json.NewEncoder(c).Encode(report{PID: os.Getpid()})
		_ = c.Close()
	}()
	return peer
}

func hostOf(t *testing.T, addr string) string {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return host
}

// addrDiff says how addrs differs from {ip, 127.0.0.1} plus an optional ::1.
func addrDiff(addrs []string, ip string) string {
	got := slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == "::1" })
	slices.Sort(got)
	want := []string{ip, "127.0.0.1"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return "got " + strings.Join(addrs, " ") + ", want " + strings.Join(want, " ") + " (and ::1)"
	}
	return ""
}

// namespacesOf lists the namespaces PREFIX<digits>.
func namespacesOf(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimPrefix(f[0], prefix)); err == nil {
			names = append(names, f[0])
		}
	}
	return names
}
