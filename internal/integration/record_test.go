package integration_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// TestRecordHistories records real histories of a campaign with a
// preemption and a resize — the campaign, one trial and the pool — into
// workflows/testdata/histories, which workflows/replay_test.go replays
// against the current workflow code: a change that breaks determinism for
// running workflows then fails there. It runs only with
// GLEANER_RECORD_HISTORIES=1 (after an intended, versioned change to the
// workflows).
func TestRecordHistories(t *testing.T) {
	srv, nodes := startRecording(t, "record")
	spec := testenv.MLPSpec(t, "recorded", 3, 2, 300, 20)
	spec.Resources.MaxNodes = 4
	run := startCampaign(t, srv.Client(), "record", spec)
	first := workflows.TrialWorkflowID(run.GetID(), 1)
	waitTrial(t, srv.Client(), first, time.Minute, "the first trial to run", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && s.Step >= 20
	})
	nodes.set(0)
	waitTrial(t, srv.Client(), first, time.Minute, "the trial to be preempted", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialPaused
	})
	nodes.set(4)
	campaignResult(t, run, 3*time.Minute)

	dir := filepath.Join("..", "..", "workflows", "testdata", "histories")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, id := range map[string]string{
		"campaign.json": run.GetID(),
		"trial.json":    first,
		"pool.json":     workflows.PoolWorkflowID(spec.Pool),
	} {
		writeHistory(t, srv.Client(), id, filepath.Join(dir, name))
	}
}

// TestRecordProfiledTrial records one trial that trains long enough on 2
// and then 1 node for its JPA to estimate its throughput and send the
// pool profiles (the history TestRecordHistories records ends before
// that), as workflows/testdata/histories/trial-profiled.json: replaying
// it checks that the trial's JPA tuning (workflows' trialProfiler) has
// not changed under running trials. GLEANER_RECORD_HISTORIES=1 only.
func TestRecordProfiledTrial(t *testing.T) {
	srv, nodes := startRecording(t, "record-profiled")
	spec := testenv.MLPSpec(t, "profiled", 1, 1, 1200, 20)
	spec.Resources.MaxNodes = 2
	run := startCampaign(t, srv.Client(), "record-profiled", spec)
	trial := workflows.TrialWorkflowID(run.GetID(), 1)
	waitTrial(t, srv.Client(), trial, time.Minute, "the trial to train 500 steps on 2 nodes", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && s.Step >= 500
	})
	nodes.set(1)
	campaignResult(t, run, 3*time.Minute)
	path := filepath.Join("..", "..", "workflows", "testdata", "histories", "trial-profiled.json")
	writeHistory(t, srv.Client(), trial, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), workflows.SignalProfile); n < 2 {
		t.Errorf("the recorded trial sent %d profile signals; want some on each count", n)
	}
}

// TestRecordEndedTrial records a trial of the current code that ran and
// completed, as workflows/testdata/histories/trial-ended.json: it holds
// the versions of a trial's end (trial-finish-together) and of an
// assignment that finds it running nothing (assignment-confirmed-if-
// awaited), which the histories of earlier builds do not.
// GLEANER_RECORD_HISTORIES=1 only.
func TestRecordEndedTrial(t *testing.T) {
	srv, _ := startRecording(t, "record-ended")
	spec := testenv.MLPSpec(t, "ended", 1, 1, 60, 20)
	spec.Resources.MaxNodes = 1
	run := startCampaign(t, srv.Client(), "record-ended", spec)
	campaignResult(t, run, 3*time.Minute)
	trial := workflows.TrialWorkflowID(run.GetID(), 1)
	writeHistory(t, srv.Client(), trial, filepath.Join("..", "..", "workflows", "testdata", "histories", "trial-ended.json"))
	changes := map[string]bool{}
	it := srv.Client().GetWorkflowHistory(testContext(t, time.Minute), trial, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range e.GetMarkerRecordedEventAttributes().GetDetails()["change-id"].GetPayloads() {
			changes[strings.Trim(string(p.GetData()), `"`)] = true
		}
	}
	for _, want := range []string{"trial-finish-together", "assignment-confirmed-if-awaited"} {
		if !changes[want] {
			t.Errorf("the recorded trial has no %s marker (it has %v)", want, changes)
		}
	}
}

// startRecording skips unless GLEANER_RECORD_HISTORIES=1, else starts a
// dev server and a worker on queue with two nodes that the test sets.
func startRecording(t *testing.T, queue string) (*devserver.Server, *nodeSet) {
	t.Helper()
	if os.Getenv("GLEANER_RECORD_HISTORIES") != "1" {
		t.Skip("set GLEANER_RECORD_HISTORIES=1 to record workflows/testdata/histories")
	}
	srv := startServer(t, devserver.Options{})
	nodes := newNodeSet(2)
	testenv.Worker(t, srv, queue, nodes)
	return srv, nodes
}

func writeHistory(t *testing.T, c client.Client, wfID, path string) {
	t.Helper()
	h := &historypb.History{}
	it := c.GetWorkflowHistory(testContext(t, time.Minute), wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", wfID, err)
		}
		h.Events = append(h.Events, e)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, scrubPaths(b), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d events of %s in %s", len(h.Events), wfID, path)
}

var (
	payloadData = regexp.MustCompile(`"data":\s*"([A-Za-z0-9+/=]+)"`)
	tempPath    = regexp.MustCompile(`/tmp/[A-Za-z0-9_.-]+(/[0-9]+)?`)
)

// scrubPaths replaces this machine's temporary directories inside the
// (base64) payloads with a neutral one: the recorded histories are test
// data, and replay does not depend on the paths.
func scrubPaths(b []byte) []byte {
	return payloadData.ReplaceAllFunc(b, func(m []byte) []byte {
		enc := payloadData.FindSubmatch(m)[1]
		raw, err := base64.StdEncoding.DecodeString(string(enc))
		if err != nil {
			return m
		}
		clean := tempPath.ReplaceAll(raw, []byte("/var/lib/gleaner"))
		return []byte(`"data": "` + base64.StdEncoding.EncodeToString(clean) + `"`)
	})
}
