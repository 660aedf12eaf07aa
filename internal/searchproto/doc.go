// Package searchproto is the Searcher contract (package hpo) as JSON
// lines, so any program can drive any Gleaner searcher: `gleaner search`
// reads one request per line and answers each with one line. It is pure:
// it reads and writes the streams it is given. It imports hpo and the
// standard library only (no workflows, no Temporal).
//
// Requests (one JSON object per line; "event" says which, and each event
// carries exactly these fields):
//
//	{"event":"initial"}                                   the first actions (once a session)
//	{"event":"created","id":"t00001"}                     a trial started
//	{"event":"reported","id":"t00001","samples":6400,"metric":0.31}
//	{"event":"finished","id":"t00001","metric":0.12,"outcome":"completed"}   or "stopped"; metric null: none
//	{"event":"failed","id":"t00001"}
//	{"event":"snapshot"}                                  the session's state
//	{"event":"restore","snapshot":{...}}                  back to a state
//	{"event":"front"}                                     the best trials so far
//
// A search of several objectives (Config.Objectives) sends values, one
// per objective in the config's order, instead of metric; one with
// constraints adds constraints, one per constraint (null, in finished
// only, for a value the trial never had):
//
//	{"event":"reported","id":"t00001","samples":6400,"values":[0.31,12.5],"constraints":[3.2]}
//	{"event":"finished","id":"t00001","values":[0.12,null],"constraints":[3.2],"outcome":"completed"}
//
// They reach the searcher through hpo.Report and hpo.Finish.
// Answers (one line each): {"actions":[...],"progress":0.25} where each
// action is one of
//
//	{"create":{"id":"t00002","params":{"lr":0.01,"opt":"adam"}}}
//	{"create":{"id":"t00009","params":{…},"budget":1200,"from":"t00002","stage":"gen 3"}}
//	{"continue":{"trial_id":"t00002","budget":3600,"stage":"rung 1"}}
//	{"stop":{"trial_id":"t00001"}}
//	{"shutdown":{"reason":"all 8 members of the population trained max_budget 38400"}}
//
// A create's budget (omitted: 0, to the trainer's end) is the progress at
// which the trial pauses: it reports there, then ends "completed", holding
// its checkpoint. A create's from names a trial that paused at a budget:
// the new trial starts from that checkpoint (progress counts on from its).
// A continue resumes a paused trial from its checkpoint to a larger
// budget; the caller answers it with "created" for the same id when it
// starts, and with "failed" if it cannot continue it. Stage labels the
// trial for people. A snapshot answers {"snapshot":{...},"progress":…}.
// A front answers {"front":{"trials":[{"id":…,"params":…,"values":[…]}],
// "hypervolume":…,"reference_point":[…]},…}: the Pareto front under
// constrained domination (a search of one objective: its best trial,
// with metric). The session keeps only that front (at most MaxFront
// trials, thinned by crowding) and the parameters of the trials in
// flight or paused (at most MaxPaused), and its snapshot carries them.
// A searcher's own snapshot ({"type":…}, which sessions answered before
// they kept their trials) restores too: the trials it may have asked for
// take any event until the session has heard of them.
//
// A trial's life: a create (or continue) action asks for it; "created"
// starts it; "reported" any number of times while it runs; it ends with
// "finished" (after "created") or "failed" (also before "created": it
// could not start). A request that breaks a rule — a field missing, of
// the wrong type, not JSON (NaN, Infinity), not one of its event's; an
// id no create named; an event out of that order — answers
// {"actions":[],"progress":…,"error":"finished \"t00007\": already finished"},
// naming the event, the id and the rule (a line that is not a JSON
// object: its line number); the searcher does not see it and the session
// goes on. hpo's searchers ignore such events; the protocol refuses them
// because a caller that sends them has lost track of its trials.
package searchproto
