package slurmdemo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Clock is the replay's and the monitor's time, injected for tests.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (then it returns ctx's error).
	Sleep(ctx context.Context, d time.Duration) error
}

// WallClock is the real clock.
type WallClock struct{}

func (WallClock) Now() time.Time { return time.Now() }

func (WallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// JobScriptBody is every replayed batch job's script: a real process
// that runs for the seconds its one argument says, on the job's first
// node.
const JobScriptBody = "#!/bin/sh\n# A replayed batch job of gleaner slurm-demo: it runs for the seconds of its argument.\nexec sleep \"$1\"\n"

// WriteJobScript writes the batch jobs' script into dir and returns its
// path.
func WriteJobScript(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("batch job script: %w", err)
	}
	path := filepath.Join(dir, "swf-job.sh")
	if err := os.WriteFile(path, []byte(JobScriptBody), 0o755); err != nil {
		return "", fmt.Errorf("batch job script: %w", err)
	}
	return path, nil
}

// Replayer submits a plan's jobs at their compressed submit times.
type Replayer struct {
	Submitter Submitter
	// Partition is the batch partition or queue (default "batch").
	Partition string
	// Script is the job script (WriteJobScript).
	Script string
	// Clock is the time (default WallClock).
	Clock Clock
	// Retries is how many times a failed submission is tried again, a second
	// apart (default 2).
	Retries int
}

// Submitted is a job the replayer submitted.
type Submitted struct {
	Job PlannedJob
	ID  string    // the scheduler's job id
	At  time.Time // when the submission returned
	// Late is how far after its planned time the submission returned.
	Late time.Duration
}

// SubmitArgs is the sbatch argv of one replayed job: its name and comment
// are its Name, its time limit is whole minutes (Slurm's --time=M), and
// its script runs for its compressed run time.
func SubmitArgs(j PlannedJob, partition, script string) []string {
	return []string{
		"--parsable",
		"--job-name=" + j.Name,
		"--comment=" + j.Name,
		"--partition=" + partition,
		"--nodes=" + strconv.Itoa(j.Nodes),
		"--time=" + strconv.Itoa(int(j.Limit/time.Minute)),
		"--output=/dev/null",
		script,
		strconv.FormatFloat(j.Run.Seconds(), 'f', 3, 64),
	}
}

// Replay submits jobs (in order of At) at start + At each, and calls
// progress after each submission. It returns what it submitted, also
// when ctx ends or the submission keeps failing (with the error).
func (r *Replayer) Replay(ctx context.Context, start time.Time, jobs []PlannedJob, progress func(Submitted)) ([]Submitted, error) {
	clock := r.Clock
	if clock == nil {
		clock = WallClock{}
	}
	part := r.Partition
	if part == "" {
		part = "batch"
	}
	retries := r.Retries
	if retries == 0 {
		retries = 2
	}
	var done []Submitted
	for _, j := range jobs {
		due := start.Add(j.At)
		if err := clock.Sleep(ctx, due.Sub(clock.Now())); err != nil {
			return done, err
		}
		var (
			id  string
			err error
		)
		for attempt := 0; attempt <= retries; attempt++ {
			if attempt > 0 {
				if err := clock.Sleep(ctx, time.Second); err != nil {
					return done, err
				}
			}
			if id, err = r.Submitter.Submit(ctx, j, part, r.Script); err == nil {
				break
			}
		}
		if err != nil {
			return done, fmt.Errorf("submitting %s: %w", j.Name, err)
		}
		now := clock.Now()
		s := Submitted{Job: j, ID: id, At: now, Late: max(now.Sub(due), 0)}
		done = append(done, s)
		if progress != nil {
			progress(s)
		}
	}
	return done, nil
}
