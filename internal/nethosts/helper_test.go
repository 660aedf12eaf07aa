package nethosts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// The tests run programs inside the hosts by re-executing this test
// binary there (tools such as nc may be missing): TestMain sees envHelper
// and runs that helper instead of the tests.
const (
	envHelper = "GLEANER_NETHOSTS_HELPER" // listen, dial, block, exit, temporal
	envAddr   = "GLEANER_NETHOSTS_ADDR"   // host:port for dial and temporal
)

// report is what a helper says about itself and its peer.
type report struct {
	PID   int      // os.Getpid() of the helper
	Peer  string   // the remote address the listener accepted
	Addrs []string // the helper's interface addresses, IPv6 link-local left out
	Err   string   // dial: why the connection failed
	Got   *report  // dial: what the listener sent
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(envHelper); mode != "" {
		if err := runHelper(mode); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", mode, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	stop := CleanupOnSignal()
	code := m.Run()
	stop()
	os.Exit(code)
}

func runHelper(mode string) error {
	switch mode {
	case "listen":
		// Accepts one connection on a free port of every address, sends
		// its report there and on stdout, and exits.
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return err
		}
		fmt.Printf("port %d\n", l.Addr().(*net.TCPAddr).Port)
		c, err := l.Accept()
		if err != nil {
			return err
		}
		r := report{PID: os.Getpid(), Peer: c.RemoteAddr().String(), Addrs: ownAddrs()}
		if err := json.NewEncoder(c).Encode(r); err != nil {
			return err
		}
		_ = c.Close()
		return json.NewEncoder(os.Stdout).Encode(r)
	case "dial":
		// Connects to $envAddr and prints its own report holding what the
		// listener sent, or why the connection failed.
		r := report{PID: os.Getpid(), Addrs: ownAddrs()}
		c, err := net.DialTimeout("tcp", os.Getenv(envAddr), 10*time.Second)
		if err != nil {
			r.Err = err.Error()
		} else {
			r.Got = new(report)
			if err := json.NewDecoder(c).Decode(r.Got); err != nil {
				return err
			}
			_ = c.Close()
		}
		return json.NewEncoder(os.Stdout).Encode(r)
	case "block":
		// Says it runs, then waits to be killed.
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return nil
	case "exit":
		return nil
	case "temporal":
		// A TCP connect, then a Temporal client (whose Dial asks the
		// frontend for its system info over gRPC).
		addr := os.Getenv(envAddr)
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
		_ = c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tc, err := client.DialContext(ctx, client.Options{
			HostPort: addr,
			Logger:   log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		})
		if err != nil {
			return fmt.Errorf("temporal client: %w", err)
		}
		tc.Close()
		fmt.Println("ok", addr)
		return nil
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// ownAddrs lists this process's interface addresses, without IPv6
// link-local ones (the kernel gives every interface with IPv6 one).
func ownAddrs() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

// helper is a helper process run inside host i of h.
func helper(t *testing.T, h *Hosts, i int, mode string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := h.Command(i, exe)
	cmd.Env = append(append(os.Environ(), envHelper+"="+mode), env...)
	return cmd
}

// dial runs the dial helper in host i against addr and returns its report.
func dial(t *testing.T, h *Hosts, i int, addr string) report {
	t.Helper()
	cmd := helper(t, h, i, "dial", envAddr+"="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dial helper in host %d: %v\n%s", i, err, stderr.String())
	}
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("dial helper in host %d: %v: %q", i, err, out)
	}
	if r.PID != cmd.Process.Pid {
		t.Errorf("dial helper in host %d: pid %d, but exec.Cmd started pid %d", i, r.PID, cmd.Process.Pid)
	}
	return r
}
