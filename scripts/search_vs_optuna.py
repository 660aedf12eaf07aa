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
Branin, Hartmann-6, Rosenbrock-10, a mixed space (a float, a log-scaled
float, an integer and a choice), three black-box functions of issue 30
(rotquad6, styblinski5, logmixed: blackbox.go), the go-mlp learning curves and pbt-toy,
Jaderberg et al.'s PBT toy problem (its trials carry a training state; it
reports -Q, minimised).

The simulated pool carries out the whole Searcher contract, as the bench
does: a trial created or continued with a budget pauses at the first report
at or past it (it reports there, then ends completed); a continue resumes
it there, costing time and budget only for what it trains on; a create
from another trial starts from that trial's latest pause (pbt-toy only: a
learning curve or a function carries no training state). gleaner-asha-
promotion and gleaner-hyperband-promotion are those algorithms' promotion
variant; gleaner-pbt runs on pbt-toy only.

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


ROTQUAD_SHIFT = [1.5, -2, 0.5, 3, -1, 2.5]


def householder(v, x):
    vv = sum(a * a for a in v)
    vx = sum(a * b for a, b in zip(v, x))
    return [b - 2 * vx / vv * a for a, b in zip(v, x)]


def rotquad6(p):
    """internal/searchbench/blackbox.go: a rotated quadratic of condition 1,000."""
    y = [p[f"x{i + 1}"] - ROTQUAD_SHIFT[i] for i in range(6)]
    y = householder([1, 2, 3, 4, 5, 6], y)
    y = householder([1, -1, 2, -2, 3, -3], y)
    return sum(math.pow(10, 3 * i / 5) * v * v for i, v in enumerate(y))


STYBLINSKI_SHIFT = [0.3, -0.7, 1.1, -0.2, 0.6]
STYBLINSKI_MIN = -39.16616570377142


def styblinski5(p):
    """internal/searchbench/blackbox.go: Styblinski-Tang, shifted."""
    total = 0.0
    for i in range(5):
        y = p[f"x{i + 1}"] - STYBLINSKI_SHIFT[i]
        total += 0.5 * (y * y * y * y - 16 * y * y + 5 * y) - STYBLINSKI_MIN
    return total


LOGMIXED_PENALTY = {"relu": 0.1, "gelu": 0, "tanh": 0.4}


def logmixed(p):
    """internal/searchbench/blackbox.go: log scales with interactions."""
    lr, batch, wd = math.log10(p["lr"]), math.log10(p["batch"] / 128), math.log10(p["wd"])
    drop, layers = p["dropout"], p["layers"]
    a = lr - (-3 + 0.5 * batch)
    b = wd - (-4 + 2 * drop)
    return (a * a + 0.5 * b * b + 2 * (drop - 0.3) * (drop - 0.3) + 0.05 * (layers - 4) * (layers - 4)
            + 0.3 * batch * batch + LOGMIXED_PENALTY[p["act"]])


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
    "rotquad6": (rotquad6, 0.0, floats(6, -5, 5)),
    "styblinski5": (styblinski5, 0.0, floats(5, -5, 5)),
    "logmixed": (logmixed, 0.0, [{"name": "lr", "type": "float", "min": 1e-5, "max": 1, "log": True},
                                 {"name": "batch", "type": "int", "min": 16, "max": 1024, "log": True},
                                 {"name": "wd", "type": "float", "min": 1e-6, "max": 0.1, "log": True},
                                 {"name": "dropout", "type": "float", "min": 0, "max": 0.8},
                                 {"name": "layers", "type": "int", "min": 1, "max": 8},
                                 {"name": "act", "type": "choice", "choices": ["relu", "gelu", "tanh"]}]),
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


CROSSING_BUDGET = 81  # crossing: a trial's full budget, one report per unit


