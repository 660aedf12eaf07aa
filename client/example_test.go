package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
)

// These examples need a Temporal server and a Gleaner worker, so they are
// compiled but not run (they have no Output comment).

// Connect with the settings the gleaner CLI and workers use: address,
// namespace, task queue, TLS or mTLS, API key — from the TEMPORAL_* and
// GLEANER_TASK_QUEUE environment variables here.
func ExampleNew() {
	ctx := context.Background()
	conn := client.DefaultConnection() // localhost:7233, namespace default, task queue gleaner
	if err := conn.LoadEnv(nil); err != nil {
		log.Fatal(err)
	}
	tc, err := conn.Dial(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tc.Close()
	c := client.New(tc, client.Options{TaskQueue: conn.TaskQueue, Namespace: conn.Namespace})
	_ = c
}

// newClient connects to a local dev server.
func newClient(ctx context.Context) *client.Client {
	tc, err := client.DefaultConnection().Dial(ctx)
	if err != nil {
		log.Fatal(err)
	}
	return client.New(tc, client.Options{})
}

// Submit a campaign from a spec file and wait for its result.
func ExampleClient_Submit() {
	ctx := context.Background()
	c := newClient(ctx)

	spec, err := gleaner.LoadSpec("examples/go-mlp/campaign.yaml")
	if err != nil {
		log.Fatal(err) // examples/go-mlp/campaign.yaml:12:3: budget.max_trial: unknown field; …
	}
	camp, err := c.Submit(ctx, spec)
	switch {
	case errors.Is(err, client.ErrInvalidSpec):
		log.Fatal(err) // invalid campaign spec: budget.max_trials: 0 must be at least 1
	case errors.Is(err, client.ErrExists):
		log.Fatalf("%v: choose another name", err)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println("submitted", camp.Name, camp.UIURL)

	res, err := c.Wait(ctx, camp.Name)
	if err != nil {
		log.Fatal(err) // e.g. the campaign reached budget.max_failures
	}
	fmt.Printf("%s: %d completed, best %s = %g\n", res.State, res.Completed, res.Best.TrialID, res.Best.Score)
}

// Follow a campaign until it ends: trials done, nodes in use, best score.
func ExampleClient_Watch() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	c := newClient(ctx)

	for p := range c.Watch(ctx, "go-mlp-spirals", 2*time.Second) {
		if p.Err != nil {
			log.Print(p.Err) // the watch goes on, unless the campaign is not found
			continue
		}
		s := p.Status
		line := fmt.Sprintf("%s %d/%d trials ended, %d running", s.State, s.Ended(), s.MaxTrials, s.Running)
		if p.Pool != nil {
			line += fmt.Sprintf(", pool %s: %d nodes", p.Pool.Name, len(p.Pool.Nodes))
		}
		if s.Best != nil {
			line += fmt.Sprintf(", best %s = %.4g", s.Objective, s.Best.Score)
		}
		fmt.Println(line)
	}
}

// Pause a campaign (its trials checkpoint and give their nodes back),
// resume it, and stop it.
func ExampleClient_Pause() {
	ctx := context.Background()
	c := newClient(ctx)
	const name = "go-mlp-spirals"

	s, err := c.Pause(ctx, name, "the batch queue needs the machine tonight")
	if errors.Is(err, client.ErrRejected) {
		log.Fatal(err) // pause campaign "go-mlp-spirals": rejected: campaign go-mlp-spirals is already paused
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.State) // paused

	if _, err := c.Resume(ctx, name, ""); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Stop(ctx, name, "good enough"); err != nil {
		log.Fatal(err)
	}
	res, err := c.Wait(ctx, name) // the trials stop at a checkpoint first
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.State, res.Reason) // stopped good enough
}

// Print the best trials so far, best first.
func ExampleClient_Leaderboard() {
	ctx := context.Background()
	c := newClient(ctx)

	board, err := c.Leaderboard(ctx, "go-mlp-spirals")
	if errors.Is(err, client.ErrNotFound) {
		log.Fatal("no such campaign")
	} else if err != nil {
		log.Fatal(err)
	}
	for i, e := range board {
		fmt.Printf("%2d %s %-9s %.4g lr=%s hidden=%s\n", i+1, e.TrialID, e.State, e.Score, e.Params["lr"], e.Params["hidden"])
	}
}

// List every trial: state, nodes, restarts, checkpoint, and why the
// failed ones failed. The results are the root package's types
// (gleaner.TrialStatus, its states gleaner.TrialRunning, …): a program
// that steers campaigns imports gleaner, hpo and client, nothing more.
func ExampleClient_Trials() {
	ctx := context.Background()
	c := newClient(ctx)

	trials, err := c.Trials(ctx, "go-mlp-spirals")
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range trials {
		fmt.Printf("%s %-9s nodes=%d restarts=%d step=%d checkpoint=%s\n",
			t.TrialID, t.State, len(t.Nodes), t.Restarts, t.Step, t.Checkpoint)
		if t.State == gleaner.TrialFailed {
			fmt.Println("  failed:", t.Error)
		}
	}
}
