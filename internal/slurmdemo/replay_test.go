package slurmdemo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock whose Sleep moves time at once.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

// fakeSlurm is a slurm.Runner that records each command with the fake
// time it ran at and answers from a script.
type fakeSlurm struct {
	clock *fakeClock
	// cost is how long each command takes.
	cost time.Duration
	// answer returns a command's output; nil answers sbatch with
	// increasing job ids.
	answer func(n int, name string, args []string) ([]byte, error)
	calls  []fakeCall
}

type fakeCall struct {
	at   time.Time
	argv string
}

func (f *fakeSlurm) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, fakeCall{at: f.clock.Now(), argv: name + " " + strings.Join(args, " ")})
	_ = f.clock.Sleep(ctx, f.cost)
	if f.answer != nil {
		return f.answer(len(f.calls), name, args)
	}
	return []byte(fmt.Sprintf("%d\n", len(f.calls))), nil
}

func TestSubmitArgs(t *testing.T) {
	j := PlannedJob{Name: "swf-12581", Nodes: 3, Run: 28897 * time.Millisecond, Limit: 2 * time.Minute}
	got := strings.Join(SubmitArgs(j, "batch", "/out/batch/swf-job.sh"), " ")
	want := "--parsable --job-name=swf-12581 --comment=swf-12581 --partition=batch --nodes=3 --time=2 --output=/dev/null /out/batch/swf-job.sh 28.897"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestReplaySubmitsAtCompressedTimes(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start}
	// Each sbatch takes 300 ms: the third job, due 100 ms after the second,
	// is submitted as soon as the second returns, and counted late.
	run := &fakeSlurm{clock: clock, cost: 300 * time.Millisecond}
	jobs := []PlannedJob{
		{Name: "swf-1", At: 0, Nodes: 1, Run: time.Second, Limit: time.Minute},
		{Name: "swf-2", At: 10 * time.Second, Nodes: 2, Run: 2 * time.Second, Limit: time.Minute},
		{Name: "swf-3", At: 10*time.Second + 100*time.Millisecond, Nodes: 1, Run: time.Second, Limit: time.Minute},
	}
	r := &Replayer{Submitter: SlurmSubmitter{Run: run}, Script: "/s.sh", Clock: clock}
	var seen []string
	subs, err := r.Replay(context.Background(), start, jobs, func(s Submitted) { seen = append(seen, s.ID) })
	if err != nil {
		t.Fatal(err)
	}
	wantAt := []time.Duration{0, 10 * time.Second, 10*time.Second + 300*time.Millisecond}
	for i, c := range run.calls {
		if got := c.at.Sub(start); got != wantAt[i] {
			t.Errorf("sbatch %d at %v, want %v", i, got, wantAt[i])
		}
		if !strings.Contains(c.argv, "--job-name="+jobs[i].Name) || !strings.HasPrefix(c.argv, "sbatch --parsable") {
			t.Errorf("call %d: %s", i, c.argv)
		}
	}
	if len(subs) != 3 || subs[2].ID != "3" || subs[2].Late != 500*time.Millisecond || subs[0].Late != 300*time.Millisecond {
		t.Errorf("submitted %+v; want ids 1..3, the third 500 ms late (due at 10.1 s, returned at 10.6 s)", subs)
	}
	if strings.Join(seen, ",") != "1,2,3" {
		t.Errorf("progress saw %v", seen)
	}
}

func TestReplayRetriesThenGivesUp(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	fail := errors.New("sbatch: error: Socket timed out")
	run := &fakeSlurm{clock: clock, answer: func(n int, _ string, _ []string) ([]byte, error) {
		if n == 2 { // the first job's second attempt succeeds
			return []byte("77;gleaner\n"), nil
		}
		return nil, fail
	}}
	jobs := []PlannedJob{{Name: "swf-1", Nodes: 1, Run: time.Second, Limit: time.Minute}, {Name: "swf-2", Nodes: 1, Run: time.Second, Limit: time.Minute}}
	subs, err := (&Replayer{Submitter: SlurmSubmitter{Run: run}, Script: "/s.sh", Clock: clock}).Replay(context.Background(), clock.Now(), jobs, nil)
	if len(subs) != 1 || subs[0].ID != "77" {
		t.Fatalf("submitted %+v, want job 77 (its second attempt)", subs)
	}
	if !errors.Is(err, fail) || !strings.Contains(err.Error(), "swf-2") {
		t.Fatalf("got %v, want the sbatch error naming swf-2", err)
	}
	if len(run.calls) != 5 { // 2 for swf-1, 1 + 2 retries for swf-2
		t.Errorf("%d sbatch calls, want 5", len(run.calls))
	}
}

func TestReplayStopsWhenCancelled(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	run := &fakeSlurm{clock: clock, answer: func(n int, _ string, _ []string) ([]byte, error) {
		cancel() // Ctrl-C during the first submission
		return []byte("5\n"), nil
	}}
	jobs := []PlannedJob{{Name: "swf-1", Nodes: 1, Run: time.Second, Limit: time.Minute}, {Name: "swf-2", At: time.Hour, Nodes: 1, Run: time.Second, Limit: time.Minute}}
	subs, err := (&Replayer{Submitter: SlurmSubmitter{Run: run}, Script: "/s.sh", Clock: clock}).Replay(ctx, clock.Now(), jobs, nil)
	if !errors.Is(err, context.Canceled) || len(subs) != 1 || len(run.calls) != 1 {
		t.Fatalf("got %d submitted, %d calls, %v; want 1, 1, context.Canceled", len(subs), len(run.calls), err)
	}
}

func TestReplayRejectsAnUnreadableJobID(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	run := &fakeSlurm{clock: clock, answer: func(int, string, []string) ([]byte, error) { return []byte("Submitted batch job 5\n"), nil }}
	_, err := (&Replayer{Submitter: SlurmSubmitter{Run: run}, Script: "/s.sh", Clock: clock}).Replay(context.Background(), clock.Now(),
		[]PlannedJob{{Name: "swf-9", Nodes: 1, Run: time.Second, Limit: time.Minute}}, nil)
	if err == nil || !strings.Contains(err.Error(), "swf-9") || !strings.Contains(err.Error(), "sbatch --parsable") {
		t.Fatalf("got %v, want an error naming the job and the command", err)
	}
}
