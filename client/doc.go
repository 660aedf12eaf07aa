// Package client submits and steers Gleaner campaigns from Go programs:
// Submit a gleaner.CampaignSpec, follow it with Status, Watch or Wait, read
// its Leaderboard and Trials, and Pause, Resume or Stop it. It is what the
// gleaner CLI uses. It talks to a Temporal server, where a Gleaner worker
// (gleaner worker) runs the workflows; it needs Gleaner's search attributes
// registered there for Trials.
//
// Connect with a Connection — address, namespace, task queue, TLS or mTLS,
// API key: the settings, flags and environment variables of the gleaner
// CLI and workers — or with any Temporal client:
//
//	conn := client.DefaultConnection() // localhost:7233, namespace "default"
//	err := conn.LoadEnv(nil)           // TEMPORAL_ADDRESS, TEMPORAL_API_KEY, …
//	tc, err := conn.Dial(ctx)
//	c := client.New(tc, client.Options{TaskQueue: conn.TaskQueue, Namespace: conn.Namespace})
//	spec, err := gleaner.LoadSpec("campaign.yaml")
//	camp, err := c.Submit(ctx, spec)
//	res, err := c.Wait(ctx, camp.Name)
//
// Errors wrap ErrNotFound, ErrExists, ErrInvalidSpec, ErrRejected and
// ErrInvalidName for errors.Is. See docs/client.md.
//
// Its results are the root package's view types (gleaner.CampaignStatus,
// gleaner.TrialStatus, gleaner.PoolStatus, …), and it finds workflows by
// the root package's names (gleaner.CampaignWorkflowID, the SearchAttr
// and Query constants). It imports gleaner, hpo, codec, internal/sdklog
// (the SDK's logger) and the Temporal SDK client, and builds without cgo: it must not import workflows,
// worker, activities, jpa, allocator or the embedded reference data (data,
// internal/dataset) — it steers workers, it is not one; `make
// check-surface` checks it. The worker imports it, for Connection.
package client
