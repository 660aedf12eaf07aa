package activities

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// A trial with a budget ends at a checkpoint (workflows.TrialInput.Budget);
// a searcher may then continue it, or start another trial from that
// checkpoint with new parameters (PBT's exploit). The second needs the
// checkpoint to outlive the first trial's pruning once it trains on, so
// the run that reaches the budget seals its resume point:
//
//	DataDir/<campaign>/<trial>/budget-checkpoint/<name>   a hard link to the checkpoint of the latest budget end
//
// and a trial started from it gets a link (or a copy) of that file in its
// own checkpoint directory, under the same name, as its first resume point.
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
	if err := sealCheckpoint(filepath.Join(r.trialDir, sealedDirName), ckpt); err != nil {
		r.log.Warn("sealing the checkpoint of a budget end", "trial", r.in.Trial.TrialID, "checkpoint", ckpt, "error", err)
	}
}

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
// trial's sealed checkpoint as its first resume point and returns its
// path.
func (r *runner) startFrom() (string, error) {
	from := r.in.Trial.From
	if err := gleaner.ValidateName("from", from); err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(r.trialDir), from, sealedDirName)
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
	if src == "" {
		return "", fmt.Errorf("trial %s starts from trial %s: %w in %s (it must have reached a budget on a worker sharing this data directory)",
			r.in.Trial.TrialID, from, errNoSealed, dir)
	}
	if err := os.MkdirAll(r.ckptDir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(r.ckptDir, filepath.Base(src))
	if err := linkOrCopy(src, dst); err != nil {
		return "", fmt.Errorf("trial %s starts from trial %s's checkpoint: %w", r.in.Trial.TrialID, from, err)
	}
	r.ledger.add(reportedCheckpoint{Path: dst})
	if err := r.ledger.save(r.trialDir); err != nil {
		return "", err
	}
	r.log.Info("starting from another trial's checkpoint", "trial", r.in.Trial.TrialID, "from", from, "checkpoint", dst)
	return dst, nil
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
