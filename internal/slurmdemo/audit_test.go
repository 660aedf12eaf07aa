package slurmdemo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// report is one report line of a fake run: the time (s after t0),
// samples, and whether it names a checkpoint.
type report struct {
	t       float64
	samples float64
	ckpt    bool
}

// writeRun writes a trial's run n's report file under campaignDir.
func writeRun(t *testing.T, campaignDir, trial string, n int, reps ...report) {
	t.Helper()
	dir := filepath.Join(campaignDir, trial, "runs", itoa(n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, r := range reps {
		line := map[string]any{"samples": r.samples, "time": float64(at(r.t).UnixNano()) / 1e9}
		if r.ckpt {
			line["checkpoint"] = "/ckpt/step"
		}
		j, _ := json.Marshal(line)
		b = append(append(b, j...), '\n')
	}
	b = append(b, "not json\n"...) // malformed lines are counted, not fatal
	if err := os.WriteFile(filepath.Join(dir, "report.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestAuditCampaign(t *testing.T) {
	dir := t.TempDir()
	// t1: preempted twice; its first stop checkpointed at the SIGTERM (lost
	// nothing), its second was killed 64 samples past its last checkpoint;
	// the third run finishes the budget of 1000.
	writeRun(t, dir, "t1", 1, report{0, 0, false}, report{10, 320, true}, report{12, 384, true})
	writeRun(t, dir, "t1", 2, report{20, 384, false}, report{30, 640, true}, report{32, 704, false})
	writeRun(t, dir, "t1", 3, report{40, 640, false}, report{50, 960, true}, report{52, 1000, true})
	// t2: two runs at once (the second started before the first's last
	// report, from an older checkpoint) that both finish: completed twice,
	// and regressed.
	writeRun(t, dir, "t2", 1, report{0, 0, false}, report{30, 1000, true})
	writeRun(t, dir, "t2", 2, report{20, 500, false}, report{35, 1000, true})
	// t3: resumed from before its last checkpoint (a lost checkpoint).
	writeRun(t, dir, "t3", 1, report{0, 0, false}, report{10, 300, true})
	writeRun(t, dir, "t3", 2, report{20, 100, false}, report{30, 400, false})
	// t5: its first run finished the budget as its node was taken back, and
	// it was launched again: the second run starts at the budget and
	// trains nothing. Not completed twice.
	writeRun(t, dir, "t5", 1, report{0, 0, false}, report{10, 1000, true})
	writeRun(t, dir, "t5", 2, report{20, 1000, false}, report{21, 1000, true})
	// A trial directory without runs, and a stray file, are skipped.
	_ = os.MkdirAll(filepath.Join(dir, "t4"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "ledger.json"), nil, 0o644)

	a, err := AuditCampaign(dir, 1000, 64)
	if err != nil {
		t.Fatal(err)
	}
	if a.Started != 4 || a.Runs != 9 || a.Finished != 3 || a.FinishedTwice != 1 || a.RelaunchedDone != 1 || a.Overlapping != 1 || a.Regressed != 2 || a.Malformed != 9 {
		t.Fatalf("audit %+v", a)
	}
	lost := map[string]float64{}
	for _, s := range a.Stops {
		lost[s.Trial+"/"+itoa(s.Run)] = s.Lost
	}
	want := map[string]float64{"t1/1": 0, "t1/2": 64, "t2/1": 500, "t3/1": 200, "t5/1": 0}
	for k, w := range want {
		if lost[k] != w {
			t.Errorf("stop %s lost %v, want %v", k, lost[k], w)
		}
	}
	if a.LostPerStop.N != 5 || a.LostStops != 3 || a.LostPerStop.Max != 500 {
		t.Errorf("lost per stop %+v, %d lost any", a.LostPerStop, a.LostStops)
	}
	if w := a.Worst(1); len(w) != 1 || w[0].Trial != "t2" {
		t.Errorf("worst %+v", w)
	}
	// Rates of runs with ≥ 10 s of reports: 32 (t1/1: 384/12), 26.7
	// (t1/2), 30 (t1/3), 33.3 (t2/1), 33.3 (t2/2), 30 (t3/1), 30 (t3/2),
	// 100 (t5/1): median 30.
	if a.Rate != 30 {
		t.Errorf("rate %v, want 30", a.Rate)
	}
}

func TestAuditSamplesIn(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, "t1", 1, report{0, 0, false}, report{10, 320, true}, report{12, 384, false})
	writeRun(t, dir, "t1", 2, report{20, 320, false}, report{30, 640, true})
	a, err := AuditCampaign(dir, 1000, 64)
	if err != nil {
		t.Fatal(err)
	}
	// Over [5, 25): run 1 from 0 (its last report before 5) to 384; run 2
	// from its start, 320, to 320; less the 64 its stop lost (trained again).
	if got := a.SamplesIn(at(5), at(25)); got != 384-64 {
		t.Errorf("samples in [5, 25) %v, want %v", got, 384-64)
	}
	if got := a.SamplesIn(at(0), at(100)); got != 384+320-64 {
		t.Errorf("samples in all %v, want %v", got, 384+320-64)
	}
	if got := a.SamplesIn(at(200), at(300)); got != 0 {
		t.Errorf("samples after the end %v", got)
	}
}
