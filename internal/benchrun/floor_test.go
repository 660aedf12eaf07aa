package benchrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// The floor runs every trial through Temporal, in both modes, each trainer
// reporting its objective (a trial without one fails the floor's run), and
// measures it; the report prints it beside the campaign's.
func TestRunFloorRunsEveryTrialInBothModes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev servers")
	}
	testenv.SkipIfNoCLI(t)
	ctx := context.Background()
	repo, err := devenv.RepoDir("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trainer := filepath.Join(dir, "go-mlp")
	if err := devenv.BuildTrainer(ctx, repo, trainer, nil); err != nil {
		t.Fatal(err)
	}
	for _, inline := range []bool{true, false} {
		o := CampaignOptions{Trials: 5, Concurrent: 2, Seconds: 0.04, Nodes: 2, Inline: inline}
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		f, err := runFloor(ctx, o, dir, trainer, 2)
		if err != nil {
			t.Fatalf("inline %v: %v", inline, err)
		}
		wantMode := map[bool]string{true: floorActivity, false: floorWorkflow}[inline]
		if f.Mode != wantMode || f.Trials != 5 || f.Completed != 5 || f.Failed != 0 || !(f.TrialsPerSecond > 0) || !(f.ServerCPUSeconds > 0) {
			t.Errorf("inline %v: %+v", inline, f)
		}
		var b strings.Builder
		r := CampaignReport{Inline: inline, Completed: 5, TrialsPerSecond: f.TrialsPerSecond / 2, Floor: f, VsFloor: 0.5}
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "vs floor: 0.50×") || !strings.Contains(b.String(), f.describe()) {
			t.Errorf("inline %v: the report does not show the floor:\n%s", inline, b.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "floor")); !os.IsNotExist(err) {
		t.Errorf("the floor's directory is left behind: %v", err)
	}

	// A trainer that fails fails its trial, not the floor: the others run.
	failing := filepath.Join(dir, "fails")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := CampaignOptions{Trials: 3, Concurrent: 2, Seconds: 0.04, Nodes: 2, Inline: true}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	f, err := runFloor(ctx, o, dir, failing, 2)
	if err != nil || f.Completed != 0 || f.Failed != 3 {
		t.Errorf("a failing trainer: %+v, %v; want 3 failed", f, err)
	}
}

// --vs-floor refuses more trials than one workflow's history holds.
func TestVsFloorBoundsTrials(t *testing.T) {
	o := CampaignOptions{Trials: FloorMaxTrials + 1, Concurrent: 2, Seconds: 1, Nodes: 2, VsFloor: true}
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "--vs-floor") {
		t.Errorf("err = %v, want a --vs-floor error", err)
	}
	o.Trials = FloorMaxTrials
	if err := o.validate(); err != nil {
		t.Error(err)
	}
}

// A trainer whose report carries no val_loss fails its trial, as in the
// Optuna script.
func TestFloorTrialWithoutObjectiveFails(t *testing.T) {
	f := filepath.Join(t.TempDir(), "report.jsonl")
	if err := os.WriteFile(f, []byte(`{"samples":3,"metrics":{"loss":1}}`+"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reportsObjective(f, 7); err == nil || !strings.Contains(err.Error(), "no val_loss") {
		t.Errorf("err = %v, want no val_loss", err)
	}
	if err := os.WriteFile(f, []byte(`{"samples":3,"metrics":{"val_loss":0.5}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reportsObjective(f, 7); err != nil {
		t.Error(err)
	}
}
