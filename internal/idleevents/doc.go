// Package idleevents reads idle-node event files, the format of BFTrainer's
// Summit trace (data/traces/summit-idle-*.csv): one event per line,
// "unix_time,event,nodes". It is the one reader of that format: sim
// replays a file as a trace of the machine (sim.ReadIdleEvents), and
// cluster.ReplaySource plays one onto local slots so nodes really come
// and go.
//
// It is pure (standard library only) and streams: a caller keeps what it
// needs of each event.
package idleevents
