#!/usr/bin/env python3
"""Gleaner's searchers side by side with Optuna's samplers, in one run.

Every method meets the same objectives, budgets, parallelism, seeds and
trial durations: a simulated pool of --workers runs trials asynchronously,
each taking exp(N(0, sigma^2)) time units drawn from a generator seeded
apart from the searchers, so trials finish out of order as on a real pool.
Optuna runs through its ask/tell API (RandomSampler, TPESampler with
constant_liar); Gleaner's searchers through `gleaner search`, which speaks
the Searcher contract as JSON lines (docs/search.md).

The objectives are those of `gleaner bench search` (internal/searchbench):
Branin, Hartmann-6, Rosenbrock-10 and a mixed space (a float, a
log-scaled float, an integer and a choice).

Usage (Debian's python3-optuna 3.1 serves /usr/bin/python3):

    go build -o bin/gleaner ./cmd/gleaner
    /usr/bin/python3 scripts/search_vs_optuna.py --gleaner bin/gleaner --seeds 20

It prints, per objective and method, the best value found after N trials:
median [first quartile, third quartile] over the seeds, as a Markdown
table (--json for every trial count).
"""

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import os

# ---------------------------------------------------------------- objectives


def branin(p):
    x1, x2 = p["x1"], p["x2"]
    b, c, r, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 6.0, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - r) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


HART_ALPHA = [1.0, 1.2, 3.0, 3.2]
HART_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
          [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
HART_P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
          [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]


def hartmann6(p):
    x = [p[f"x{i + 1}"] for i in range(6)]
    total = 0.0
    for i in range(4):
        inner = sum(HART_A[i][j] * (x[j] - HART_P[i][j] * 1e-4) ** 2 for j in range(6))
        total += HART_ALPHA[i] * math.exp(-inner)
    return -total


def rosenbrock10(p):
    x = [p[f"x{i + 1}"] for i in range(10)]
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(9))


MIXED_PENALTY = {"adam": 0, "rmsprop": 0.5, "sgd": 1, "adagrad": 2}


def mixed(p):
    return ((p["x"] - 1) ** 2 / 4 + (math.log10(p["lr"]) + 2.5) ** 2
            + (p["layers"] - 7) ** 2 / 10 + MIXED_PENALTY[p["opt"]])


def floats(n, lo, hi):
    return [{"name": f"x{i + 1}", "type": "float", "min": lo, "max": hi} for i in range(n)]


OBJECTIVES = {
    "branin": (branin, 0.397887, [{"name": "x1", "type": "float", "min": -5, "max": 10},
                                  {"name": "x2", "type": "float", "min": 0, "max": 15}]),
    "hartmann6": (hartmann6, -3.32237, floats(6, 0, 1)),
    "rosenbrock10": (rosenbrock10, 0.0, floats(10, -5, 10)),
    "mixed": (mixed, 0.0, [{"name": "x", "type": "float", "min": -5, "max": 5},
                           {"name": "lr", "type": "float", "min": 1e-5, "max": 1, "log": True},
                           {"name": "layers", "type": "int", "min": 1, "max": 20},
                           {"name": "opt", "type": "choice", "choices": ["sgd", "adam", "rmsprop", "adagrad"]}]),
}

# ------------------------------------------------------------------- drivers


class Pool:
    """Simulated asynchronous workers: trials end in time order."""

    def __init__(self, seed, sigma):
        self.rng = random.Random(seed * 1_000_003 + 17)
        self.sigma = sigma
        self.now = 0.0
        self.seq = 0
        self.running = []  # (end, seq, id, params)

    def start(self, tid, params):
        d = math.exp(self.sigma * self.rng.gauss(0, 1)) if self.sigma else 1.0
        self.seq += 1
        self.running.append((self.now + d, self.seq, tid, params))

    def next(self):
        self.running.sort(key=lambda r: (r[0], r[1]))
        end, _, tid, params = self.running.pop(0)
        self.now = end
        return tid, params


