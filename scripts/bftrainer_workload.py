#!/usr/bin/env python3
"""Convert a BFTrainer Replayer workload (two pickled pandas tables) into
Gleaner's job CSV (data/workloads/, read by sim.ReadJobs).

BFTrainer's replayer (github.com/BFTrainer/Replayer, jobs.load_job_cfg)
describes a workload by two tables indexed by job name:

- Jbnd (job bounds): Tcup, Tcdw (seconds of progress lost when the job
  grows / shrinks), Jmin, Jmax (node bounds), Pmax (samples to finish),
  Tsub (submission time, a pandas Timestamp in UTC);
- JNPs (scalability): Ns (node counts, starting at 0), Ps (samples/s at
  each count), Os (what BFTrainer's objective sums at each count: Ps
  again in the "imgps" files, the speedup over one node in the "spdup"
  files), Tsub.

One CSV row per job, in the tables' order:

    name, submit_unix, min_nodes, max_nodes, rescale_up_s, rescale_down_s,
    total_samples, nodes, samples_per_s

nodes and samples_per_s are Ns and Ps, space-separated, Ps printed with
six significant digits (%g); Os is not written (Gleaner's --objective
chooses what the allocator sums). The job names are kept: BFTrainer's mixed
ImageNet workload names each job's network (J00003-DenseNet), which is
where sim.ModelInName finds the model.

Usage (Debian's python3-pandas serves /usr/bin/python3; the pickles come
out of the bare mirror of the Replayer with git show):

    G=/path/to/BFTrainer/Replayer.git
    for t in Jbnd JNPs; do
        git --git-dir=$G show 515f0e5:dataset/ImageNet-imgps-$t-1001J.pkl > /tmp/$t.pkl
    done
    /usr/bin/python3 scripts/bftrainer_workload.py --jbnd /tmp/Jbnd.pkl \
        --jnps /tmp/JNPs.pkl --source ImageNet-imgps-Jbnd-1001J.pkl,ImageNet-imgps-JNPs-1001J.pkl \
        --commit 515f0e5 --out data/workloads/jobs-imagenet-mixed-1001.csv

Without --commit the output is byte for byte the form of
jobs-shufflenet-hpo-1000.csv (which this script reproduces from
hps-shufflenet-{Jbnd,JNPs}-1000J.pkl).
"""

import argparse
import sys

import pandas as pd

COLUMNS = ("name,submit_unix,min_nodes,max_nodes,rescale_up_s,rescale_down_s,"
           "total_samples,nodes,samples_per_s")


def whole(x, what, name):
    """x as an int, or an error naming the job: bounds and counts are whole."""
    if float(x) != int(x):
        sys.exit(f"{name}: {what} {x} is not a whole number")
    return int(x)


def rows(jbnd, jnps):
    if list(jbnd.index) != list(jnps.index):
        sys.exit("the two tables do not list the same jobs in the same order")
    for name in jbnd.index:
        b, s = jbnd.loc[name], jnps.loc[name]
        if b.Tsub != s.Tsub:
            sys.exit(f"{name}: Tsub differs between the tables ({b.Tsub} against {s.Tsub})")
        if len(s.Ns) != len(s.Ps):
            sys.exit(f"{name}: {len(s.Ns)} node counts but {len(s.Ps)} throughputs")
        submit = pd.Timestamp(b.Tsub)
        if submit.tzinfo is not None:
            submit = submit.tz_convert("UTC").tz_localize(None)
        nodes = " ".join(str(whole(n, "node count", name)) for n in s.Ns)
        rates = " ".join("%g" % p for p in s.Ps)
        yield ",".join([
            str(name),
            str(submit.value // 10**9),
            str(whole(b.Jmin, "Jmin", name)),
            str(whole(b.Jmax, "Jmax", name)),
            "%.3f" % b.Tcup,
            "%.3f" % b.Tcdw,
            str(whole(b.Pmax, "Pmax", name)),
            nodes,
            rates,
        ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jbnd", required=True, help="pickled Jbnd table (job bounds)")
    ap.add_argument("--jnps", required=True, help="pickled JNPs table (scalability)")
    ap.add_argument("--source", required=True,
                    help="the two file names in the Replayer, comma-separated, for the header comment")
    ap.add_argument("--commit", help="the Replayer commit they were taken from, for the header comment")
    ap.add_argument("--out", required=True, help="CSV to write")
    args = ap.parse_args()

    jbnd = pd.read_pickle(args.jbnd)
    jnps = pd.read_pickle(args.jnps)
    at = f" at commit {args.commit}" if args.commit else ""
    sources = ", ".join(s.strip() for s in args.source.split(","))
    with open(args.out, "w", newline="\n") as f:
        f.write(f"# Training jobs from github.com/BFTrainer/Replayer dataset ({sources}){at}.\n")
        f.write("# rescale_up_s/rescale_down_s: seconds of progress lost when the job grows/shrinks; "
                "total_samples: samples to finish; nodes/samples_per_s: measured throughput curve "
                "(space separated, includes 0).\n")
        f.write(COLUMNS + "\n")
        n = 0
        for line in rows(jbnd, jnps):
            f.write(line + "\n")
            n += 1
    print(f"{args.out}: {n} jobs", file=sys.stderr)


if __name__ == "__main__":
    main()