def crossing_loss(lr, q1, q2, t):
    """crossing (internal/searchbench/crossing.go): fast starters (high lr)
    plateau high, slow starters end lower; t is the fraction trained."""
    u = (math.log10(lr) + 4) / 4
    q = 0.4 * ((q1 - 0.7) ** 2 + (q2 - 0.2) ** 2)
    p = 0.05 + 0.6 * (u - 0.15) ** 2 + q
    tau = 0.01 + 0.1 * (1 - u) ** 3
    return p + (2 - p) * math.exp(-t / tau)


def crossing_curve(p):
    return [(float(s), crossing_loss(p["lr"], p["q1"], p["q2"], s / CROSSING_BUDGET))
            for s in range(1, CROSSING_BUDGET + 1)]


OBJECTIVES["crossing"] = (None, min(crossing_loss(10 ** (4 * i / 100000 - 4), 0.7, 0.2, 1) for i in range(100001)), [
    {"name": "lr", "type": "float", "min": 1e-4, "max": 1, "log": True},
    {"name": "q1", "type": "float", "min": 0, "max": 1},
    {"name": "q2", "type": "float", "min": 0, "max": 1},
])


def crossing_late_loss(lr, w, q, t):
    """crossing-late (internal/searchbench/crossing.go): curves cross late,
    the final order an interaction of lr and width w."""
    u = (math.log10(lr) + 4) / 4
    s = (1 - u + w) / 2
    p = 0.05 + 0.4 * (1 - s) ** 2 + 0.6 * (u + w - 1) ** 2 + 0.3 * (q - 0.3) ** 2
    tau = 0.02 + 0.3 * s ** 3
    return p + (2 - p) * math.exp(-t / tau)


def crossing_late_curve(p):
    return [(float(s), crossing_late_loss(p["lr"], p["w"], p["q"], s / CROSSING_BUDGET))
            for s in range(1, CROSSING_BUDGET + 1)]


OBJECTIVES["crossing-late"] = (None, min(crossing_late_loss(10 ** (4 * i / 1000 - 4), j / 1000, 0.3, 1)
                                         for i in range(1001) for j in range(1001)), [
    {"name": "lr", "type": "float", "min": 1e-4, "max": 1, "log": True},
    {"name": "w", "type": "float", "min": 0, "max": 1},
    {"name": "q", "type": "float", "min": 0, "max": 1},
])
CURVE_OBJECTIVES = {"go-mlp": go_mlp_curve, "crossing": crossing_curve, "crossing-late": crossing_late_curve}


TOY_STEPS = 40  # pbt-toy: a trial's full budget, in gradient steps


def toy_train(theta, p, steps):
    """pbt-toy: gradient ascent steps of 0.01 on 1.2 - (h0*t0^2 + h1*t1^2)."""
    theta, h = list(theta), (p["h0"], p["h1"])
    for _ in range(round(steps)):
        for i in range(2):
            theta[i] -= 0.01 * 2 * h[i] * theta[i]
    return theta, theta[0] ** 2 + theta[1] ** 2 - 1.2


OBJECTIVES["pbt-toy"] = (None, 2 * (0.9 * 0.98 ** TOY_STEPS) ** 2 - 1.2,
                         [{"name": "h0", "type": "float", "min": 0, "max": 1},
                          {"name": "h1", "type": "float", "min": 0, "max": 1}])
TOY_START = (0.9, 0.9)
SLACK = 1e-9  # relative rounding allowed when progress meets a budget


def full_budget(name):
    return {"go-mlp": CURVE_BUDGET, "crossing": float(CROSSING_BUDGET), "crossing-late": float(CROSSING_BUDGET), "pbt-toy": float(TOY_STEPS)}.get(name, 1.0)


