package devserver_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

func TestDefaultSearchAttributesParse(t *testing.T) {
	want := map[string]string{
		"GleanerCampaign": "Keyword", "GleanerKind": "Keyword", "GleanerStatus": "Keyword",
		"GleanerBestScore": "Double", "GleanerHypervolume": "Double", "GleanerTrialsDone": "Int", "GleanerTrialsRunning": "Int",
		"GleanerTrial": "Keyword", "GleanerPool": "Keyword",
	}
	got := devserver.DefaultSearchAttributes()
	if len(got) != len(want) {
		t.Fatalf("DefaultSearchAttributes has %d entries, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("DefaultSearchAttributes()[%q] = %q, want %q", k, got[k], v)
		}
	}
}

func TestStartRejectsUnknownSearchAttributeType(t *testing.T) {
	_, err := devserver.Start(context.Background(), devserver.Options{
		CLIPath:          "/nonexistent/temporal",
		SearchAttributes: map[string]string{"GleanerX": "Float"},
	})
	if err == nil || !strings.Contains(err.Error(), "GleanerX") || !strings.Contains(err.Error(), "Float") {
		t.Fatalf("Start with a bad search attribute type: err = %v, want one naming GleanerX and Float", err)
	}
}

func TestFreePortIsBindable(t *testing.T) {
	p, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if p <= 0 || p > 65535 {
		t.Fatalf("FreePort = %d", p)
	}
}

// TestServerPersistsAcrossRestart is the dev-server life cycle Gleaner's
// integration tests rely on: search attributes registered at start, a
// workflow started before a restart is still there after it, on the same
// port and database, and the original client keeps working.
func TestServerPersistsAcrossRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	// A dynamic config value as `bench --server-config` documents it (the
	// value in JSON: an unquoted 10ms makes the server exit).
	s := testenv.DevServer(t, devserver.Options{DBFile: db, DynamicConfig: []string{`history.timerProcessorMaxTimeShift="10ms"`}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	addr := s.Address()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("Address() = %q, want 127.0.0.1:PORT", addr)
	}
	if s.DBFile() != db {
		t.Errorf("DBFile() = %q, want %q", s.DBFile(), db)
	}
	// Written ahead (FilePragmas): SQLite keeps the log beside the file.
	if _, err := os.Stat(db + "-wal"); err != nil {
		t.Errorf("the database is not written ahead (FilePragmas): %v", err)
	}
	c := s.Client()
	checkSearchAttributes(ctx, t, c, s.Namespace())

	// No worker serves this type: the workflow just stays open.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "devserver-restart-probe",
		TaskQueue: "devserver-test",
	}, "NoSuchWorkflow", "arg")
	if err != nil {
		t.Fatalf("starting a workflow: %v", err)
	}

	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Address() != addr {
		t.Errorf("after Restart, Address() = %q, want the same %q", s.Address(), addr)
	}
	// The client from before the restart reconnects by itself.
	desc, err := s.Client().DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	if err != nil {
		t.Fatalf("describing the workflow after Restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("workflow after Restart: status %v, want RUNNING", st)
	}
	checkSearchAttributes(ctx, t, s.Client(), s.Namespace())

	// After a crash (SIGKILL) too.
	s.Kill()
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart after Kill: %v", err)
	}
	if _, err := s.Client().DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID()); err != nil {
		t.Fatalf("describing the workflow after Kill and Restart: %v", err)
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Restart(ctx); err == nil {
		t.Error("Restart after Stop succeeded, want an error")
	}
}

func TestStartReportsAServerThatCannotBind(t *testing.T) {
	cli := testenv.SkipIfNoCLI(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = devserver.Start(context.Background(), devserver.Options{CLIPath: cli, Port: port})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("Start on a taken port: err = %v, want the server's own complaint about port %d", err, port)
	}
}

func TestServerWithUI(t *testing.T) {
	s := testenv.DevServer(t, devserver.Options{UI: true, SearchAttributes: map[string]string{}})
	if !strings.HasPrefix(s.UIURL(), "http://127.0.0.1:") {
		t.Fatalf("UIURL() = %q, want http://127.0.0.1:PORT", s.UIURL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.UIURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", s.UIURL(), err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s, want 200 OK", s.UIURL(), resp.Status)
	}
}

func checkSearchAttributes(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatalf("listing search attributes: %v", err)
	}
	for name, typ := range devserver.DefaultSearchAttributes() {
		got, ok := resp.GetCustomAttributes()[name]
		if !ok {
			t.Errorf("search attribute %s is not registered", name)
			continue
		}
		if !strings.EqualFold(shortType(got), typ) {
			t.Errorf("search attribute %s has type %v, want %s", name, got, typ)
		}
	}
}

func shortType(v enumspb.IndexedValueType) string {
	return strings.ReplaceAll(strings.TrimPrefix(v.String(), "INDEXED_VALUE_TYPE_"), "_", "")
}
