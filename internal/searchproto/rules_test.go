package searchproto

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Lines that set up a session: initial asks for t00001 and t00002
// (testConfig: 2 at a time); t00001 then runs.
const (
	initial  = `{"event":"initial"}`
	created1 = `{"event":"created","id":"t00001"}`
	report1  = `{"event":"reported","id":"t00001","samples":640,"metric":0.5}`
	finish1  = `{"event":"finished","id":"t00001","metric":0.25,"outcome":"completed"}`
	fail1    = `{"event":"failed","id":"t00001"}`
)

// Every malformed or out-of-order request, through the serve loop: the
// lines before it are taken, it is refused with a message naming its
// event, its id (or else its line) and the rule, and the session goes on.
func TestServeRefusesBadRequests(t *testing.T) {
	events := "initial, created, reported, finished, failed, snapshot, restore, front"
	for _, c := range []struct {
		name   string
		before []string
		line   string
		want   string
	}{
		// A trial's life.
		{"finished, unknown id", []string{initial}, `{"event":"finished","id":"t00007","metric":1,"outcome":"completed"}`,
			`finished "t00007": no create action named this trial`},
		{"finished twice", []string{initial, created1, finish1}, finish1,
			`finished "t00001": already finished`},
		{"reported after finished", []string{initial, created1, finish1}, report1,
			`reported "t00001": already finished`},
		{"failed after finished", []string{initial, created1, finish1}, fail1,
			`failed "t00001": already finished`},
		{"failed, unknown id", []string{initial}, `{"event":"failed","id":"t00007"}`,
			`failed "t00007": no create action named this trial`},
		{"failed twice", []string{initial, fail1}, fail1,
			`failed "t00001": already failed`},
		{"finished after failed", []string{initial, created1, fail1}, finish1,
			`finished "t00001": already failed`},
		{"reported before created", []string{initial}, report1,
			`reported "t00001": not created yet: send created when it starts (failed if it cannot start)`},
		{"finished before created", []string{initial}, finish1,
			`finished "t00001": not created yet: send created when it starts (failed if it cannot start)`},
		{"reported, never asked for", []string{initial}, `{"event":"reported","id":"t00009","samples":1,"metric":1}`,
			`reported "t00009": no create action named this trial`},
		{"created twice", []string{initial, created1}, created1,
			`created "t00001": already created and running`},
		{"created, unknown id", []string{initial}, `{"event":"created","id":"t00007"}`,
			`created "t00007": no create action named this trial`},
		{"created before initial", nil, created1,
			`created "t00001": no create action named this trial`},
		{"created after finished, no continue", []string{initial, created1, finish1}, created1,
			`created "t00001": already finished; created again only after a continue names it`},
		{"created after failed", []string{initial, fail1}, created1,
			`created "t00001": already failed`},
		{"initial twice", []string{initial}, initial,
			`initial: already sent: the first actions went out (restore a snapshot to go back)`},

		// Fields.
		{"samples missing", []string{initial, created1}, `{"event":"reported","id":"t00001","metric":0.5}`,
			`reported "t00001": samples: missing; the trial's progress, a number ≥ 0`},
		{"samples negative", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":-1,"metric":0.5}`,
			`reported "t00001": samples: -1 must be ≥ 0`},
		{"samples null", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":null,"metric":0.5}`,
			`reported "t00001": samples: null; want the trial's progress, a number ≥ 0`},
		{"samples past float64", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":1e999,"metric":0.5}`,
			`reported "t00001": samples: 1e999 is not a finite float64`},
		{"samples NaN", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":NaN,"metric":0.5}`,
			`reported "t00001": samples: NaN is not JSON`},
		{"samples a string", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":"640","metric":0.5}`,
			`reported "t00001": samples: "640" is a string; want a number`},
		{"metric missing in a report", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":640}`,
			`reported "t00001": metric: missing; a number, or null for a trial that finished without one`},
		{"metric null in a report", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":640,"metric":null}`,
			`reported "t00001": metric: null; a report carries a value (null is for a trial that finished without one)`},
		{"metric a string", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":640,"metric":"0.5"}`,
			`reported "t00001": metric: "0.5" is a string; want a number`},
		{"metric true", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":640,"metric":true}`,
			`reported "t00001": metric: true is not a number`},
		{"metric NaN", []string{initial, created1}, `{"event":"finished","id":"t00001","metric":NaN,"outcome":"completed"}`,
			`finished "t00001": metric: NaN is not JSON; send null for no value`},
		{"metric Infinity", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":1,"metric":Infinity}`,
			`reported "t00001": metric: Infinity is not JSON; send null for no value`},
		{"metric -Infinity", []string{initial, created1}, `{"event":"reported","id": "t00001","samples":1,"metric": -Infinity}`,
			`reported "t00001": metric: -Infinity is not JSON; send null for no value`},
		{"metric missing when finished", []string{initial, created1}, `{"event":"finished","id":"t00001","outcome":"completed"}`,
			`finished "t00001": metric: missing; a number, or null for a trial that finished without one`},
		{"outcome missing", []string{initial, created1}, `{"event":"finished","id":"t00001","metric":0.5}`,
			`finished "t00001": outcome: missing; one of completed, stopped`},
		{"outcome unknown", []string{initial, created1}, `{"event":"finished","id":"t00001","metric":0.5,"outcome":"won"}`,
			`finished "t00001": outcome: "won" is not one of completed, stopped`},
		{"id missing", []string{initial}, `{"event":"created"}`,
			`created: id: missing`},
		{"id a number", []string{initial}, `{"event":"created","id":7}`,
			`created: id: 7 is not a string`},
		{"id empty", []string{initial}, `{"event":"failed","id":""}`,
			`failed: id: "" is empty; want the id of a create action`},
		{"misspelt field", []string{initial, created1}, `{"event":"finished","id":"t00001","metrc":0.5,"outcome":"completed"}`,
			`finished "t00001": metrc: not a field of finished (its fields: event, id, metric or values, constraints, outcome)`},
		{"another event's field", []string{initial, created1}, `{"event":"created","id":"t00002","metric":0.5}`,
			`created "t00002": metric: not a field of created (its fields: event, id)`},
		{"a field of an event that has none", nil, `{"event":"initial","id":"t00001"}`,
			`initial: id: not a field of initial (it carries no other field)`},
		{"unknown event", []string{initial}, `{"event":"started","id":"t00001"}`,
			`request "t00001": event: "started" is not one of ` + events},
		{"event missing", []string{initial}, `{"id":"t00001"}`,
			`request "t00001": event: missing; one of ` + events},
		{"event missing, no id", []string{initial}, `{}`,
			`line 2: event: missing; one of ` + events},
		{"event not a string", []string{initial}, `{"event":1}`,
			`line 2: event: 1 is not a string`},
		{"not JSON", []string{initial}, `not json`,
			`line 2: not a JSON object: invalid character 'o' in literal null (expecting 'u')`},
		{"a JSON array", []string{initial}, `[1]`,
			`line 2: not a JSON object: [1]`},
		{"null", []string{initial}, `null`,
			`line 2: not a JSON object: null`},
		{"two objects on a line", []string{initial}, `{"event":"snapshot"} {"event":"snapshot"}`,
			`line 2: not a JSON object: more than one JSON value on the line`},
		{"restore without a snapshot", nil, `{"event":"restore"}`,
			`restore: snapshot: missing`},
		{"restore, snapshot not an object", nil, `{"event":"restore","snapshot":"abc"}`,
			`restore: snapshot: "abc" is not an object; want a snapshot that gleaner search answered`},
		{"restore another searcher's own snapshot", nil, `{"event":"restore","snapshot":{"type":"tpe","state":{}}}`,
			`restore: snapshot: restore random searcher: snapshot is of a "tpe" searcher`},
		{"front with a field", nil, `{"event":"front","id":"t00001"}`,
			`front: id: not a field of front (it carries no other field)`},

		// Results: metric for one objective (testConfig), values for several
		// (objectives_test.go).
		{"values for one objective", []string{initial, created1}, `{"event":"reported","id":"t00001","samples":1,"values":[0.5]}`,
			`reported "t00001": values: this search has one objective; send metric`},
		{"constraints without any", []string{initial, created1}, `{"event":"finished","id":"t00001","metric":0.5,"constraints":[1],"outcome":"completed"}`,
			`finished "t00001": constraints: this search has no constraints`},
		{"metric and values", []string{initial, created1}, `{"event":"finished","id":"t00001","metric":0.5,"values":[0.5],"outcome":"completed"}`,
			`finished "t00001": values: sent with metric; send metric for a search of one objective, values for one of several`},
		{"restore another searcher's state", nil, `{"event":"restore","snapshot":{"searcher":{"type":"tpe","state":{}},"trials":{}}}`,
			`restore: snapshot: searcher: restore random searcher: snapshot is of a "tpe" searcher`},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := append(append(append([]string{}, c.before...), c.line), `{"event":"snapshot"}`)
			a := session(t, testConfig(), lines...)
			for i, ans := range a[:len(c.before)] {
				require.Empty(t, ans.Error, "line %d: %s", i+1, c.before[i])
			}
			refused := a[len(c.before)]
			require.Equal(t, c.want, refused.Error)
			require.Empty(t, refused.Actions)
			require.Empty(t, a[len(a)-1].Error, "the session goes on")
		})
	}
}