def segment(name, p, start=0.0, state=TOY_START, budget=0.0):
    """What a trial at p trains through from progress start (in state, for
    pbt-toy) until it reaches budget (0: its end): (samples, value, state)
    reports, the last the first at or past budget."""
    def reached(x):
        return budget > 0 and x >= budget * (1 - SLACK)

    if reached(start):
        return []
    out = []
    if name == "pbt-toy":
        x = start
        while x < TOY_STEPS * (1 - SLACK):
            nxt = min(x + 1, TOY_STEPS)
            state, value = toy_train(state, p, nxt - x)
            out.append((nxt, value, state))
            if reached(nxt):
                break
            x = nxt
        return out
    f, _, _ = OBJECTIVES[name]
    pts = CURVE_OBJECTIVES[name](p) if f is None else [(1.0, f(p))]
    for samples, value in pts:
        if samples <= start:
            continue
        out.append((samples, value, None))
        if reached(samples):
            break
    return out


def points(name, p):
    """What a trial at p reports run to its end: (samples, value, state)
    triples, and the full budget."""
    return segment(name, p), full_budget(name)


# ------------------------------------------------------------------- drivers


class Pool:
    """Simulated asynchronous workers. A trial's segment reports at each
    point it trains through, spaced in time by the progress it makes; a
    trial's full budget takes exp(N(0, sigma^2)) time units (drawn when it
    is created: a continued segment keeps it)."""

    def __init__(self, seed, sigma):
        self.rng = random.Random(seed * 1_000_003 + 17)
        self.sigma = sigma
        self.now = 0.0
        self.seq = 0
        self.running = {}  # id -> [start, duration, points, next, seq, budget, base]
        self.state = None  # the state at the latest report next() returned

    def draw(self):
        return math.exp(self.sigma * self.rng.gauss(0, 1)) if self.sigma else 1.0

    def start(self, tid, pts, budget, base=0.0, duration=None):
        """Starts a segment: pts are its reports, budget the full budget
        (the time scale), base the progress it starts from. Returns its
        duration."""
        d = self.draw() if duration is None else duration
        self.seq += 1
        self.running[tid] = [self.now, d, pts, 0, self.seq, budget, base]
        return d

    def next(self):
        """The next event: (id, samples, value, last); samples is None for
        a segment with nothing to train, which ends at once."""
        def at(r):
            if r[3] == len(r[2]):
                return r[0]
            return r[0] + r[1] * (r[2][r[3]][0] - r[6]) / r[5]
        tid = min(self.running, key=lambda t: (at(self.running[t]), self.running[t][4]))
        r = self.running[tid]
        self.now = at(r)
        if r[3] == len(r[2]):
            return tid, None, None, True
        samples, value, self.state = r[2][r[3]]
        r[3] += 1
        last = r[3] == len(r[2])
        return tid, samples, value, last

    def end(self, tid):
        del self.running[tid]


class Record:
    """Best result so far after each ended segment, the budget spent and
    the trials ended at least once."""

    def __init__(self, budget):
        self.budget, self.spent, self.best, self.steps, self.seen = budget, 0.0, math.inf, [], set()

    def ended(self, trained, value, tid=None):
        self.spent += trained / self.budget
        if value is not None and not math.isnan(value):
            self.best = min(self.best, value)
        self.seen.add(len(self.seen) if tid is None else tid)
        self.steps.append((self.spent, self.best, len(self.seen)))


def run_optuna(method, name, space, seed, trials, workers, sigma):
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    budget = full_budget(name)
    pruner = optuna.pruners.NopPruner()
    if method == "optuna-tpe-multivariate":
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True)
        method = "optuna-tpe"
    elif method.startswith("optuna-tpe"):
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
        if method != "optuna-tpe":
            method = "optuna-" + method[len("optuna-tpe-"):]  # optuna-tpe-sha: TPE under that pruner
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


