package hpo

// Revision is the revision of the searchers' decision rules: what each
// searcher proposes, stops, promotes and continues for the same inputs.
//
// A search that runs inside a durable workflow is replayed: the workflow
// re-runs its searcher over the same inputs and must reach the same
// decisions it recorded. So a change to any searcher that alters a
// decision adds one to Revision and keeps the old rule for a Config whose
// Revision is lower; the campaign records the revision it was created
// under (Config.Revision) and keeps it for its whole life, through every
// continue-as-new. Changes that decide nothing differently (speed,
// messages, new settings whose zero value is the old behaviour) need no
// revision.
//
// Revision 1 decides exactly as revision 0, the rules of campaigns
// created before revisions were recorded.
//
// Revision 2 (revisionJointHeight): multivariate TPE scores its joint l
// and g as Optuna 3.1's TPESampler(multivariate=True) does, a float's
// kernel by its height (no 1/σ), and counts in Scott's bandwidth only the
// parameters with more than one value (jointMixture, parzen.go).
// Independent TPE and every other searcher decide as in revision 1.
//
// Revision 3 (revisionRungRank, rungrank.go): ASHA and Hyperband, both
// variants, tell a TPE sampler each trial's result at the highest rung it
// reached, ranked by that rung, furthest first, then by the metric there
// (Optuna's ranking of pruned trials); promotion tells it again each time
// a trial pauses higher. Other samplers are fed as in revision 2.
//
// Revision 4 (revisionOneRung, rungfeed.go): ASHA and Hyperband, both
// variants, fit a TPE sampler on the results at one rung only, as BOHB:
// the largest budget with at least max(n_startup_trials, d+2) results
// (complete results above every rung), each trial there ranked by its
// metric at that rung. Other samplers are fed as in revision 2.
//
// Revision 5 (revisionTrialOrder, tpe_age.go): TPE weighs its
// observations and liars by age in the order their trials were opened,
// as Optuna 3.1 by trial number, rather than in the order they finished
// with the liars newest. Every other searcher decides as in revision 4.
const Revision = 5
