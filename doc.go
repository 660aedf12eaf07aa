// Package gleaner holds Gleaner's public types: the campaign spec that the
// CLI and Go programs submit, and (in later milestones) the client API.
//
// A campaign is one NAS or HPO study: a search space and algorithm, an
// objective metric, a budget, a trial command and its resource bounds, and
// the pool of idle nodes it runs on. It must not import Temporal.
package gleaner
