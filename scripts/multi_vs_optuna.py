#!/usr/bin/env python3
"""Optuna's samplers for several objectives side by side with Gleaner's, in one run.

Optuna's samplers (NSGAIISampler, TPESampler, RandomSampler, QMCSampler)
meet the problems of `gleaner bench search-multi` (internal/searchbench):
ZDT1 in 6 dimensions, DTLZ2 with 3 objectives in 7, TNK (two constraints)
and nas-cell-latency (the repository's NAS cell table: validation accuracy,
maximised, x predicted ms per training sample, minimised; curves/nas-multi.csv, which
genmulti writes). They run on the simulated asynchronous workers of
search_vs_optuna.py (its Pool): --workers trials at once, asked while a
worker is free and told in the order they finish, each taking exp(sigma*z)
time units from the stream `gleaner bench search-multi` draws for the same
seed (searchbench.SharedDurations: Box-Muller over SplitMix64), so both
sides meet the same durations trial by trial. A constrained problem gives
Optuna a constraints_func (NSGA-II and TPE; Random and QMC ignore results).

Each run's ended trials (values and constraint metrics, in the order they
ended) go to `gleaner bench search-multi --optuna FILE`, which runs
Gleaner's searchers, computes every hypervolume with the same code
(hpo.Goals.Hypervolume at each problem's fixed reference point) and prints
median [q1, q3] after N trials with each Gleaner searcher's win probability
against Optuna's best sampler there.

Usage (Debian's python3-optuna 3.1 serves /usr/bin/python3):

    go build -o bin/gleaner ./cmd/gleaner
    /usr/bin/python3 scripts/multi_vs_optuna.py --gleaner bin/gleaner --seeds 20 --trials 500 --at 100,500

--out FILE keeps Optuna's trials; without --gleaner it only writes them.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_vs_optuna import Pool  # noqa: E402  the simulated asynchronous workers

# ------------------------------------------------------------ cost stream

MASK = (1 << 64) - 1


def shared_durations(seed, sigma):
    """searchbench.SharedDurations: trial k of a seed takes exp(sigma*z_k),
    z_k = sqrt(-2 ln(1-u1)) cos(2 pi u2), u = (x >> 11) * 2^-53 of
    consecutive SplitMix64 outputs x seeded with seed."""
    state = seed & MASK

    def uniform():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        return (z >> 11) * 2.0 ** -53

    while True:
        u1, u2 = uniform(), uniform()
        if sigma == 0:
            yield 1.0
        else:
            yield math.exp(sigma * math.sqrt(-2 * math.log(1 - u1)) * math.cos(2 * math.pi * u2))


class SharedPool(Pool):
    """search_vs_optuna's Pool drawing the multi bench's cost stream."""

    def __init__(self, seed, sigma):
        super().__init__(seed, sigma)
        self.stream = shared_durations(seed, sigma)

    def draw(self):
        return next(self.stream)


# ---------------------------------------------------------------- problems


def xs(p, n):
    return [p[f"x{i + 1}"] for i in range(n)]


def zdt1(p):
    x = xs(p, 6)
    g = 1 + 9 * sum(x[1:]) / 5
    return {"values": [x[0], g * (1 - math.sqrt(x[0] / g))]}


def dtlz2(p, m=3, n=7):
    x = xs(p, n)
    g = sum((v - 0.5) ** 2 for v in x[m - 1:])
    f = []
    for j in range(m):
        v = 1 + g
        for xi in x[:m - 1 - j]:
            v *= math.cos(xi * math.pi / 2)
        if j > 0:
            v *= math.sin(x[m - 1 - j] * math.pi / 2)
        f.append(v)
    return {"values": f}


def tnk(p):
    x1, x2 = p["x1"], p["x2"]
    c1 = x1 * x1 + x2 * x2 - 1 - 0.1 * math.cos(16 * math.atan2(x1, x2))
    c2 = (x1 - 0.5) ** 2 + (x2 - 0.5) ** 2
    return {"values": [x1, x2], "constraints": [c1, c2]}


def tnk_optuna_constraints(r):
    """Optuna's form (feasible when every value <= 0) of c1 >= 0, c2 <= 1/2."""
    c1, c2 = r["constraints"]
    return [-c1, c2 - 0.5]


NAS_OPS = ["none", "skip_connect", "conv_1x1", "conv_3x3"]


def load_nas():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal", "searchbench", "curves",
                        "nas-multi.csv")
    table = {}
    with open(path) as f:
        rows = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert rows[0] == "edges,hash,val_accuracy,ms_per_sample", rows[0]
    for line in rows[1:]:
        edges, _, acc, lat = line.split(",")
        table[edges] = (float(acc), float(lat))
    return table


NAS = load_nas()


def nas_cell_latency(p):
    acc, lat = NAS["|".join(p[f"edge{i + 1}"] for i in range(6))]
    return {"values": [acc, lat]}


def floats(n, lo, hi):
    return {f"x{i + 1}": ("float", lo, hi) for i in range(n)}


# name -> (function, directions, space, constraints in Optuna's form or None)
PROBLEMS = {
    "zdt1": (zdt1, ["minimize"] * 2, floats(6, 0, 1), None),
    "dtlz2": (dtlz2, ["minimize"] * 3, floats(7, 0, 1), None),
    "tnk": (tnk, ["minimize"] * 2, floats(2, 0, math.pi), tnk_optuna_constraints),
    "nas-cell-latency": (nas_cell_latency, ["maximize", "minimize"],
                         {f"edge{i + 1}": ("choice", NAS_OPS) for i in range(6)}, None),
}