def gleaner_settings(method, budget):
    """The hpo algorithm and settings a gleaner-<method> runs, as
    `gleaner bench search` gives them (searchbench.DefaultSettings), and
    the revision of the rules: <algorithm>[-promotion][+<sampler>][@<revision>]
    (asha-promotion+tpe@3: promotion ASHA sampling with TPE, revision 3;
    without @, this build's rules, as a new campaign)."""
    method, _, rev = method.partition("@")
    method, _, sampler = method.partition("+")
    algorithm, _, variant = method.partition("-")
    if algorithm == "asha":
        set = {"asha": {"min_budget": budget / 27, "reduction_factor": 3, "max_budget": budget}}
    elif algorithm == "hyperband":
        set = {"hyperband": {"min_budget": budget / 27, "max_budget": budget, "reduction_factor": 3}}
    elif algorithm == "median":
        set = {"median": {"interval": budget / 10}}
    elif algorithm == "pbt":
        set = {"pbt": {"interval": budget / 10, "max_budget": budget}}
    else:
        set = {}
    if algorithm == "tpe" and variant == "multivariate":
        set, variant = {"tpe": {"multivariate": True}}, ""
    elif algorithm == "tpe" and variant == "group":  # Optuna's multivariate=True, group=True
        set, variant = {"tpe": {"multivariate": True, "group": True}}, ""
    if variant:
        if variant != "promotion" or algorithm not in ("asha", "hyperband"):
            raise ValueError(f"gleaner-{method}: no such variant")
        set[algorithm]["variant"] = variant
    if sampler:
        if algorithm not in ("asha", "hyperband", "median"):
            raise ValueError(f"gleaner-{method}+{sampler}: only a stopping searcher takes a sampler")
        set[algorithm]["sampler"] = sampler
    return algorithm, set, int(rev) if rev else None


class SimTrial:
    """A trial across its segments: where its training is, and where it
    last paused at a budget (what a continue or a from starts from)."""

    def __init__(self, params, progress=0.0, metric=None, state=TOY_START):
        self.params, self.progress, self.metric, self.state = params, progress, metric, state
        self.duration, self.budget, self.base = None, 0.0, progress
        self.paused, self.checkpoint = False, None


