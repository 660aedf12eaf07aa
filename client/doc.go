// Package client submits and steers Gleaner campaigns from Go programs:
// Submit a gleaner.CampaignSpec, follow it with Status, Watch or Wait, read
// its Leaderboard and Trials, and Pause, Resume or Stop it. It is what the
// gleaner CLI uses. It talks to a Temporal server, where a Gleaner worker
// (gleaner worker) runs the workflows; it needs Gleaner's search attributes
// registered there for Trials.
//
// Connect with worker.Dial, which takes the worker's connection settings
// (address, namespace, TLS or mTLS, API key), or with any Temporal client:
//
//	cfg := worker.DefaultConfig() // localhost:7233, namespace "default"
//	tc, err := worker.Dial(ctx, cfg)
//	c := client.New(tc, client.Options{Namespace: cfg.Namespace})
//	spec, err := gleaner.LoadSpec("campaign.yaml")
//	camp, err := c.Submit(ctx, spec)
//	res, err := c.Wait(ctx, camp.Name)
//
// Errors wrap ErrNotFound, ErrExists, ErrInvalidSpec, ErrRejected and
// ErrInvalidName for errors.Is. See docs/client.md.
//
// It imports gleaner and workflows (for their types and names) and the
// Temporal SDK client; it must not import worker or activities: it steers
// workers, it is not one (its tests and examples use worker.Dial).
package client
