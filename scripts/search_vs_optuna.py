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

def load_curves():
    """The learning-curve table `gleaner bench search` replays."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal", "searchbench", "curves", "go-mlp.csv")
    curves = {}
    with open(path) as f:
        rows = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert rows[0] == "lr,hidden,batch,momentum,samples,val_loss", rows[0]
    for line in rows[1:]:
        lr, hidden, batch, mom, samples, loss = (float(x) for x in line.split(","))
        curves.setdefault((lr, int(hidden), int(batch), mom), []).append((samples, loss))
    for c in curves.values():
        c.sort()
    return curves


CURVES = load_curves()
CURVE_BUDGET = max(c[-1][0] for c in CURVES.values())
LRS = sorted({k[0] for k in CURVES})
HIDDENS = sorted({k[1] for k in CURVES})


def nearest_log(grid, x):
    return min(grid, key=lambda g: abs(math.log(g) - math.log(x)))


def go_mlp_curve(p):
    key = (nearest_log(LRS, p["lr"]), int(nearest_log(HIDDENS, p["hidden"])), int(p["batch"]), float(p["momentum"]))
    return CURVES[key]


OBJECTIVES["go-mlp"] = (None, min(c[-1][1] for c in CURVES.values()), [
    {"name": "lr", "type": "float", "min": LRS[0], "max": LRS[-1], "log": True},
    {"name": "hidden", "type": "int", "min": HIDDENS[0], "max": HIDDENS[-1], "log": True},
    {"name": "batch", "type": "choice", "choices": [str(b) for b in sorted({k[2] for k in CURVES})]},
    {"name": "momentum", "type": "choice", "choices": ["%g" % m for m in sorted({k[3] for k in CURVES})]},
])


def points(name, p):
    """What a trial at p reports: (samples, value) pairs, and the full budget."""
    f, _, _ = OBJECTIVES[name]
    if f is None:
        return go_mlp_curve(p), CURVE_BUDGET
    return [(1.0, f(p))], 1.0


# ------------------------------------------------------------------- drivers


class Pool:
    """Simulated asynchronous workers. A trial reports at each point of its
    curve, spaced in time by its samples; a trial's full budget takes
    exp(N(0, sigma^2)) time units."""

    def __init__(self, seed, sigma):
        self.rng = random.Random(seed * 1_000_003 + 17)
        self.sigma = sigma
        self.now = 0.0
        self.seq = 0
        self.running = {}  # id -> [start, duration, points, next, seq, budget]

    def start(self, tid, pts, budget):
        d = math.exp(self.sigma * self.rng.gauss(0, 1)) if self.sigma else 1.0
        self.seq += 1
        self.running[tid] = [self.now, d, pts, 0, self.seq, budget]

    def next(self):
        """The next report: (id, samples, value, last)."""
        def at(r):
            return r[0] + r[1] * r[2][r[3]][0] / r[5]
        tid = min(self.running, key=lambda t: (at(self.running[t]), self.running[t][4]))
        r = self.running[tid]
        self.now = at(r)
        samples, value = r[2][r[3]]
        r[3] += 1
        last = r[3] == len(r[2])
        return tid, samples, value, last

    def end(self, tid):
        del self.running[tid]


class Record:
    """Best result so far after each ended trial, and the budget spent."""

    def __init__(self, budget):
        self.budget, self.spent, self.best, self.steps = budget, 0.0, math.inf, []

    def ended(self, samples, value):
        self.spent += samples / self.budget
        self.best = min(self.best, value)
        self.steps.append((self.spent, self.best))


def run_optuna(method, name, space, seed, trials, workers, sigma):
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    budget = points(name, {d["name"]: (d["choices"][0] if d["type"] == "choice" else d["min"]) for d in space})[1]
    pruner = optuna.pruners.NopPruner()
    if method == "optuna-tpe":
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    else:
        sampler = optuna.samplers.RandomSampler(seed=seed)
    if method == "optuna-sha":
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=max(1, round(budget / 27)), reduction_factor=3)
    elif method == "optuna-hyperband":
        pruner = optuna.pruners.HyperbandPruner(min_resource=max(1, round(budget / 27)), max_resource=max(1, round(budget)),
                                                reduction_factor=3)
    elif method == "optuna-median":
        pruner = optuna.pruners.MedianPruner(n_startup_trials=5)
    elif method not in ("optuna-random", "optuna-tpe"):
        raise ValueError(method)
    dists = {}
    for d in space:
        if d["type"] == "float":
            dists[d["name"]] = FloatDistribution(d["min"], d["max"], log=d.get("log", False))
        elif d["type"] == "int":
            dists[d["name"]] = IntDistribution(d["min"], d["max"], log=d.get("log", False))
        else:
            dists[d["name"]] = CategoricalDistribution(d["choices"])
    # A fixed name: HyperbandPruner picks a trial's bracket by a hash of the
    # study name and trial number, and the default name is a random UUID,
    # which made optuna-hyperband differ from run to run for the same seed.
    study = optuna.create_study(study_name=f"search-vs-optuna-{seed}", sampler=sampler, pruner=pruner,
                                direction="minimize")
    pool, rec, created, asked = Pool(seed, sigma), Record(budget), 0, {}

    def fill():
        nonlocal created
        while created < trials and len(pool.running) < workers:
            t = study.ask(dists)
            asked[t.number] = t
            pool.start(t.number, *points(name, t.params))
            created += 1

    fill()
    while pool.running:
        tid, samples, value, last = pool.next()
        t = asked[tid]
        if not last:
            t.report(value, int(samples))
            if not t.should_prune():
                continue
            study.tell(t, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(t, value)
        pool.end(tid)
        del asked[tid]
        rec.ended(samples, value)
        fill()
    return rec.steps


def gleaner_settings(algorithm, budget):
    if algorithm == "asha":
        return {"asha": {"min_budget": budget / 27, "reduction_factor": 3, "max_budget": budget}}
    if algorithm == "hyperband":
        return {"hyperband": {"min_budget": budget / 27, "max_budget": budget, "reduction_factor": 3}}
    if algorithm == "median":
        return {"median": {"interval": budget / 10}}
    return {}


def run_gleaner(gleaner, algorithm, name, space, seed, trials, workers, sigma):
    budget = points(name, {d["name"]: (d["choices"][0] if d["type"] == "choice" else d["min"]) for d in space})[1]
    cfg = {"algorithm": algorithm, "space": space, "seed": seed, "max_trials": trials,
           "max_concurrent": workers, "mode": "min", "settings": gleaner_settings(algorithm, budget)}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
        path = f.name
    proc = subprocess.Popen([gleaner, "search", "--config", path], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        pool, rec = Pool(seed, sigma), Record(budget)
        shutdown, stopping = False, set()

        def ask(req):
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"gleaner search exited ({proc.wait()}); see its error above")
            ans = json.loads(line)
            if ans.get("error"):
                raise RuntimeError(f"gleaner search: {ans['error']}")
            return ans["actions"]

        def apply(actions):
            nonlocal shutdown
            for a in actions:
                if "create" in a:
                    c = a["create"]
                    pool.start(c["id"], *points(name, c["params"]))
                    apply(ask({"event": "created", "id": c["id"]}))
                elif "stop" in a:
                    stopping.add(a["stop"]["trial_id"])
                elif "shutdown" in a:
                    shutdown = True
                else:
                    raise RuntimeError(f"unexpected action {a}")

        apply(ask({"event": "initial"}))
        while pool.running and not shutdown:
            tid, samples, value, last = pool.next()
            if not last:
                apply(ask({"event": "reported", "id": tid, "samples": samples, "metric": value}))
                if tid not in stopping:
                    continue
            pool.end(tid)
            stopping.discard(tid)
            rec.ended(samples, value)
            apply(ask({"event": "finished", "id": tid, "metric": value,
                       "outcome": "completed" if last else "stopped"}))
        return rec.steps
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
    ap.add_argument("--objectives", default="branin,hartmann6,rosenbrock10,mixed")
    ap.add_argument("--methods", default="optuna-random,optuna-tpe,gleaner-random,gleaner-quasirandom,gleaner-tpe",
                    help="optuna-random, optuna-tpe, optuna-sha, optuna-hyperband, optuna-median, gleaner-<algorithm>")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sigma", type=float, default=0.3, help="sigma of the log-normal trial duration")
    ap.add_argument("--at", default="10,25,50,100")
    ap.add_argument("--by", choices=["trials", "budget"], default="trials",
                    help="columns: after N ended trials, or after spending B full trial budgets")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    at = [int(n) for n in args.at.split(",")]
    results = []
    for name in args.objectives.split(","):
        if name not in OBJECTIVES:
            sys.exit(f"--objectives: {name!r} is not one of {', '.join(OBJECTIVES)}")
        _, optimum, space = OBJECTIVES[name]
        for method in args.methods.split(","):
            runs = []
            for s in range(args.seed, args.seed + args.seeds):
                if method.startswith("optuna-"):
                    r = run_optuna(method, name, space, s, args.trials, args.workers, args.sigma)
                elif method.startswith("gleaner-"):
                    r = run_gleaner(args.gleaner, method[len("gleaner-"):], name, space, s,
                                    args.trials, args.workers, args.sigma)
                else:
                    sys.exit(f"--methods: {method!r} is not optuna-<method> or gleaner-<algorithm>")
                runs.append(r)
            print(f"search_vs_optuna: {method} on {name}: {args.seeds} seeds done", file=sys.stderr)

            def best_at(run, n):
                if args.by == "trials":
                    return run[min(n, len(run)) - 1][1]
                best = math.inf
                for spent, b in run:
                    if spent > n + 1e-9:
                        break
                    best = b
                return best

            cols = {n: quartiles([best_at(r, n) for r in runs]) for n in at}
            results.append({"objective": name, "optimum": optimum, "method": method, "best": cols})
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        return
    what, col = ("N trials", "N") if args.by == "trials" else ("spending B full trial budgets", "B")
    print(f"best found after {what}: median [q1, q3] over {args.seeds} seeds; "
          f"{args.workers} workers, duration sigma {args.sigma}, {args.trials} trials per run\n")
    print("| objective | optimum | method | " + " | ".join(f"{col}={n}" for n in at) + " |")
    print("|---|---|---|" + "---|" * len(at))
    for r in results:
        cells = []
        for n in at:
            q1, med, q3 = r["best"][n]
            cells.append(f"{med:.4g} [{q1:.4g}, {q3:.4g}]")
        print(f"| {r['objective']} | {r['optimum']:g} | {r['method']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
