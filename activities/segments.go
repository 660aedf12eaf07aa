package activities

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// A trial with a budget ends at a checkpoint (workflows.TrialInput.Budget);
// a searcher may then continue it, or start another trial from that
// checkpoint with new parameters (PBT's exploit). The second needs the
// checkpoint to outlive the first trial's pruning once it trains on, so
// the run that reaches the budget seals its resume point, one per budget
// end:
//
//	DataDir/<campaign>/<trial>/budget-checkpoint/<budget>/<name>   a hard link to the checkpoint at that budget end
//
// A trial started from it (TrialInput.From at FromProgress) gets a link
// (or a copy) of the file sealed at that budget end in its own checkpoint
// directory, under the same name, as its first resume point. It may start
// long after the searcher chose it (waiting for nodes) while its source
// trains on and reaches later budget ends: it still starts from the one
// whose score was ranked, and its budget, one interval past it, lies
// ahead of its first step. Seals are kept with the trial's data: a hard
// link costs no space while the trainer keeps the file, one checkpoint
// per budget end once it has pruned it.
//
// Runs of an older version sealed the latest budget end only, as
// budget-checkpoint/<name>; a trial without FromProgress starts from the
// latest seal of either form.
const sealedDirName = "budget-checkpoint"

// errNoSealed: the trial to start from has no sealed checkpoint here.
var errNoSealed = errors.New("no checkpoint sealed at a budget end")

// progressValue is the run's latest reported progress in the budget unit.
func (r *runner) progressValue() float64 {
	switch r.in.Trial.BudgetUnit {
	case gleaner.BudgetSteps:
		return float64(r.last.Step)
	case gleaner.BudgetEpochs:
		return r.last.Epoch
	}
	return r.last.Samples
}

// budgetReached reports whether the run's latest report reached the
// trial's budget.
func (r *runner) budgetReached() bool {
	return r.in.Trial.Budget > 0 && r.progressValue() >= r.in.Trial.Budget*(1-1e-9)
}

// budgetGrace is how long a trainer that reported its budget reached may
// take to exit by itself before it is stopped.
const budgetGrace = 2 * time.Second

// trainsPastBudget reports whether rank 0's trainer goes on training past
// its budget: it reported progress beyond the first report at the budget
// (it does not read GLEANER_BUDGET), or has not exited budgetGrace after
// it. A cooperative trainer's last report is at the budget and it exits.
func (r *runner) trainsPastBudget() bool {
	if r.in.Rank != 0 || !r.budgetReached() {
		return false
	}
	p := r.progressValue()
	if r.crossedAt.IsZero() {
		r.crossed, r.crossedAt = p, r.a.now()
		return false
	}
	return p > r.crossed || r.a.now().Sub(r.crossedAt) >= budgetGrace
}

// seal keeps the resume point of a run that reached its budget (see
// sealedDirName). A failure is logged: only a later trial started from
// this one needs it, and it then fails with a message naming it.
func (r *runner) seal() {
	if !r.budgetReached() {
		return
	}
	ckpt := r.ledger.resumePoint(r.ckptDir)
	if ckpt == "" {
		r.log.Warn("the trial reached its budget without a checkpoint to seal", "trial", r.in.Trial.TrialID)
		return
	}
	dir := filepath.Join(r.trialDir, sealedDirName, sealKey(r.in.Trial.Budget))
	if err := sealCheckpoint(dir, ckpt); err != nil {
		r.log.Warn("sealing the checkpoint of a budget end", "trial", r.in.Trial.TrialID, "checkpoint", ckpt, "error", err)
	}
}

// sealKey names the directory of the seal at budget end progress: the
// shortest decimal that reads back as the same float64, so the searcher's
// FromProgress finds it exactly.
func sealKey(progress float64) string { return strconv.FormatFloat(progress, 'f', -1, 64) }

// sealCheckpoint makes dir hold ckpt, under its name, and nothing else.
func sealCheckpoint(dir, ckpt string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := filepath.Base(ckpt)
	if err := linkOrCopy(ckpt, filepath.Join(dir, name)); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != name {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// startFrom gives a trial created from another (TrialInput.From) that
// trial's checkpoint sealed at FromProgress as its first resume point and
// returns its path.
func (r *runner) startFrom() (string, error) {
	t := r.in.Trial
	if err := gleaner.ValidateName("from", t.From); err != nil {
		return "", err
	}
	sealed := filepath.Join(filepath.Dir(r.trialDir), t.From, sealedDirName)
	dir, at := filepath.Join(sealed, sealKey(t.FromProgress)), fmt.Sprintf(" at %g %s", t.FromProgress, t.BudgetUnit)
	if t.FromProgress == 0 { // an input from before FromProgress
		dir, at = latestSeal(sealed), ""
	}
	src, err := sealedFile(dir)
	if err != nil {
		return "", err
	}
	if src == "" {
		return "", fmt.Errorf("trial %s starts from trial %s%s: %w in %s (it must have reached that budget on a worker sharing this data directory)",
			t.TrialID, t.From, at, errNoSealed, dir)
	}
	if err := os.MkdirAll(r.ckptDir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(r.ckptDir, filepath.Base(src))
	if err := linkOrCopy(src, dst); err != nil {
		return "", fmt.Errorf("trial %s starts from trial %s's checkpoint%s: %w", t.TrialID, t.From, at, err)
	}
	r.ledger.add(reportedCheckpoint{Path: dst})
	if err := r.ledger.save(r.trialDir); err != nil {
		return "", err
	}
	r.log.Info("starting from another trial's checkpoint", "trial", t.TrialID, "from", t.From, "progress", t.FromProgress,
		"checkpoint", dst)
	return dst, nil
}

// sealedFile is the checkpoint sealed in dir, or "" when there is none.
func sealedFile(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var src string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name()[0] != '.' {
			src = filepath.Join(dir, e.Name())
		}
	}
	return src, nil
}

// latestSeal is the directory of a trial's latest seal: the budget end
// with the most progress, or sealed itself where an older version sealed
// there (or nothing is).
func latestSeal(sealed string) string {
	entries, _ := os.ReadDir(sealed)
	best, latest := -1.0, sealed
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if p, err := strconv.ParseFloat(e.Name(), 64); err == nil && p > best {
			if f, _ := sealedFile(filepath.Join(sealed, e.Name())); f != "" {
				best, latest = p, filepath.Join(sealed, e.Name())
			}
		}
	}
	return latest
}

// linkOrCopy puts src's contents at dst atomically: a hard link (a
// checkpoint is never written in place), or a copy across file systems.
func linkOrCopy(src, dst string) error {
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".gleaner-tmp")
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
