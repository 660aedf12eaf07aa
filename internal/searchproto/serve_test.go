package searchproto

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func testConfig() Config {
	return Config{Config: hpo.Config{Algorithm: hpo.AlgorithmRandom, Seed: 3, MaxTrials: 3, MaxConcurrent: 2, Mode: "min",
		Space: hpo.Space{{Name: "lr", Type: hpo.ParamFloat, Min: 1e-4, Max: 1, Log: true}, {Name: "opt", Type: hpo.ParamChoice, Choices: []string{"sgd", "adam"}}}}}
}

func session(t *testing.T, cfg Config, requests ...string) []Answer {
	t.Helper()
	var out strings.Builder
	require.NoError(t, Serve(cfg, strings.NewReader(strings.Join(requests, "\n")+"\n"), &out))
	var answers []Answer
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var a Answer
		require.NoError(t, json.Unmarshal(sc.Bytes(), &a), sc.Text())
		answers = append(answers, a)
	}
	require.Len(t, answers, len(requests), "one answer per request")
	return answers
}

// A whole search over the protocol: create, finish, fail, shut down; a
// bad line is answered and the session goes on; a snapshot restores.
func TestServeRunsASearch(t *testing.T) {
	a := session(t, testConfig(),
		`{"event":"initial"}`,
		`{"event":"created","id":"t00001"}`,
		`{"event":"reported","id":"t00001","samples":640,"metric":0.5}`,
		`{"event":"finished","id":"t00001","metric":0.25,"outcome":"completed"}`,
		`{"event":"nonsense"}`,
		`{"event":"snapshot"}`,
		`{"event":"failed","id":"t00002"}`,
		`{"event":"created","id":"t00003"}`,
		`{"event":"finished","id":"t00003","metric":null,"outcome":"stopped"}`,
	)
	require.Len(t, a[0].Actions, 2)
	require.Equal(t, "t00001", a[0].Actions[0].Create.ID)
	require.NoError(t, testConfig().Space.Contains(a[0].Actions[0].Create.Params))
	require.Empty(t, a[1].Actions)
	require.Equal(t, "t00003", a[3].Actions[0].Create.ID, "a finished trial frees a slot")
	require.Contains(t, a[4].Error, `event: "nonsense" is not one of`)
	require.Contains(t, string(a[5].Snapshot), `{"searcher":{"type":"random"`)
	require.Contains(t, string(a[5].Snapshot), `"trials":{"initial_sent":true,"asked":["t00002","t00003"],"finished":"Ag=="}`)
	require.Empty(t, a[6].Actions, "the budget of 3 is spent")
	require.NotNil(t, a[8].Actions[0].Shutdown)
	require.Equal(t, 1.0, a[8].Progress)

	// Restoring the snapshot taken after t00001 finished replays the same
	// future: t00002's failure creates nothing, and so on.
	snap, _ := json.Marshal(Request{Event: "restore", Snapshot: a[5].Snapshot})
	b := session(t, testConfig(), string(snap), `{"event":"failed","id":"t00002"}`)
	require.Empty(t, b[0].Error)
	require.Equal(t, a[6], b[1])
}

func TestServeRefusesABadConfig(t *testing.T) {
	cfg := testConfig()
	cfg.Algorithm = "nope"
	require.ErrorContains(t, Serve(cfg, strings.NewReader(""), &strings.Builder{}), "algorithm")
}

// scripted answers each event with the actions a test wrote for it.
type scripted struct {
	initial, created, finished []hpo.Action
}

func (s scripted) Initial() []hpo.Action                                   { return s.initial }
func (s scripted) TrialCreated(string) []hpo.Action                        { return s.created }
func (s scripted) TrialReported(string, float64, float64) []hpo.Action     { return nil }
func (s scripted) TrialFinished(string, float64, hpo.Outcome) []hpo.Action { return s.finished }
func (s scripted) TrialFailed(string) []hpo.Action                         { return nil }
func (s scripted) Progress() float64                                       { return 0.5 }
func (s scripted) Snapshot() ([]byte, error)                               { return []byte(`{"type":"scripted","state":{}}`), nil }
func (s scripted) Restore([]byte) error                                    { return nil }

// Budgets, From, stages and Continue are written as the doc says, and
// decode back to the searcher's actions.
func TestServeWritesBudgetsFromAndContinue(t *testing.T) {
	s := scripted{
		initial: []hpo.Action{
			hpo.Create{ID: "t00001", Params: hpo.Params{"lr": hpo.Float(0.01)}, Budget: 1200, Stage: "gen 0"},
			hpo.Create{ID: "t00002", Params: hpo.Params{"lr": hpo.Float(0.02)}, Budget: 2400, From: "t00001", Stage: "gen 1"},
		},
		finished: []hpo.Action{hpo.Continue{TrialID: "t00001", Budget: 3600, Stage: "rung 1"}, hpo.Stop{TrialID: "t00002"}, hpo.Shutdown{Reason: "budget spent"}},
		created:  []hpo.Action{nil},
	}
	var out strings.Builder
	in := `{"event":"initial"}` + "\n" + `{"event":"created","id":"t00001"}` + "\n" +
		`{"event":"finished","id":"t00001","metric":0.5,"outcome":"completed"}` + "\n"
	require.NoError(t, serve(newSession(testConfig(), s), strings.NewReader(in), &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{
		`{"actions":[{"create":{"id":"t00001","params":{"lr":0.01},"budget":1200,"stage":"gen 0"}},` +
			`{"create":{"id":"t00002","params":{"lr":0.02},"budget":2400,"from":"t00001","stage":"gen 1"}}],"progress":0.5}`,
		`{"actions":[],"progress":0.5,"error":"the searcher returned an action of type \u003cnil\u003e, not create, continue, stop or shutdown"}`,
		`{"actions":[{"continue":{"trial_id":"t00001","budget":3600,"stage":"rung 1"}},{"stop":{"trial_id":"t00002"}},{"shutdown":{"reason":"budget spent"}}],"progress":0.5}`,
	}, lines)
	var a Answer
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &a))
	require.Equal(t, s.finished[0], *a.Actions[0].Continue)
	require.Equal(t, s.finished[2], *a.Actions[2].Shutdown)
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &a))
	require.Equal(t, s.initial[1], *a.Actions[1].Create)
}
