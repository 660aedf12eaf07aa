package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// at is t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// fakeRun writes run n of a trial as go-mlp would: a first line at the
// step it starts from, then a line every 5 steps, one step per 0.1 s,
// up to step `to`; done adds the trainer's end marker.
func fakeRun(t *testing.T, trialDir string, n int, from, to int64, start float64, done bool) {
	t.Helper()
	dir := filepath.Join(trialDir, "runs", fmt.Sprint(n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"samples":%d,"step":%d,"time":%.3f,"rendezvous":{"node_rank":0}}`+"\n", from*32, from, float64(at(start).UnixNano())/1e9)
	b.WriteString("not json\n")
	for s := from + 5 - from%5; s <= to; s += 5 {
		fmt.Fprintf(&b, `{"samples":%d,"step":%d,"time":%.3f,"metrics":{"val_loss":0.5}}`+"\n", s*32, s, float64(at(start+0.1*float64(s-from)).UnixNano())/1e9)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	log := fmt.Sprintf("go-mlp: trial \"x\" …, step %d → step 400\n", from)
	if done {
		log += fmt.Sprintf("go-mlp: done at step %d, checkpoint written\n", to)
	} else {
		log += fmt.Sprintf("go-mlp: stopped at step %d, checkpoint written\n", to)
	}
	if err := os.WriteFile(filepath.Join(dir, "trainer.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A campaign of three trials: t1 killed at step 35 and resumed from its
// checkpoint at 20, then trained to the end; t2 trained to the end, then
// relaunched at the end (trains nothing); t3 trained to the end twice.
func fakeCampaign(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "camp")
	fakeRun(t, filepath.Join(dir, "t00001"), 1, 0, 35, 0, false)
	fakeRun(t, filepath.Join(dir, "t00001"), 2, 20, 400, 10, true)
	fakeRun(t, filepath.Join(dir, "t00002"), 1, 0, 400, 0, true)
	fakeRun(t, filepath.Join(dir, "t00002"), 2, 400, 400, 50, true)
	fakeRun(t, filepath.Join(dir, "t00003"), 1, 0, 400, 0, true)
	fakeRun(t, filepath.Join(dir, "t00003"), 2, 380, 400, 60, true)
	// A run killed before it wrote a line is skipped.
	if err := os.MkdirAll(filepath.Join(dir, "t00003", "runs", "3"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestResumesAttributesLostStepsToTheLatestFault(t *testing.T) {
	trials, err := ReadCampaign(fakeCampaign(t))
	if err != nil {
		t.Fatal(err)
	}
	faults := []Fault{{Kind: "agent", At: at(4)}, {Kind: "server", At: at(55)}}
	got := Resumes(trials, faults)
	want := []Resume{
		{Campaign: "camp", Trial: "t00001", Run: 2, Fault: 0, Reached: 35, From: 20, Lost: 15},
		{Campaign: "camp", Trial: "t00002", Run: 2, Fault: 0, Reached: 400, From: 400, Lost: 0},
		{Campaign: "camp", Trial: "t00003", Run: 2, Fault: 1, Reached: 400, From: 380, Lost: 20},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Resumes (-want +got):\n- %v\n+ %v", want, got)
	}
	if got := Resumes(trials, nil); got[0].Fault != -1 {
		t.Errorf("without faults, resume attributed to fault %d, want -1", got[0].Fault)
	}
}

func TestCountFinishesTellsTrainedFromNoop(t *testing.T) {
	trials, err := ReadCampaign(fakeCampaign(t))
	if err != nil {
		t.Fatal(err)
	}
	got := CountFinishes(trials, 400)
	want := []Finishes{
		{Campaign: "camp", Trial: "t00001", Trained: 1},
		{Campaign: "camp", Trial: "t00002", Trained: 1, Noop: 1},
		{Campaign: "camp", Trial: "t00003", Trained: 2},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CountFinishes (-want +got):\n- %v\n+ %v", want, got)
	}
}

func TestPauseIsTheLongestSilenceAcrossTheFault(t *testing.T) {
	trials, err := ReadCampaign(fakeCampaign(t))
	if err != nil {
		t.Fatal(err)
	}
	// At 4 s t1 had reported step 35 at 3.5 s and resumed at 10 s; t2 and
	// t3 report every 0.5 s.
	if got, want := Pause(trials, at(4)), 6500*time.Millisecond; got != want {
		t.Errorf("Pause at 4 s = %v, want %v", got, want)
	}
	// At 1000 s every trial had ended.
	if got := Pause(trials, at(1000)); got != 0 {
		t.Errorf("Pause after the end = %v, want 0", got)
	}
}
