#!/usr/bin/env python3
"""Gleaner's TPE on a conditional space side by side with Optuna's define-by-run TPE.

The problem is internal/searchbench/conditional.go's: an optimizer (sgd,
adam, rmsprop), each one's own parameters (sgd: lr, momentum; adam: lr,
beta1, eps; rmsprop: lr, alpha), and a weight decay and a batch size that
all share; a noise-free synthetic "validation loss" with a different
optimum per optimizer (minimum 0.04, sgd's). Optuna asks for the
parameters define-by-run, as a user writes it: the optimizer first, then
only that optimizer's parameters. Gleaner gets the same space with `when`
conditions, through `gleaner search` (docs/search.md).

Every method meets the same budget, workers, seeds and trial durations:
the simulated asynchronous pool of scripts/search_vs_optuna.py (its Pool:
each trial takes exp(N(0, sigma^2)) time units drawn from a generator
seeded apart from the searchers, so trials finish out of order).

Methods: optuna-tpe (TPESampler's defaults), optuna-tpe-liar
(constant_liar=True, as Gleaner's TPE runs by default), optuna-tpe-group
(multivariate=True, group=True), optuna-random, and gleaner-<algorithm>
(gleaner-tpe, gleaner-tpe-multivariate, gleaner-tpe-group: multivariate
and group as Optuna's optuna-tpe-group, gleaner-random, ...).

Usage (Debian's python3-optuna 3.1 serves /usr/bin/python3):

    go build -o bin/gleaner ./cmd/gleaner
    /usr/bin/python3 scripts/conditional_vs_optuna.py --gleaner bin/gleaner --seeds 20 --trials 200 --at 50,100,200 --wins

It prints the best value found after N ended trials: median [first
quartile, third quartile] over the seeds, as a Markdown table, and with
--wins each method's win probability against each other at the last
column.
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import search_vs_optuna as svo  # noqa: E402  (the pool, the records and the gleaner driver)

NAME = "conditional"
OPTIMUM = 0.04


def when(opt):
    return {"param": "optimizer", "values": [opt]}


SPACE = [
    {"name": "optimizer", "type": "choice", "choices": ["sgd", "adam", "rmsprop"]},
    {"name": "sgd_lr", "type": "float", "min": 1e-4, "max": 1, "log": True, "when": when("sgd")},
    {"name": "momentum", "type": "float", "min": 0, "max": 0.99, "when": when("sgd")},
    {"name": "adam_lr", "type": "float", "min": 1e-5, "max": 0.1, "log": True, "when": when("adam")},
    {"name": "beta1", "type": "float", "min": 0.5, "max": 0.99, "when": when("adam")},
    {"name": "eps", "type": "float", "min": 1e-10, "max": 1e-3, "log": True, "when": when("adam")},
    {"name": "rmsprop_lr", "type": "float", "min": 1e-5, "max": 0.1, "log": True, "when": when("rmsprop")},
    {"name": "alpha", "type": "float", "min": 0.8, "max": 0.999, "when": when("rmsprop")},
    {"name": "weight_decay", "type": "float", "min": 1e-6, "max": 0.1, "log": True},
    {"name": "batch_size", "type": "int", "min": 16, "max": 1024, "log": True},
]


def loss(p):
    """internal/searchbench/conditional.go's conditionalLoss."""
    b = math.log2(p["batch_size"] / 128)
    w = math.log10(p["weight_decay"])
    opt = p["optimizer"]
    if opt == "sgd":
        m = p["momentum"]
        e = math.log10(p["sgd_lr"]) - math.log10(1 - m)
        return 0.04 + 0.5 * (e - (-0.5 + 0.15 * b)) ** 2 + 2 * (m - 0.9) ** 2 + 0.08 * (w + 3.5) ** 2 + 0.03 * (b - 1) ** 2
    if opt == "adam":
        b1 = p["beta1"]
        a = math.log10(p["adam_lr"]) - (-3 + 0.15 * b) - 0.5 * (b1 - 0.9)
        return (0.06 + 0.3 * a * a + 0.8 * (b1 - 0.9) ** 2 + 0.01 * (math.log10(p["eps"]) + 8) ** 2
                + 0.05 * (w + 5) ** 2 + 0.03 * (b + 1) ** 2)
    r = math.log10(p["rmsprop_lr"]) - (-3.5 + 0.1 * b)
    return 0.08 + 0.4 * r * r + 10 * (p["alpha"] - 0.95) ** 2 + 0.06 * (w + 4.5) ** 2 + 0.03 * b * b