def run_gleaner(gleaner, method, name, space, seed, trials, workers, sigma):
    budget = full_budget(name)
    algorithm, settings, revision = gleaner_settings(method, budget)
    cfg = {"algorithm": algorithm, "space": space, "seed": seed, "max_trials": trials,
           "max_concurrent": workers, "mode": "min", "settings": settings}
    if revision is not None:
        cfg["revision"] = revision
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

        sims = {}

        def begin(tid, t, seg_budget):
            t.budget, t.base, t.paused = seg_budget, t.progress, False
            pts = segment(name, t.params, t.progress, t.state, seg_budget)
            t.duration = pool.start(tid, pts, budget, t.progress, t.duration)
            apply(ask({"event": "created", "id": tid}))

        def apply(actions):
            nonlocal shutdown
            for a in actions:
                if "create" in a:
                    c = a["create"]
                    if c["id"] in sims:
                        raise RuntimeError(f"gleaner-{method} created trial {c['id']} twice")
                    t = SimTrial(c["params"])
                    if c.get("from"):
                        src = sims.get(c["from"])
                        if name != "pbt-toy":
                            raise RuntimeError(f"gleaner-{method} created trial {c['id']} from {c['from']}: "
                                               f"objective does not support Create.From: {name} carries no training state")
                        if src is None or src.checkpoint is None:
                            raise RuntimeError(f"gleaner-{method} created trial {c['id']} from {c['from']}, "
                                               "which has not reached a budget")
                        t.progress, t.metric, t.state = src.checkpoint
                    sims[c["id"]] = t
                    begin(c["id"], t, c.get("budget", 0.0))
                elif "continue" in a:
                    c = a["continue"]
                    t = sims.get(c["trial_id"])
                    if t is None or not t.paused:
                        raise RuntimeError(f"gleaner-{method} continued trial {c['trial_id']}, "
                                           "which has not ended at a budget")
                    begin(c["trial_id"], t, c["budget"])
                elif "stop" in a:
                    if a["stop"]["trial_id"] not in pool.running:
                        raise RuntimeError(f"gleaner-{method} stopped {a['stop']['trial_id']}, which is not running")
                    stopping.add(a["stop"]["trial_id"])
                elif "shutdown" in a:
                    shutdown = True
                else:
                    raise RuntimeError(f"unexpected action {a}")

        apply(ask({"event": "initial"}))
        while pool.running and not shutdown:
            tid, samples, value, last = pool.next()
            t = sims[tid]
            if samples is not None:
                t.progress, t.metric, t.state = samples, value, pool.state
                # A trainer run to its end gives its last value as its
                # result only; one that pauses at a budget reports there.
                if not last or t.budget > 0:
                    apply(ask({"event": "reported", "id": tid, "samples": samples, "metric": value}))
                if not last and tid not in stopping:
                    continue
            pool.end(tid)
            stopping.discard(tid)
            rec.ended(t.progress - t.base, t.metric, tid)
            if last and t.budget > 0 and t.progress >= t.budget * (1 - SLACK):
                t.paused, t.checkpoint = True, (t.progress, t.metric, t.state)
            apply(ask({"event": "finished", "id": tid, "metric": t.metric,
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
                    help="optuna-random, optuna-tpe, optuna-sha, optuna-hyperband, optuna-median, optuna-tpe-sha, "
                         "optuna-tpe-hyperband (TPE under that pruner), optuna-tpe-multivariate, gleaner-<algorithm>, "
                         "gleaner-tpe-multivariate, gleaner-asha-promotion, "
                         "gleaner-hyperband-promotion, gleaner-pbt (pbt-toy only); a gleaner method may add "
                         "+<sampler> and @<revision>: gleaner-asha-promotion+tpe@2")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sigma", type=float, default=0.3, help="sigma of the log-normal trial duration")
    ap.add_argument("--at", default="10,25,50,100")
    ap.add_argument("--by", choices=["trials", "budget"], default="trials",
                    help="columns: after N ended trials, or after spending B full trial budgets")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--wins", action="store_true",
                    help="also print, per objective, each method's win probability against each other at the last "
                         "column: the chance a run of the row's finds a better best than a run of the column's "
                         "(ties count half), over all pairs of seeds")
    args = ap.parse_args()
    at = [int(n) for n in args.at.split(",")]
    results = []
    for name in args.objectives.split(","):
        if name not in OBJECTIVES:
            sys.exit(f"--objectives: {name!r} is not one of {', '.join(OBJECTIVES)}")
        _, optimum, space = OBJECTIVES[name]
        for method in args.methods.split(","):
            if method == "gleaner-pbt" and name != "pbt-toy":
                print(f"search_vs_optuna: skipped {method} on {name}: objective does not support Create.From",
                      file=sys.stderr)
                continue
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
                    # the last step before an (n+1)-th trial first ended
                    best = run[0][1]
                    for _, b, ended in run:
                        if ended > n:
                            break
                        best = b
                    return best
                best = math.inf
                for spent, b, _ in run:
                    if spent > n + 1e-9:
                        break
                    best = b
                return best

            cols = {n: quartiles([best_at(r, n) for r in runs]) for n in at}
            results.append({"objective": name, "optimum": optimum, "method": method, "best": cols,
                            "last": [best_at(r, at[-1]) for r in runs]})
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
    if args.wins:
        for name in args.objectives.split(","):
            rows = [r for r in results if r["objective"] == name]
            print(f"\n{name}: win probability of the row against the column at {col}={at[-1]}\n")
            print("| method | " + " | ".join(r["method"] for r in rows) + " |")
            print("|---|" + "---|" * len(rows))
            for a in rows:
                print(f"| {a['method']} | " + " | ".join(f"{win(a['last'], b['last']):.2f}" for b in rows) + " |")


def win(xs, ys):
    """The chance that a draw from xs is below one from ys, ties half."""
    return sum((x < y) + 0.5 * (x == y) for x in xs for y in ys) / (len(xs) * len(ys))


if __name__ == "__main__":
    main()