SAMPLERS = ["optuna-nsga2", "optuna-tpe", "optuna-tpe-mv", "optuna-random", "optuna-qmc"]


# ------------------------------------------------------------------ driver


def run_optuna(method, name, seed, trials, workers, sigma):
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    f, directions, space, constraints = PROBLEMS[name]
    cfunc = None
    if constraints is not None:
        def cfunc(frozen):
            return frozen.user_attrs["constraints"]
    if method == "optuna-nsga2":
        sampler = optuna.samplers.NSGAIISampler(seed=seed, constraints_func=cfunc)
    elif method == "optuna-tpe":
        # constant_liar as search_vs_optuna's optuna-tpe; Optuna 3.1 skips
        # running trials with several objectives, so it changes nothing here
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, constraints_func=cfunc)
    elif method == "optuna-tpe-mv":
        # one joint l/g over all parameters, as Gleaner's motpe-mv
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True,
                                             constraints_func=cfunc)
    elif method == "optuna-random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    elif method == "optuna-qmc":
        # scrambled, so that seeds differ (QMCSampler's default is one
        # unscrambled Sobol sequence for every seed)
        sampler = optuna.samplers.QMCSampler(seed=seed, scramble=True)
    else:
        raise ValueError(method)
    dists = {}
    for k, d in space.items():
        dists[k] = FloatDistribution(d[1], d[2]) if d[0] == "float" else CategoricalDistribution(d[1])
    study = optuna.create_study(study_name=f"multi-vs-optuna-{name}-{seed}", sampler=sampler, directions=directions)
    pool, created, asked, ended = SharedPool(seed, sigma), 0, {}, []

    def fill():
        nonlocal created
        while created < trials and len(pool.running) < workers:
            t = study.ask(dists)
            r = f(t.params)
            if constraints is not None:
                t.set_user_attr("constraints", constraints(r))
            asked[t.number] = t
            pool.start(t.number, [(1.0, r, None)], 1.0)
            created += 1

    fill()
    while pool.running:
        tid, _, r, _ = pool.next()
        study.tell(asked.pop(tid), r["values"])
        pool.end(tid)
        ended.append(r)
        fill()
    return ended


def evaluate():
    """--eval: a result per JSON line {"problem": name, "params": {...}} on
    stdin (TestMultiProblemsMatchPython)."""
    for line in sys.stdin:
        if line.strip():
            req = json.loads(line)
            print(json.dumps(PROBLEMS[req["problem"]][0](req["params"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gleaner", default="", help="gleaner binary: also run its searchers and print the table")
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--methods", default=",".join(SAMPLERS), help=", ".join(SAMPLERS))
    ap.add_argument("--algorithms", default="", help="Gleaner's searchers (--algorithms of gleaner bench search-multi)")
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sigma", type=float, default=0.3, help="sigma of the log-normal trial duration")
    ap.add_argument("--at", default="100,500")
    ap.add_argument("--out", default="", help="write Optuna's trials here (JSON)")
    ap.add_argument("--json", action="store_true", help="gleaner's table as JSON")
    ap.add_argument("--eval", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--durations", default="", help=argparse.SUPPRESS)  # SEED,N: the cost stream, one a line
    args = ap.parse_args()
    if args.eval:
        return evaluate()
    if args.durations:
        seed, n = (int(v) for v in args.durations.split(","))
        stream = shared_durations(seed, args.sigma)
        for _ in range(n):
            print(repr(next(stream)))
        return
    problems, methods = args.problems.split(","), args.methods.split(",")
    for p in problems:
        if p not in PROBLEMS:
            sys.exit(f"--problems: {p!r} is not one of {', '.join(PROBLEMS)}")
    for m in methods:
        if m not in SAMPLERS:
            sys.exit(f"--methods: {m!r} is not one of {', '.join(SAMPLERS)}")
    doc = {"trials": args.trials, "workers": args.workers, "seed": args.seed, "seeds": args.seeds,
           "sigma": args.sigma, "runs": []}
    for name in problems:
        for method in methods:
            for s in range(args.seed, args.seed + args.seeds):
                doc["runs"].append({"problem": name, "method": method, "seed": s,
                                    "results": run_optuna(method, name, s, args.trials, args.workers, args.sigma)})
            print(f"multi_vs_optuna: {method} on {name}: {args.seeds} seeds done", file=sys.stderr, flush=True)
    out = args.out
    if not out:
        if not args.gleaner:
            json.dump(doc, sys.stdout)
            return
        fd, out = tempfile.mkstemp(suffix=".json")
        os.close(fd)
    with open(out, "w") as f:
        json.dump(doc, f)
    if not args.gleaner:
        return
    cmd = [args.gleaner, "bench", "search-multi", "--optuna", out, "--problems", args.problems,
           "--trials", str(args.trials), "--workers", str(args.workers), "--seeds", str(args.seeds),
           "--seed", str(args.seed), "--cost-sigma", repr(args.sigma), "--at", args.at]
    if args.algorithms:
        cmd += ["--algorithms", args.algorithms]
    if args.json:
        cmd.append("--json")
    try:
        sys.exit(subprocess.call(cmd))
    finally:
        if not args.out:
            os.unlink(out)


if __name__ == "__main__":
    main()
