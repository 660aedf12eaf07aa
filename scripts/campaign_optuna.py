#!/usr/bin/env python3
"""Optuna's side of `gleaner bench campaign --vs-optuna`: the same campaign
of short trials, run by Optuna 3.1 (Debian's python3-optuna) on this machine.

Every trial runs the very trainer binary Gleaner's benchmark runs (go-mlp),
with the same fixed parameters, the same sampled ones (lr log-uniform in
[0.01, 0.5], hidden in [4, 32]) and the same trial protocol: a params.json,
a hostfile, a checkpoint directory and a report file per trial, passed in
the GLEANER_* variables (docs/protocol.md). The objective is the last
val_loss the trainer reported. Optuna's study runs --concurrent trials at
once (n_jobs threads, each waiting on its trainer's process), in memory
(no storage), with RandomSampler, as Gleaner's random search.

It prints one JSON object: trials, completed, failed, wall_seconds,
trials_per_second, best, and the CPU time (user + system, getrusage) over
the study of this process (cpu_seconds: Optuna, its threads, the
interpreter) and of its children once waited for (trainer_cpu_seconds: the
trainers), counted as Gleaner's benchmark counts its worker and trainers. `gleaner bench campaign --vs-optuna` runs it right
after Gleaner's campaign, with the same flags, so both figures come from one
command on the same machine (docs/benchmarks.md).

    /usr/bin/python3 scripts/campaign_optuna.py --trainer bin/go-mlp \\
        --trials 1000 --concurrent 50 --steps 20 --step-ms 50
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import optuna
except ImportError:  # pragma: no cover - reported to the caller
    sys.stderr.write("campaign_optuna.py: optuna is not installed (Debian: apt-get install python3-optuna)\n")
    sys.exit(3)


def run_trial(trainer, work, number, params):
    """Runs one go-mlp trial as Gleaner's launcher would; returns val_loss."""
    d = os.path.join(work, "t%06d" % number)
    ckpt = os.path.join(d, "checkpoints")
    os.makedirs(ckpt)
    pf, hf, rf = (os.path.join(d, n) for n in ("params.json", "hostfile", "report.jsonl"))
    with open(pf, "w") as f:
        json.dump(params, f)
    with open(hf, "w") as f:
        f.write("local/0\n")
    open(rf, "w").close()
    env = dict(os.environ)
    env.update({
        "GLEANER_TRIAL_ID": "t%06d" % number, "GLEANER_CAMPAIGN_ID": "optuna",
        "GLEANER_PARAMS_FILE": pf, "GLEANER_NODES": "1", "GLEANER_HOSTFILE": hf,
        "GLEANER_CHECKPOINT_DIR": ckpt, "GLEANER_RESUME_FROM": "", "GLEANER_REPORT_FILE": rf,
        "GLEANER_BUDGET": "", "GLEANER_BUDGET_UNIT": "",
    })
    with open(os.path.join(d, "trainer.log"), "w") as log:
        code = subprocess.call([trainer], cwd=d, env=env, stdout=log, stderr=log)
    if code != 0:
        raise RuntimeError("trainer exited %d (%s)" % (code, d))
    loss = None
    with open(rf) as f:
        for line in f:
            try:
                m = json.loads(line).get("metrics", {})
            except ValueError:
                continue
            if "val_loss" in m:
                loss = m["val_loss"]
    shutil.rmtree(d, ignore_errors=True)
    if loss is None:
        raise RuntimeError("no val_loss reported (%s)" % d)
    return loss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trainer", required=True, help="the go-mlp binary")
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--concurrent", type=int, default=50)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--step-ms", type=float, default=50)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    trainer = os.path.abspath(a.trainer)
    fixed = {"batch": "32", "steps": str(a.steps), "step_ms": "%g" % a.step_ms,
             "report_every": "5", "checkpoint_every": "10"}
    work = tempfile.mkdtemp(prefix="gleaner-optuna-")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.RandomSampler(seed=a.seed))

    def objective(t):
        params = dict(fixed)
        params["lr"] = t.suggest_float("lr", 0.01, 0.5, log=True)
        params["hidden"] = t.suggest_int("hidden", 4, 32)
        return run_trial(trainer, work, t.number, params)

    def cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    start, self0, children0 = time.monotonic(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    try:
        study.optimize(objective, n_trials=a.trials, n_jobs=a.concurrent, catch=(RuntimeError,))
    finally:
        wall = time.monotonic() - start
        self_cpu = cpu(resource.RUSAGE_SELF) - self0
        trainer_cpu = cpu(resource.RUSAGE_CHILDREN) - children0
        shutil.rmtree(work, ignore_errors=True)
    states = [t.state for t in study.trials]
    done = sum(s == optuna.trial.TrialState.COMPLETE for s in states)
    failed = sum(s == optuna.trial.TrialState.FAIL for s in states)
    print(json.dumps({
        "optuna_version": optuna.__version__, "trials": len(states), "completed": done, "failed": failed,
        "concurrent": a.concurrent, "wall_seconds": wall, "trials_per_second": len(states) / wall,
        "best": study.best_value if done else None,
        "cpu_seconds": self_cpu, "trainer_cpu_seconds": trainer_cpu,
    }))


if __name__ == "__main__":
    main()
