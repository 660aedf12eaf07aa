#!/usr/bin/env python3
"""Convert BFTrainer's Summit node-state table (the Replayer's
dataset/ndstat-10sdn6-evt.pkl) into Gleaner's idle-event CSV
(data/traces/, read by sim.ReadIdleEvents).

The pickle (inside dataset/ndstat-10sdn6-evt.tar.gz of
github.com/BFTrainer/Replayer) is a pandas DataFrame of int8: one column per
Summit node (4,734, named as h50n16), one row per instant at which some node
changed state, indexed by a naive timestamp in UTC; 1 = idle, 0 = busy
(BFTrainer-replay.py reads it so). Its first row, 2021-02-10 00:08:52, has
every node busy; its last is 2021-02-24 22:19:29.

Each row becomes up to two CSV lines against the row before it (the first
row against every node busy): `idle` with the nodes that went 0 -> 1, then
`busy` with those that went 1 -> 0, each list in the table's column order,
space-separated:

    unix_time,event,nodes

--from and --to (UTC dates, both inclusive) keep the rows of those days;
the first kept row is still diffed against the row before it, so a window
starts with the nodes that became idle at its first event, not with the
machine's whole state.

Usage (Debian's python3-pandas serves /usr/bin/python3; the table comes out
of the bare mirror of the Replayer with git show):

    G=/path/to/BFTrainer/Replayer.git
    git --git-dir=$G show 515f0e5:dataset/ndstat-10sdn6-evt.tar.gz | tar xzf - -C /tmp
    /usr/bin/python3 scripts/bftrainer_trace.py --pkl /tmp/ndstat-10sdn6-evt.pkl \
        --commit 515f0e5 --out data/traces/summit-idle-2021-02-10_24.csv

Without --commit the header is the one of summit-idle-2021-02-10_14.csv,
which `--from 2021-02-10 --to 2021-02-14` reproduces byte for byte.
"""

import argparse
import sys

import numpy as np
import pandas as pd

SOURCE = "dataset/ndstat-10sdn6-evt.pkl"


def kept(index, first, last):
    """The rows of days first..last (None: unbounded), as a boolean mask."""
    days = index.normalize()
    keep = np.ones(len(index), dtype=bool)
    if first is not None:
        keep &= days >= first
    if last is not None:
        keep &= days <= last
    return keep


def events(table, keep):
    """Yields (unix_time, event, nodes) for the rows that keep marks."""
    state = table.to_numpy()
    if not np.isin(state, (0, 1)).all():
        sys.exit("the table holds values other than 0 (busy) and 1 (idle)")
    nodes = np.asarray(table.columns, dtype=str)
    previous = np.zeros(state.shape[1], dtype=state.dtype)
    for i, when in enumerate(table.index):
        row = state[i]
        if keep[i]:
            t = when.value // 10**9
            for event, changed in (("idle", (previous == 0) & (row == 1)),
                                   ("busy", (previous == 1) & (row == 0))):
                if changed.any():
                    yield t, event, " ".join(nodes[changed])
        previous = row


def day(s):
    return pd.Timestamp(s).normalize() if s else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pkl", required=True, help="the Replayer's ndstat-10sdn6-evt.pkl")
    ap.add_argument("--from", dest="first", help="first UTC day to keep (YYYY-MM-DD); default the table's first")
    ap.add_argument("--to", dest="last", help="last UTC day to keep, inclusive; default the table's last")
    ap.add_argument("--commit", help="the Replayer commit the table was taken from, for the header comment")
    ap.add_argument("--out", required=True, help="CSV to write")
    args = ap.parse_args()

    table = pd.read_pickle(args.pkl)
    if not table.index.is_monotonic_increasing or not table.index.is_unique:
        sys.exit("the table's timestamps are not strictly increasing")
    if table.index.tz is not None:
        table = table.tz_convert("UTC").tz_localize(None)
    keep = kept(table.index, day(args.first), day(args.last))
    if not keep.any():
        sys.exit("no row of the table falls in --from..--to")
    span = ""
    if args.commit:
        shown = table.index[keep]
        span = (f" at commit {args.commit}: its events of {shown[0]:%Y-%m-%d %H:%M:%S} to "
                f"{shown[-1]:%Y-%m-%d %H:%M:%S} UTC")
    n = 0
    with open(args.out, "w", newline="\n") as f:
        f.write("# Idle-node events replayed by BFTrainer (arXiv 2106.12091), converted from "
                f"{SOURCE} of github.com/BFTrainer/Replayer{span}.\n")
        f.write(f"# {table.shape[1]} nodes; one line per event; unix_time,event,nodes; event idle = "
                "nodes became idle (usable), busy = nodes taken back by the batch scheduler.\n")
        f.write("unix_time,event,nodes\n")
        for t, event, names in events(table, keep):
            f.write(f"{t},{event},{names}\n")
            n += 1
    print(f"{args.out}: {n} events", file=sys.stderr)


if __name__ == "__main__":
    main()
