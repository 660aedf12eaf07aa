// Package dashboard is `gleaner dashboard`: a read-only web page, embedded
// in the binary, that shows campaigns (optimisation history, learning
// curves, parallel coordinates, parameter importance, slices, the trial
// table, the trial timeline) and pools (who held which node when, the
// allocation log, throughput curves measured and predicted, harvest
// figures).
//
// The server reads through Gleaner's client only what the views need,
// from durable records: an inline campaign's records chunks and closed
// trial workflows are read once (client.TrialFollower), a pool's log
// chunks too (client.PoolLog). One watcher per campaign or pool refreshes
// at most every Options.Refresh while a page watches it, however many
// pages do, so the load on the Temporal server is bounded by what is
// watched, not by how many people look. Every object the pages poll is
// versioned: a page asks for what changed since the version it holds.
//
// The charts are drawn in the browser by the page's own script (SVG and
// canvas), without a charting library: nothing to fetch at run time, no
// third-party code in the binary, and the whole page is a few tens of KB.
package dashboard
