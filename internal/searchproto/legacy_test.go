package searchproto

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A searcher's own snapshot ({"type":…,"state":…}), what gleaner search
// answered before sessions kept their trials, restores: the trials it had
// asked for (numbered up to its created count) take the events the
// session cannot check, once each state is heard of the rules hold, and
// trials it never asked for are refused.
func TestRestoreASearchersOwnSnapshot(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTrials = 5
	s, err := hpo.NewSearcher(cfg.Config)
	require.NoError(t, err)
	s.Initial() // t00001, t00002
	s.TrialCreated("t00001")
	s.TrialFinished("t00001", 0.5, hpo.OutcomeCompleted) // t00003
	s.TrialCreated("t00002")
	old, err := s.Snapshot()
	require.NoError(t, err)
	restore, err := json.Marshal(Request{Event: EventRestore, Snapshot: old})
	require.NoError(t, err)

	a := session(t, cfg, string(restore),
		initial,
		`{"event":"reported","id":"t00002","samples":10,"metric":0.4}`,          // running before the snapshot
		`{"event":"finished","id":"t00002","metric":0.3,"outcome":"completed"}`, // asks for t00004
		`{"event":"finished","id":"t00002","metric":0.3,"outcome":"completed"}`, // now the session knows
		`{"event":"created","id":"t00003"}`,                                     // asked before the snapshot
		`{"event":"created","id":"t00004"}`,                                     // asked since
		`{"event":"created","id":"t00005"}`,                                     // never asked
		`{"event":"finished","id":"t00003","metric":0.1,"outcome":"completed"}`, // asks for t00005
		`{"event":"snapshot"}`,
		`{"event":"front"}`,
	)
	require.Empty(t, a[0].Error)
	require.Equal(t, "initial: already sent: the first actions went out (restore a snapshot to go back)", a[1].Error)
	require.Empty(t, a[2].Error)
	require.Empty(t, a[3].Error)
	require.Equal(t, "t00004", a[3].Actions[0].Create.ID)
	require.Equal(t, `finished "t00002": already finished`, a[4].Error)
	require.Empty(t, a[5].Error)
	require.Empty(t, a[6].Error)
	require.Equal(t, `created "t00005": no create action named this trial`, a[7].Error)
	require.Empty(t, a[8].Error)
	require.Equal(t, "t00005", a[8].Actions[0].Create.ID)
	require.Contains(t, string(a[9].Snapshot), `"legacy_created":3`)
	f := a[10].Front
	require.Equal(t, "t00003", f.Trials[0].ID)
	require.Nil(t, f.Trials[0].Params, "asked before the snapshot, which kept no parameters")

	// Its session snapshot keeps the rule.
	again, err := json.Marshal(Request{Event: EventRestore, Snapshot: a[9].Snapshot})
	require.NoError(t, err)
	b := session(t, cfg, string(again),
		`{"event":"finished","id":"t00001","metric":0.5,"outcome":"completed"}`, // ended before the snapshot: the searcher ignores it
		`{"event":"created","id":"t00003"}`)
	require.Empty(t, b[1].Error, "t00001 is legacy still")
	require.Equal(t, `created "t00003": already finished; created again only after a continue names it`, b[2].Error)
}

// Every searcher's snapshot says how many trials it created, so a
// searcher's own snapshot restores with the right legacy bound.
func TestSearcherCreatedEveryAlgorithm(t *testing.T) {
	settings := map[string]string{ // the required ones
		"asha":      `{"asha":{"min_budget":1,"max_budget":9,"variant":"promotion"}}`,
		"hyperband": `{"hyperband":{"min_budget":1,"max_budget":9}}`,
		"median":    `{"median":{"interval":1}}`,
		"pbt":       `{"pbt":{"interval":1,"max_budget":10}}`,
	}
	tried := 0
	for _, name := range hpo.Algorithms() {
		cfg := testConfig().Config
		cfg.Algorithm, cfg.MaxTrials, cfg.MaxConcurrent = name, 50, 3
		cfg.Space = hpo.Space{{Name: "lr", Type: hpo.ParamFloat, Min: 1e-4, Max: 1, Log: true}}
		if s, ok := settings[name]; ok {
			require.NoError(t, json.Unmarshal([]byte(s), &cfg.Settings))
		}
		s, err := hpo.NewSearcher(cfg)
		if err != nil {
			_, listed := settings[name]
			require.False(t, listed, "%s: %v", name, err)
			t.Logf("%s: %v", name, err) // an algorithm this test does not know yet
			continue
		}
		created := 0
		for _, a := range s.Initial() {
			if _, ok := a.(hpo.Create); ok {
				created++
			}
		}
		snap, err := s.Snapshot()
		require.NoError(t, err)
		require.Equal(t, created, searcherCreated(snap), "%s: %s", name, snap)
		tried++
	}
	require.GreaterOrEqual(t, tried, 11)
	require.Equal(t, -1, searcherCreated([]byte(`{"type":"x","state":{}}`)))
	require.Equal(t, -1, searcherCreated([]byte(`not json`)))
}

// A snapshot that does not say how many trials it created takes every
// numbered id as one it could have asked for.
func TestLegacyLedgerWithoutACount(t *testing.T) {
	l := legacyLedger(-1)
	require.True(t, l.initialSent)
	require.NoError(t, l.check(Request{Event: EventFinished, ID: "t99999"}))
	require.ErrorIs(t, l.check(Request{Event: EventFinished, ID: "trial-7"}), ErrUnknownTrial)
	l = legacyLedger(0)
	require.False(t, l.initialSent, "nothing asked yet")
	require.ErrorIs(t, l.check(Request{Event: EventCreated, ID: "t00001"}), ErrUnknownTrial)
}
