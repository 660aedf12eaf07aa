#!/usr/bin/env python3
"""Optuna 3.1's multivariate TPE estimators on a recorded search, as a
fixture for hpo's cross-check (hpo/tpe_optuna_test.go).

It runs a study of Optuna's own TPESampler(multivariate=True,
constant_liar=True) on a five-dimensional Styblinski-Tang (the search of
scripts/search_vs_optuna.py's styblinski5), asynchronously: eight trials
run at a time and they finish out of order. At a few points of the search
it records what the sampler saw — every finished trial with its value,
in trial-number order and the order they finished in, and every running trial's parameters (the constant
liar's) — and the log densities of l (below) and g (above) that Optuna's
own code (_get_observation_pairs, _split_observation_pairs,
_ParzenEstimator) gives at a set of query points: the candidates l drew
and points spread over the space.

Usage (Debian's python3-optuna 3.1):

    /usr/bin/python3 scripts/optuna_tpe_fixture.py > hpo/testdata/optuna-mv-tpe.json
"""

import json
import random

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator
from optuna.samplers._tpe.sampler import _get_observation_pairs, _split_observation_pairs

SHIFT = [0.7, -1.1, 1.9, -0.4, 1.3]


def objective(p):
    total = 0.0
    for i in range(5):
        y = p[f"x{i + 1}"] - SHIFT[i]
        total += 0.5 * (y ** 4 - 16 * y * y + 5 * y)
    return total


def snapshot(study, sampler, space, rng, n_points, order):
    names = list(space)
    values, scores, violations = _get_observation_pairs(study, names, True, False)
    n = sum(s < float("inf") for s, _ in scores)
    below_i, above_i = _split_observation_pairs(scores, sampler._gamma(n), violations)
    vals = {k: np.asarray(v, dtype=float) for k, v in values.items()}
    mask = ~np.isnan(vals[names[0]])
    below = {k: v[below_i[mask[below_i]]] for k, v in vals.items()}
    above = {k: v[above_i[mask[above_i]]] for k, v in vals.items()}
    l = _ParzenEstimator(below, space, sampler._parzen_estimator_parameters)
    g = _ParzenEstimator(above, space, sampler._parzen_estimator_parameters)
    drawn = l.sample(np.random.RandomState(1), n_points)
    spread = {k: np.asarray([rng.uniform(-5, 5) for _ in range(n_points)]) for k in names}
    points = {k: np.concatenate([drawn[k], spread[k]]) for k in names}
    finished, running = [], []
    for t in study.get_trials(deepcopy=False):
        row = [t.params[k] for k in names] if all(k in t.params for k in names) else None
        if t.state == optuna.trial.TrialState.COMPLETE:
            finished.append({"number": t.number, "params": row, "value": t.value})
        elif t.state == optuna.trial.TrialState.RUNNING and row is not None:
            running.append({"number": t.number, "params": row})
    rows = [[float(points[k][i]) for k in names] for i in range(2 * n_points)]
    return {
        "finish_order": list(order),
        "finished": finished,
        "running": running,
        "points": rows,
        "log_l": [float(v) for v in l.log_pdf(points)],
        "log_g": [float(v) for v in g.log_pdf(points)],
    }


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {f"x{i + 1}": FloatDistribution(-5, 5) for i in range(5)}
    sampler = optuna.samplers.TPESampler(seed=7, constant_liar=True, multivariate=True)
    study = optuna.create_study(sampler=sampler)
    rng = random.Random(7)
    running, snaps, created, order = {}, [], 0, []
    # Eight at a time; the one to finish is drawn at random, so trials
    # finish out of order as on a pool.
    while created < 8:
        t = study.ask(space)
        running[t.number] = t
        created += 1
    while running:
        number = rng.choice(sorted(running))
        t = running.pop(number)
        study.tell(t, objective(t.params))
        order.append(number)
        done = sum(1 for x in study.trials if x.state == optuna.trial.TrialState.COMPLETE)
        if created < 120:
            if done in (15, 40, 80, 110) and len(running) == 7:
                snaps.append(snapshot(study, sampler, space, rng, 12, order))
            t = study.ask(space)
            running[t.number] = t
            created += 1
    json.dump({
        "about": "Optuna 3.1 TPESampler(multivariate=True, constant_liar=True) on styblinski5 (scripts/optuna_tpe_fixture.py)",
        "optuna": optuna.__version__,
        "space": [{"name": k, "min": -5, "max": 5} for k in space],
        "snapshots": snaps,
    }, __import__("sys").stdout, indent=1)


if __name__ == "__main__":
    main()
