//go:build linux

package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// The README's "Use it" section, run line by line as a new user would on
// a clone: the lines of its first code block, read from README.md, so
// that this test breaks when the README changes. What the test changes
// is only where things go, through the environment the Makefile and the
// commands document: the dev server on free ports (DEVSERVER_PORT,
// DEVSERVER_UI_PORT, and TEMPORAL_ADDRESS for the commands), and Gleaner's
// state directory in a temporary XDG_STATE_HOME. `make devserver` and
// `gleaner worker` keep running, as in their terminals; every other line
// must exit 0.
func TestReadmeUseIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs a campaign on a dev server")
	}
	cli := testenv.SkipIfNoCLI(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	lines := readmeUseIt(t, filepath.Join(root, "README.md"))
	_, dataInCheckout := os.Stat(filepath.Join(root, "gleaner-data"))

	state := t.TempDir()
	port, uiPort := freeTCPPort(t), freeTCPPort(t)
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	env := append(cleanEnv(),
		"XDG_STATE_HOME="+state,
		"TEMPORAL_CLI="+cli,
		"DEVSERVER_PORT="+strconv.Itoa(port),
		"DEVSERVER_UI_PORT="+strconv.Itoa(uiPort),
		"TEMPORAL_ADDRESS="+address,
	)
	sh := &readmeShell{t: t, dir: root, env: env, logs: t.TempDir()}
	outputs := map[string]string{}
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "export "):
			sh.export(line)
		case strings.HasPrefix(line, "make devserver"):
			sh.background(line)
			waitForServer(t, address, 3*time.Minute)
		case strings.HasPrefix(line, "gleaner worker"):
			sh.background(line)
			waitForWorker(t, address, "gleaner", 2*time.Minute)
		default:
			timeout := 3 * time.Minute
			if strings.HasPrefix(line, "make ") || strings.Contains(line, "--wait") || strings.Contains(line, "--watch") {
				timeout = 8 * time.Minute
			}
			outputs[line] = sh.run(line, timeout)
		}
	}

	// What the lines said, as far as the README promises it.
	find := func(prefix string) string {
		t.Helper()
		for l, out := range outputs {
			if strings.HasPrefix(l, prefix) {
				return out
			}
		}
		t.Fatalf("the README's Use it block has no line %q", prefix)
		return ""
	}
	require.Regexp(t, `campaign go-mlp-spirals completed[^\n]*: 20 completed`, find("gleaner submit -f examples/go-mlp/campaign.yaml --wait"))
	var board []map[string]any
	require.NoError(t, json.Unmarshal([]byte(find("gleaner leaderboard go-mlp-spirals --json")), &board))
	require.NotEmpty(t, board)
	require.Contains(t, find("gleaner pause spirals-2"), "paused")
	require.Contains(t, find("gleaner status spirals-2 --watch"), "stopped")

	// State in one place, outside the checkout: the dev server's database
	// and the trials' run data.
	require.FileExists(t, filepath.Join(state, "gleaner", "dev", "temporal.db"))
	runs, err := os.ReadDir(filepath.Join(state, "gleaner", "data"))
	require.NoError(t, err)
	require.NotEmpty(t, runs, "no run data in the state directory")
	if errors.Is(dataInCheckout, os.ErrNotExist) {
		require.NoDirExists(t, filepath.Join(root, "gleaner-data"), "the worker wrote run data into the checkout")
	}
}

// readmeUseIt returns the command lines of the first sh block after the
// README's "## Use it" heading, their comments removed.
func readmeUseIt(t *testing.T, readme string) []string {
	t.Helper()
	f, err := os.Open(readme)
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	section, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			if block {
				t.Fatalf("%s: the Use it code block is not closed", readme)
			}
			section = l == "## Use it"
		case section && !block && l == "```sh":
			block = true
		case block && l == "```":
			return lines
		case block:
			if i := strings.Index(l, " #"); i >= 0 { // no # inside the commands
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("%s: no ```sh block under ## Use it", readme)
	return nil
}

// readmeShell runs README lines with bash in dir, with env, as a user's
// terminal would: exports carry over to later lines.
type readmeShell struct {
	t    *testing.T
	dir  string
	env  []string
	logs string
	n    int
}

func (s *readmeShell) command(ctx context.Context, line string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = s.dir, s.env
	return cmd
}

// export runs an export line and keeps the variable's new value.
func (s *readmeShell) export(line string) {
	s.t.Helper()
	name, _, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
	require.True(s.t, ok, "%q: want export NAME=VALUE", line)
	out, err := s.command(context.Background(), line+`; printf %s "$`+name+`"`).Output()
	require.NoError(s.t, err, line)
	s.env = append(s.env, name+"="+string(out))
}

// run runs line to its end and returns its stdout; it must exit 0.
func (s *readmeShell) run(line string, timeout time.Duration) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := s.command(ctx, line)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	start := time.Now()
	out, err := cmd.Output()
	s.t.Logf("$ %s  (%v)\n%s%s", line, time.Since(start).Round(100*time.Millisecond), out, errOut.String())
	require.NoError(s.t, err, "%s\nstdout:\n%s\nstderr:\n%s", line, out, errOut.String())
	return string(out)
}

// background starts line in a process group of its own, as in a terminal
// of its own, and stops the group (SIGINT, as Ctrl-C does, then SIGKILL)
// when the test ends.
func (s *readmeShell) background(line string) {
	s.t.Helper()
	s.n++
	logPath := filepath.Join(s.logs, fmt.Sprintf("terminal-%d.log", s.n))
	logf, err := os.Create(logPath)
	require.NoError(s.t, err)
	cmd := s.command(context.Background(), line)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(s.t, cmd.Start(), line)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	s.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left behind
		if s.t.Failed() {
			b, _ := os.ReadFile(logPath)
			s.t.Logf("%s:\n%s", line, b)
		}
	})
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// dialServer connects to the server at address once it answers.
func dialServer(t *testing.T, address string, timeout time.Duration) sdkclient.Client {
	t.Helper()
	var c sdkclient.Client
	err := waitUntil(testContext(t, timeout), func() (bool, error) {
		var err error
		c, err = sdkclient.Dial(sdkclient.Options{HostPort: address, Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
		return err == nil, err
	})
	require.NoError(t, err, "the dev server at %s does not answer", address)
	t.Cleanup(c.Close)
	return c
}

// waitForServer waits until the server at address answers with
// Gleaner's search attributes registered (make devserver passes them).
func waitForServer(t *testing.T, address string, timeout time.Duration) {
	t.Helper()
	c := dialServer(t, address, timeout)
	waitFor(t, timeout, "Gleaner's search attributes on "+address, func() (bool, error) {
		resp, err := c.OperatorService().ListSearchAttributes(context.Background(),
			&operatorservice.ListSearchAttributesRequest{Namespace: "default"})
		_, ok := resp.GetCustomAttributes()["GleanerCampaign"]
		return err == nil && ok, err
	})
}

func waitForWorker(t *testing.T, address, taskQueue string, timeout time.Duration) {
	t.Helper()
	c := dialServer(t, address, timeout)
	waitFor(t, timeout, "a worker polling task queue "+taskQueue, func() (bool, error) {
		resp, err := c.DescribeTaskQueue(context.Background(), taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		return err == nil && len(resp.GetPollers()) > 0, err
	})
}