def suggest(trial):
    """The space define-by-run: the optimizer first, then its parameters."""
    p = {"optimizer": trial.suggest_categorical("optimizer", ["sgd", "adam", "rmsprop"])}
    for d in SPACE[1:]:
        if "when" in d and p["optimizer"] not in d["when"]["values"]:
            continue
        if d["type"] == "float":
            p[d["name"]] = trial.suggest_float(d["name"], d["min"], d["max"], log=d.get("log", False))
        else:
            p[d["name"]] = trial.suggest_int(d["name"], d["min"], d["max"], log=d.get("log", False))
    return p


def run_optuna(method, seed, trials, workers, sigma):
    import optuna
    import warnings

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if method == "optuna-tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    elif method == "optuna-tpe-liar":
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    elif method == "optuna-tpe-group":
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True)
    elif method == "optuna-random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:
        raise ValueError(method)
    study = optuna.create_study(sampler=sampler, direction="minimize")
    pool, rec, created, asked = svo.Pool(seed, sigma), svo.Record(1.0), 0, {}

    def fill():
        nonlocal created
        while created < trials and len(pool.running) < workers:
            t = study.ask()
            asked[t.number] = t
            pool.start(t.number, [(1.0, loss(suggest(t)), None)], 1.0)
            created += 1

    fill()
    while pool.running:
        tid, samples, value, _ = pool.next()
        study.tell(asked.pop(tid), value)
        pool.end(tid)
        rec.ended(samples, value)
        fill()
    return rec.steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gleaner", default="bin/gleaner", help="gleaner binary (default bin/gleaner)")
    ap.add_argument("--methods", default="optuna-tpe,optuna-tpe-liar,optuna-tpe-group,gleaner-tpe,gleaner-random")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sigma", type=float, default=0.3, help="sigma of the log-normal trial duration")
    ap.add_argument("--at", default="25,50,100")
    ap.add_argument("--wins", action="store_true", help="also print win probabilities at the last column")
    ap.add_argument("--save", help="also write the results (every seed's best at each column) to this JSON file")
    ap.add_argument("--load", help="run nothing: print the tables of results --save wrote (files joined by commas), "
                                   "e.g. of one process per method run in parallel")
    args = ap.parse_args()
    at = [int(n) for n in args.at.split(",")]
    svo.OBJECTIVES[NAME] = (loss, OPTIMUM, SPACE)  # what svo.run_gleaner's trials evaluate

    def best_at(run, n):  # the last step before an (n+1)-th trial ended
        best = run[0][1]
        for _, b, ended in run:
            if ended > n:
                break
            best = b
        return best

    results = []
    if args.load:
        for path in args.load.split(","):
            with open(path) as f:
                for r in json.load(f):
                    r["best"] = {int(n): q for n, q in r["best"].items()}
                    results.append(r)
    for method in args.methods.split(",") if not args.load else []:
        runs = []
        for s in range(args.seed, args.seed + args.seeds):
            if method.startswith("optuna-"):
                runs.append(run_optuna(method, s, args.trials, args.workers, args.sigma))
            elif method.startswith("gleaner-"):
                runs.append(svo.run_gleaner(args.gleaner, method[len("gleaner-"):], NAME, SPACE, s,
                                            args.trials, args.workers, args.sigma))
            else:
                sys.exit(f"--methods: {method!r} is not optuna-<method> or gleaner-<algorithm>")
        print(f"conditional_vs_optuna: {method}: {args.seeds} seeds done", file=sys.stderr)
        results.append({"method": method, "best": {n: svo.quartiles([best_at(r, n) for r in runs]) for n in at},
                        "last": [best_at(r, at[-1]) for r in runs]})
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results, f)
    print(f"best found after N trials on {NAME} (minimum {OPTIMUM}): median [q1, q3] over {args.seeds} seeds; "
          f"{args.workers} workers, duration sigma {args.sigma}, {args.trials} trials per run\n")
    print("| method | " + " | ".join(f"N={n}" for n in at) + " |")
    print("|---|" + "---|" * len(at))
    for r in results:
        cells = []
        for n in at:
            q1, med, q3 = r["best"][n]
            cells.append(f"{med:.4f} [{q1:.4f}, {q3:.4f}]")
        print(f"| {r['method']} | " + " | ".join(cells) + " |")
    if args.wins:
        print(f"\nwin probability of the row against the column at N={at[-1]} (ties half)\n")
        print("| method | " + " | ".join(r["method"] for r in results) + " |")
        print("|---|" + "---|" * len(results))
        for a in results:
            print(f"| {a['method']} | " + " | ".join(f"{svo.win(a['last'], b['last']):.2f}" for b in results) + " |")


if __name__ == "__main__":
    main()
