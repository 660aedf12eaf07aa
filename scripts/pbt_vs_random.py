#!/usr/bin/env python3
"""PBT against random search on go-mlp, end to end (docs/benchmarks.md).

For each seed: examples/go-mlp/pbt.yaml runs under `gleaner dev`; then
examples/go-mlp/pbt-baseline.yaml (random search, each trial a member's
full 38,400 samples at one constant learning rate and momentum) runs twice
with the same seed: with as many trials as the PBT campaign created, and
with 8 (the population: the same total samples). It prints each
campaign's best final val_loss, and checks every PBT trial's first report
from the trainers' own report files: past the checkpoint it started from
and not past its budget.

  go build -o bin/gleaner ./cmd/gleaner
  python3 scripts/pbt_vs_random.py --gleaner bin/gleaner --seeds 1-5
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def run_campaign(gleaner, spec_text, work, name):
    spec = os.path.join(work, name + ".yaml")
    with open(spec, "w") as f:
        f.write(spec_text)
    data = os.path.join(work, name + "-data")
    out = subprocess.run(
        ["nice", gleaner, "dev", "--exit-when-done", "--db", "", "--port", "0", "--ui-port", "0",
         "--nodes", "static:4,gpus=none", "--campaign", spec, "--data-dir", data, "--interval", "1m"],
        capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"{name}: gleaner dev exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    return out.stdout, data


def final_losses(data):
    """Each trial's last reported val_loss, over all its runs."""
    losses = {}
    for root, _, files in os.walk(data):
        if "report.jsonl" not in files:
            continue
        trial = root.split(os.sep)[-3]
        run = int(root.split(os.sep)[-1])
        with open(os.path.join(root, "report.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                if "val_loss" in r.get("metrics", {}):
                    key = (run, r["samples"])
                    if trial not in losses or key >= losses[trial][0]:
                        losses[trial] = (key, r["metrics"]["val_loss"], r["samples"])
    return {t: (v, s) for t, (_, v, s) in losses.items()}


def check_first_reports(data):
    """Every trial: its first report past the step its trainer started at, not past its first budget."""
    bad, exploits = [], 0
    for camp in os.listdir(data):
        for trial in sorted(os.listdir(os.path.join(data, camp))):
            runs = os.path.join(data, camp, trial, "runs")
            start = first = None
            for run in sorted(os.listdir(runs), key=int):  # a run stopped before it began wrote nothing
                with open(os.path.join(runs, run, "trainer.log")) as f:
                    m = re.search(r"step (\d+) → ([0-9.e+]+) samples", f.read())
                if m and start is None:
                    start = (int(m.group(1)), float(m.group(2)))
                with open(os.path.join(runs, run, "report.jsonl")) as f:
                    first = next((r for r in map(json.loads, f) if "metrics" in r), None)
                if first:
                    break
            if start is None:
                bad.append(f"{trial}: no run started")
                continue
            if start[0] > 0:
                exploits += 1
            if first is None or not (first["step"] > start[0] and first["samples"] <= start[1]):
                bad.append(f"{trial}: from step {start[0]}, budget {start[1]:g}, first report {first and first['samples']}")
    return bad, exploits


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gleaner", default="bin/gleaner")
    ap.add_argument("--seeds", default="1-5", help="a range, e.g. 1-5")
    ap.add_argument("--keep", action="store_true", help="keep the run data")
    ap.add_argument("--pbt-only", action="store_true", help="run only the PBT campaigns")
    ap.add_argument("--set", action="append", default=[], metavar="KEY: VALUE",
                    help="a line added to pbt.yaml's search.pbt section, e.g. --set 'synch: false'")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    here = os.path.dirname(os.path.abspath(__file__))
    examples = os.path.join(here, "..", "examples", "go-mlp")
    pbt = open(os.path.join(examples, "pbt.yaml")).read()
    base = open(os.path.join(examples, "pbt-baseline.yaml")).read()
    gleaner = os.path.abspath(a.gleaner)
    rows = []
    print("seed  pbt-trials  pbt-best  random(same trials)  random(8 trials)  first-report-check")
    for seed in range(lo, hi + 1):
        work = tempfile.mkdtemp(prefix=f"pbt-vs-random-{seed}-")
        os.chdir(work)  # relative command paths resolve against the spec's directory; dev supplies bin/go-mlp
        spec = pbt.replace("algorithm: pbt", f"algorithm: pbt\n  seed: {seed}")
        for kv in a.set:
            key = kv.split(":")[0].strip()
            spec = re.sub(rf"(?m)^    {key}:.*\n", "", spec).replace("  pbt:\n", f"  pbt:\n    {kv}\n")
        out, data = run_campaign(gleaner, spec, work, f"pbt-{seed}")
        m = re.search(r"; (\d+) trials \(", out)
        if not m:
            sys.exit(f"pbt seed {seed}: no end reason in:\n{out}")
        n = int(m.group(1))
        bad, exploits = check_first_reports(data)
        pbt_best = min(v for v, s in final_losses(data).values() if s >= 38400)
        res = []
        for trials in () if a.pbt_only else (n, 8):
            spec, subs = re.subn(r"(?m)^  max_trials: \d+$", f"  max_trials: {trials}",
                                 base.replace("algorithm: random", f"algorithm: random\n  seed: {seed}"))
            if subs != 1:
                sys.exit("pbt-baseline.yaml: no budget.max_trials line to set")
            _, rdata = run_campaign(gleaner, spec, work, f"random-{seed}-{trials}")
            res.append(min(v for v, _ in final_losses(rdata).values()))
        res += [math.nan] * (2 - len(res))
        rows.append((pbt_best, res[0], res[1]))
        check = "ok" if not bad else "; ".join(bad)
        print(f"{seed:4d}  {n:10d}  {pbt_best:8.4f}  {res[0]:19.4f}  {res[1]:16.4f}  {exploits} exploits, {check}", flush=True)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    if len(rows) > 1:
        med = [statistics.median(c) for c in zip(*rows)]
        wins = sum(p < r for p, r, _ in rows)
        print(f"median      {med[0]:8.4f}  {med[1]:19.4f}  {med[2]:16.4f}  PBT better than random (same trials) on {wins}/{len(rows)} seeds")


if __name__ == "__main__":
    main()