// A refusal wraps the rule it broke, for a Go caller.
func TestRefusalsWrapTheRule(t *testing.T) {
	l := newLedger()
	l.set("t00001", finished)
	var err error = &RequestError{Event: EventFinished, ID: "t00001", Err: l.check(Request{Event: EventFinished, ID: "t00001"})}
	require.ErrorIs(t, err, ErrFinished)
	_, err = ParseRequest([]byte(`{"event":"created","id":"t00001",}`))
	require.ErrorIs(t, err, ErrNotJSON)
}

// The trial life the rules allow: failed before created (it could not
// start); a continue reopens a finished trial, which runs and ends again,
// or fails (it could not be continued).
func TestServeTakesATrialsLife(t *testing.T) {
	s := scripted{
		initial:  []hpo.Action{hpo.Create{ID: "t00001", Budget: 100}, hpo.Create{ID: "t00002", Budget: 100}},
		finished: []hpo.Action{hpo.Continue{TrialID: "t00001", Budget: 300}},
	}
	var out strings.Builder
	in := strings.Join([]string{
		initial,
		`{"event":"failed","id":"t00002"}`,
		created1, report1, finish1, // continued to 300
		created1, `{"event":"reported","id":"t00001","samples":300,"metric":0.1}`, finish1, // continued again
		fail1,
		created1,
	}, "\n")
	require.NoError(t, serve(newSession(testConfig(), s), strings.NewReader(in), &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, l := range lines[:9] {
		require.NotContains(t, l, `"error"`)
	}
	require.Contains(t, lines[9], `created \"t00001\": already failed`)
}

// A snapshot carries the trials: after a restore, what had ended stays
// ended and what was asked for can start.
func TestRestoreKeepsTheTrials(t *testing.T) {
	a := session(t, testConfig(), initial, created1, finish1, `{"event":"snapshot"}`)
	restore, err := json.Marshal(Request{Event: EventRestore, Snapshot: a[3].Snapshot})
	require.NoError(t, err)
	b := session(t, testConfig(), string(restore), finish1, `{"event":"created","id":"t00002"}`, `{"event":"created","id":"t00003"}`, initial)
	require.Empty(t, b[0].Error)
	require.Equal(t, `finished "t00001": already finished`, b[1].Error)
	require.Empty(t, b[2].Error)
	require.Empty(t, b[3].Error, "t00003 was asked for when t00001 finished")
	require.Contains(t, b[4].Error, "initial: already sent")
}

// 100,000 trials through one session: the ledger keeps the running ones
// by id and the ended ones as bits, and its snapshot stays small.
func TestLedgerBoundedAt100k(t *testing.T) {
	if testing.Short() {
		t.Skip("300,000 requests")
	}
	const n = 100_000
	cfg := testConfig()
	cfg.MaxTrials, cfg.MaxConcurrent = n, 8
	s, err := hpo.NewSearcher(cfg.Config)
	require.NoError(t, err)
	ss := newSession(cfg, s)
	queue := []string{}
	take := func(line string) {
		a := ss.answer(0, []byte(line))
		require.Empty(t, a.Error, line)
		for _, act := range a.Actions {
			if act.Create != nil {
				queue = append(queue, act.Create.ID)
			}
		}
	}
	take(initial)
	for i := 0; len(queue) > 0; i++ {
		id := queue[0]
		queue = queue[1:]
		take(fmt.Sprintf(`{"event":"created","id":%q}`, id))
		if i%10 == 9 {
			take(fmt.Sprintf(`{"event":"failed","id":%q}`, id))
		} else {
			take(fmt.Sprintf(`{"event":"finished","id":%q,"metric":%d,"outcome":"completed"}`, id, i))
		}
	}
	require.Empty(t, ss.trials.live)
	require.Empty(t, ss.trials.ended)
	require.LessOrEqual(t, len(ss.trials.finished.b)+len(ss.trials.failed.b), 2*(n/8+1))
	st, err := json.Marshal(ss.trials.state())
	require.NoError(t, err)
	require.Less(t, len(st), 40_000, "the ledger's snapshot after 100,000 trials")
	require.Equal(t, finished, ss.trials.phase("t00001"))
	require.Equal(t, failed, ss.trials.phase("t00010"))
	require.Equal(t, failed, ss.trials.phase("t100000"))
	require.Equal(t, finished, ss.trials.phase("t99999"))
}

// Ids that are not numbered t<n> are kept by id.
func TestLedgerKeepsOtherIDs(t *testing.T) {
	l := newLedger()
	for _, id := range []string{"a", "t1", "t000001", "t-0001"} {
		l.set(id, asked)
		l.set(id, running)
		l.set(id, finished)
		require.Equal(t, finished, l.phase(id), id)
		require.Contains(t, l.ended, id)
	}
	back := ledgerFrom(l.state())
	require.Equal(t, l.ended, back.ended)
	require.Equal(t, unknown, back.phase("t00001"), "t1 is not t00001")
}