def run_optuna(sampler_name, objective, space, seed, trials, workers, sigma):
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if sampler_name == "optuna-random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    elif sampler_name == "optuna-tpe":
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    else:
        raise ValueError(sampler_name)
    dists = {}
    for d in space:
        if d["type"] == "float":
            dists[d["name"]] = FloatDistribution(d["min"], d["max"], log=d.get("log", False))
        elif d["type"] == "int":
            dists[d["name"]] = IntDistribution(d["min"], d["max"], log=d.get("log", False))
        else:
            dists[d["name"]] = CategoricalDistribution(d["choices"])
    study = optuna.create_study(sampler=sampler, direction="minimize")
    pool = Pool(seed, sigma)
    created, best, curve, asked = 0, math.inf, [], {}
    while created < trials and len(pool.running) < workers:
        t = study.ask(dists)
        asked[t.number] = t
        pool.start(t.number, t.params)
        created += 1
    while pool.running:
        tid, params = pool.next()
        v = objective(params)
        study.tell(asked.pop(tid), v)
        best = min(best, v)
        curve.append(best)
        while created < trials and len(pool.running) < workers:
            t = study.ask(dists)
            asked[t.number] = t
            pool.start(t.number, t.params)
            created += 1
    return curve


def run_gleaner(gleaner, algorithm, objective, space, seed, trials, workers, sigma):
    cfg = {"algorithm": algorithm, "space": space, "seed": seed, "max_trials": trials,
           "max_concurrent": workers, "mode": "min"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
        path = f.name
    proc = subprocess.Popen([gleaner, "search", "--config", path], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        pool = Pool(seed, sigma)
        best, curve, shutdown = math.inf, [], False

        def ask(req):
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            ans = json.loads(proc.stdout.readline())
            if ans.get("error"):
                raise RuntimeError(f"gleaner search: {ans['error']}")
            return ans["actions"]

        def apply(actions):
            nonlocal shutdown
            for a in actions:
                if "create" in a:
                    c = a["create"]
                    pool.start(c["id"], c["params"])
                    apply(ask({"event": "created", "id": c["id"]}))
                elif "shutdown" in a:
                    shutdown = True
                else:
                    raise RuntimeError(f"unexpected action {a}")

        apply(ask({"event": "initial"}))
        while pool.running and not shutdown:
            tid, params = pool.next()
            v = objective(params)
            best = min(best, v)
            curve.append(best)
            apply(ask({"event": "finished", "id": tid, "metric": v, "outcome": "completed"}))
        return curve
    finally:
        proc.stdin.close()
        proc.wait()
        os.unlink(path)


def quartiles(xs):
    xs = sorted(xs)

    def at(q):
        pos = q * (len(xs) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])

    return at(0.25), at(0.5), at(0.75)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gleaner", default="bin/gleaner", help="gleaner binary (default bin/gleaner)")
    ap.add_argument("--objectives", default=",".join(OBJECTIVES))
    ap.add_argument("--methods", default="optuna-random,optuna-tpe,gleaner-random,gleaner-quasirandom,gleaner-tpe",
                    help="optuna-random, optuna-tpe, gleaner-<algorithm>")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sigma", type=float, default=0.3, help="sigma of the log-normal trial duration")
    ap.add_argument("--at", default="10,25,50,100")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    at = [int(n) for n in args.at.split(",")]
    results = []
    for name in args.objectives.split(","):
        objective, optimum, space = OBJECTIVES[name]
        for method in args.methods.split(","):
            curves = []
            for s in range(args.seed, args.seed + args.seeds):
                if method.startswith("optuna-"):
                    c = run_optuna(method, objective, space, s, args.trials, args.workers, args.sigma)
                elif method.startswith("gleaner-"):
                    c = run_gleaner(args.gleaner, method[len("gleaner-"):], objective, space, s,
                                    args.trials, args.workers, args.sigma)
                else:
                    sys.exit(f"--methods: {method!r} is not optuna-random, optuna-tpe or gleaner-<algorithm>")
                curves.append(c)
            print(f"search_vs_optuna: {method} on {name}: {args.seeds} seeds done", file=sys.stderr)
            best = [quartiles([c[min(n, len(c)) - 1] for c in curves]) for n in range(1, args.trials + 1)]
            results.append({"objective": name, "optimum": optimum, "method": method, "best": best})
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        return
    print(f"best found after N trials: median [q1, q3] over {args.seeds} seeds; "
          f"{args.workers} workers, duration sigma {args.sigma}, {args.trials} trials per run\n")
    print("| objective | optimum | method | " + " | ".join(f"N={n}" for n in at) + " |")
    print("|---|---|---|" + "---|" * len(at))
    for r in results:
        cells = []
        for n in at:
            if n > args.trials:
                cells.append("–")
                continue
            q1, med, q3 = r["best"][n - 1]
            cells.append(f"{med:.4g} [{q1:.4g}, {q3:.4g}]")
        print(f"| {r['objective']} | {r['optimum']:g} | {r['method']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
