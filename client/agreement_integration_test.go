package client_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// The commands agree: an ASHA campaign of real trainers is paused,
// resumed, promotes trials and is stopped, and at each step status,
// trials, leaderboard, pool status and the UI's details show the same
// states and counts (each read once per round; a round taken while a
// trial changed state is read again), and "best" never gets worse.
func TestStatusTrialsLeaderboardPoolAndDetailsAgree(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	testenv.Worker(t, srv, taskQueue, nil)
	c := client.New(srv.Client(), client.Options{TaskQueue: taskQueue, Namespace: srv.Namespace()})
	const r, eta = 320.0, 3.0 // rungs at 320 and 960 samples: 10 and 30 steps of 32, 200 ms each
	spec := mlpSpec(t, "agree", 6, 3, 100000, 200)
	spec.Resources.MaxNodes = 1
	spec.Search.Algorithm = hpo.AlgorithmASHA
	spec.Search.ASHA = &hpo.ASHASettings{Variant: "promotion", MinBudget: r, MaxBudget: r * eta, ReductionFactor: eta}
	if _, err := c.Submit(timeout(t, time.Minute), spec); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	a := &agreement{t: t, c: c, tc: srv.Client(), name: spec.Name, pool: spec.Pool}

	a.until("a trial runs", func(v view) error { return want(v.status.Running > 0, "none running") })
	if _, err := c.Pause(timeout(t, time.Minute), spec.Name, "agreement test"); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	a.until("paused", func(v view) error {
		s := v.status
		return want(s.Running == 0 && s.Waiting == 0 && s.Paused > 0 && v.registered == 0 &&
			strings.Contains(v.details, " · 0 running · "), "running %d, waiting %d, paused %d, %d registered in the pool",
			s.Running, s.Waiting, s.Paused, v.registered)
	})
	if _, err := c.Resume(timeout(t, time.Minute), spec.Name, ""); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	a.until("running again", func(v view) error {
		return want(v.status.State == workflows.CampaignRunning && v.status.Paused == 0 && v.status.Running > 0,
			"%s, %d paused, %d running", v.status.State, v.status.Paused, v.status.Running)
	})
	a.until("a trial parked at rung 0", func(v view) error {
		for _, tr := range v.trials {
			if tr.State == workflows.TrialParked && tr.Stage == "rung 0" {
				return nil
			}
		}
		return fmt.Errorf("none parked (%d parked, %d continued)", v.status.Parked, v.status.Continued)
	})
	a.until("a trial promoted to rung 1", func(v view) error {
		for _, b := range v.status.Trials {
			if b.Stage == "rung 1" && b.State != workflows.TrialParked && b.State != workflows.TrialAtRung {
				return nil
			}
		}
		return fmt.Errorf("none promoted (%d continued)", v.status.Continued)
	})
	if _, err := c.Stop(timeout(t, time.Minute), spec.Name, ""); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := c.Wait(timeout(t, 3*time.Minute), spec.Name); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	a.until("stopped", func(v view) error {
		if v.status.State != workflows.CampaignStopped {
			return fmt.Errorf("state %s", v.status.State)
		}
		if v.status.AtRung == 0 || strings.Contains(v.details, "paused") || strings.Contains(v.details, "parked") {
			return fmt.Errorf("%d stopped at their rung; details %q", v.status.AtRung, v.details)
		}
		for _, tr := range v.trials {
			if tr.State == workflows.TrialAtRung && tr.Stage == "rung 0" {
				return nil
			}
		}
		return fmt.Errorf("no trial listed stopped at rung 0")
	})
}

func states(ts []workflows.TrialStatus) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, " %s=%s", t.TrialID, t.State)
		if t.Stage != "" {
			fmt.Fprintf(&b, "(%s)", t.Stage)
		}
	}
	return b.String()
}

