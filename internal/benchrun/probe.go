package benchrun

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	gclient "github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// ProbeSample is one look at a running campaign: what a user's commands
// cost then, and the memory of the worker and the server.
type ProbeSample struct {
	Seconds float64 `json:"seconds"` // since the campaign started
	Ended   int     `json:"ended"`
	// StatusMS, LeaderboardMS and TrialsMS are how long `gleaner status`,
	// `leaderboard` and `trials` (its default: the newest 1,000) take.
	StatusMS      float64 `json:"status_ms"`
	LeaderboardMS float64 `json:"leaderboard_ms"`
	TrialsMS      float64 `json:"trials_ms"`
	Trials        int     `json:"trials"`
	// TrialsBusy: the campaign was too busy to answer within
	// client.QueryPatience, and trials listed only its records chunks.
	TrialsBusy bool `json:"trials_busy,omitempty"`
	// WorkerRSSMB is this process's resident memory (the worker runs in
	// it); ServerRSSMB the dev server's.
	WorkerRSSMB float64 `json:"worker_rss_mb"`
	ServerRSSMB float64 `json:"server_rss_mb"`
}

// probe measures one ProbeSample.
func probe(ctx context.Context, c *gclient.Client, name string, serverPID int, start time.Time) (ProbeSample, workflows.CampaignStatus, error) {
	s := ProbeSample{Seconds: time.Since(start).Seconds()}
	timed := func(ms *float64, f func() error) error {
		t0 := time.Now()
		err := f()
		*ms = float64(time.Since(t0).Microseconds()) / 1000
		return err
	}
	var st workflows.CampaignStatus
	if err := timed(&s.StatusMS, func() (err error) { st, err = c.Status(ctx, name); return err }); err != nil {
		return s, st, fmt.Errorf("status: %w", err)
	}
	s.Ended = st.Ended()
	if err := timed(&s.LeaderboardMS, func() error { _, err := c.Leaderboard(ctx, name); return err }); err != nil {
		return s, st, fmt.Errorf("leaderboard: %w", err)
	}
	if err := timed(&s.TrialsMS, func() error {
		l, err := c.TrialsNewest(ctx, name, 1000)
		s.Trials, s.TrialsBusy = len(l.Trials), l.Busy
		return err
	}); err != nil {
		return s, st, fmt.Errorf("trials: %w", err)
	}
	s.WorkerRSSMB = rssMB(os.Getpid())
	if serverPID > 0 {
		s.ServerRSSMB = rssMB(serverPID)
	}
	return s, st, nil
}

// rssMB reads a process's resident set size from /proc (0 where there is
// no /proc).
func rssMB(pid int) float64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// cpuSeconds is a process's user + system CPU time from /proc (0 where
// there is no /proc): a cost that does not depend on what else the
// machine runs.
func cpuSeconds(pid int) float64 {
	self, _ := cpuTimes(pid)
	return self
}

// cpuTimes is a process's own user + system CPU time and that of its
// children it has waited for (cutime + cstime: for the benchmark's
// process, the trainers it ran), from /proc; zeros where there is none.
// scripts/campaign_optuna.py counts Optuna's side the same way
// (getrusage of itself and of its children).
func cpuTimes(pid int) (self, children float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// Fields after the command (which may hold spaces) start past ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0
	}
	var t [4]float64
	for j := range t {
		t[j], _ = strconv.ParseFloat(f[11+j], 64)
	}
	return (t[0] + t[1]) / clockTicks, (t[2] + t[3]) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100
