package activities

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The ledger keeps the newest checkpoints by samples, then step, then
// report order, without duplicates and bounded.
func TestLedgerOrder(t *testing.T) {
	var l trialLedger
	l.add(reportedCheckpoint{Path: "/a", Samples: 100})
	l.add(reportedCheckpoint{Path: "/b", Samples: 300})
	l.add(reportedCheckpoint{Path: "/c", Samples: 200})
	l.add(reportedCheckpoint{Path: "/d", Samples: 300, Step: 7}) // same samples, later step
	l.add(reportedCheckpoint{Path: "/e", Samples: 300, Step: 7}) // same counters, reported later
	l.add(reportedCheckpoint{Path: "/a", Samples: 400})          // re-reported: moves
	var got []string
	for _, c := range l.Checkpoints {
		got = append(got, c.Path)
	}
	require.Equal(t, []string{"/a", "/e", "/d", "/b", "/c"}, got)
	for i := range 2 * keepCheckpoints {
		l.add(reportedCheckpoint{Path: filepath.Join("/x", string(rune('a'+i))), Samples: float64(1000 + i)})
	}
	require.Len(t, l.Checkpoints, keepCheckpoints)
	require.Equal(t, float64(1000+2*keepCheckpoints-1), l.Checkpoints[0].Samples)
}

// The resume point is the newest recorded checkpoint still on disk.
func TestLedgerResumePointSkipsDeleted(t *testing.T) {
	dir := t.TempDir()
	var l trialLedger
	for i, name := range []string{"old", "mid", "new"} {
		l.add(reportedCheckpoint{Path: filepath.Join(dir, name), Samples: float64(i)})
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mid"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old"), nil, 0o644))
	require.Equal(t, filepath.Join(dir, "mid"), l.resumePoint(dir))
	require.Equal(t, "", (&trialLedger{}).resumePoint(dir))
}

func TestCheckCheckpoint(t *testing.T) {
	root := t.TempDir()
	ckpt := filepath.Join(root, "checkpoints")
	work := filepath.Join(root, "work")
	for _, d := range []string{ckpt, work, filepath.Join(ckpt, "dir")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{filepath.Join(ckpt, "ok"), filepath.Join(root, "secret")} {
		require.NoError(t, os.WriteFile(f, nil, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(root, "secret"), filepath.Join(ckpt, "link-out")))
	require.NoError(t, os.Symlink(filepath.Join(ckpt, "ok"), filepath.Join(ckpt, "link-in")))
	for _, c := range []struct {
		path, want, err string
	}{
		{path: filepath.Join(ckpt, "ok"), want: filepath.Join(ckpt, "ok")},
		{path: filepath.Join(ckpt, "dir"), want: filepath.Join(ckpt, "dir")},
		{path: "../checkpoints/ok", want: filepath.Join(ckpt, "ok")}, // relative to the work dir
		{path: filepath.Join(ckpt, "link-in"), want: filepath.Join(ckpt, "link-in")},
		{path: filepath.Join(ckpt, "gone"), err: "does not exist"},
		{path: ckpt, err: "outside"},
		{path: filepath.Join(ckpt, "..", "secret"), err: "outside"},
		{path: filepath.Join(root, "checkpoints-evil", "x"), err: "outside"},
		{path: filepath.Join(ckpt, "link-out"), err: "links outside"},
		{path: "", err: "outside"},
	} {
		got, err := checkCheckpoint(ckpt, work, c.path)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.path)
			continue
		}
		require.NoError(t, err, c.path)
		require.Equal(t, c.want, got)
	}
}

// A run that changes nothing in the ledger does not write ledger.json
// again; one that does, does.
func TestLedgerSavesOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ledgerFileName)
	l := trialLedger{Read: map[string]int64{}, Owner: "run-1"}
	require.NoError(t, l.save(dir))
	first, err := os.ReadFile(path)
	require.NoError(t, err)

	l, err = loadLedger(dir)
	require.NoError(t, err)
	marked := append(first, '\n') // the same ledger; a write would drop the mark
	require.NoError(t, os.WriteFile(path, marked, 0o644))
	require.NoError(t, l.save(dir))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(marked), string(got), "an unchanged ledger was written again")

	l.add(reportedCheckpoint{Path: filepath.Join(dir, "c1"), Samples: 1})
	require.NoError(t, l.save(dir))
	again, err := loadLedger(dir)
	require.NoError(t, err)
	require.Len(t, again.Checkpoints, 1)
}