func want(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// agreement reads every command's view of a campaign.
type agreement struct {
	t          *testing.T
	c          *client.Client
	tc         tclient.Client
	name, pool string
	best       *workflows.LeaderboardEntry // the best seen so far
}

// view is one round of reads: status, trials, leaderboard, the pool's
// registrations of the campaign and the campaign's UI details.
type view struct {
	status     workflows.CampaignStatus
	trials     []workflows.TrialStatus
	board      []workflows.LeaderboardEntry
	registered int
	details    string
}

func (a *agreement) read() (view, error) {
	ctx := timeout(a.t, time.Minute)
	var v view
	var err error
	if v.status, err = a.c.Status(ctx, a.name); err != nil {
		return v, err
	}
	l, err := a.c.TrialsView(ctx, a.name, 0)
	if err != nil {
		return v, err
	}
	v.trials = l.Trials
	if v.board, err = a.c.Leaderboard(ctx, a.name); err != nil {
		return v, err
	}
	p, err := a.c.PoolStatus(ctx, a.pool)
	if err != nil {
		return v, err
	}
	for _, t := range p.Trials {
		if t.Registration.CampaignID == a.name {
			v.registered++
		}
	}
	md, err := a.tc.QueryWorkflow(ctx, workflows.CampaignWorkflowID(a.name), "", "__temporal_workflow_metadata")
	if err != nil {
		return v, err
	}
	var m sdkpb.WorkflowMetadata
	if err := md.Get(&m); err != nil {
		return v, err
	}
	v.details = m.GetCurrentDetails()
	// A second status: a round in which the campaign changed is no
	// moment to compare at.
	again, err := a.c.Status(ctx, a.name)
	if err != nil {
		return v, err
	}
	if fmt.Sprint(again.Trials, again.CampaignCounts) != fmt.Sprint(v.status.Trials, v.status.CampaignCounts) {
		return v, fmt.Errorf("the campaign changed while it was read")
	}
	return v, nil
}

// agree checks that the round's reads show the same states and counts.
func (a *agreement) agree(v view) error {
	s := v.status
	byID := map[string]workflows.TrialStatus{}
	count := map[workflows.TrialState]int{}
	for _, t := range v.trials {
		byID[t.TrialID] = t
		count[t.State]++
	}
	for _, b := range s.Trials {
		t, ok := byID[b.TrialID]
		if !ok {
			return fmt.Errorf("status names trial %s (%s), trials does not list it", b.TrialID, b.State)
		}
		if t.State != b.State || t.Stage != b.Stage {
			return fmt.Errorf("trial %s: status says %s (%s), trials %s (%s)", b.TrialID, b.State, b.Stage, t.State, t.Stage)
		}
	}
	for state, n := range map[workflows.TrialState]int{workflows.TrialRunning: s.Running, workflows.TrialPaused: s.Paused,
		workflows.TrialParked: s.Parked, workflows.TrialAtRung: s.AtRung} {
		if count[state] != n {
			return fmt.Errorf("status counts %d %s, trials lists %d", n, state, count[state])
		}
	}
	for _, e := range v.board {
		if t, ok := byID[e.TrialID]; ok && t.State != e.State {
			return fmt.Errorf("trial %s: leaderboard says %s, trials %s", e.TrialID, e.State, t.State)
		}
	}
	if v.registered > s.Running+s.Waiting {
		return fmt.Errorf("%d registered in the pool, the campaign has %d running and %d waiting for nodes", v.registered, s.Running, s.Waiting)
	}
	if census := strings.Join(s.Census(), " · "); !strings.Contains(v.details, census) {
		return fmt.Errorf("the details do not say %q:\n%s", census, v.details)
	}
	if s.Best != nil && len(v.board) > 0 && s.Best.TrialID != v.board[0].TrialID && s.Best.Score != v.board[0].Score {
		return fmt.Errorf("status's best is %s %g, the leaderboard's first %s %g", s.Best.TrialID, s.Best.Score, v.board[0].TrialID, v.board[0].Score)
	}
	return nil
}

// until reads rounds until one agrees and meets cond; it checks on every
// round that agrees that "best" has not got worse.
func (a *agreement) until(what string, cond func(view) error) {
	a.t.Helper()
	eventually(a.t, 3*time.Minute, what, func() error {
		v, err := a.read()
		if err != nil {
			return err
		}
		if err := a.agree(v); err != nil {
			return err
		}
		a.t.Logf("%s: %s; trials %s", what, strings.Join(v.status.Census(), ", "), states(v.trials))
		if b := v.status.Best; b != nil {
			if a.best != nil && b.Score > a.best.Score {
				a.t.Errorf("best got worse: %s %g, then %s %g (min)", a.best.TrialID, a.best.Score, b.TrialID, b.Score)
			}
			a.best = b
		}
		return cond(v)
	})
}
