// Package workflows holds Gleaner's Temporal workflows — CampaignWorkflow,
// TrialWorkflow and PoolWorkflow — with the names of their task queue,
// signals, queries and updates, their inputs and their search attributes.
//
// Workflow code here is deterministic: workflow.Now, workflow.Go,
// selectors, sorted keys; all I/O and heavy computation happen in the
// activities package. Long-lived workflows continue-as-new with a compact
// state well before Temporal's history limits.
//
// It imports gleaner (public types, Node and ExitStatus included), hpo and
// jpa, and the Temporal SDK; it must not import activities, cluster or
// worker: activities are called by name, and clients import this package
// for its types and names without pulling in launchers or wiring.
package workflows
