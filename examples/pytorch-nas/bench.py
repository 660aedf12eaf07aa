"""Trains architectures for the tabular NAS benchmark
(internal/searchbench/gennas), in one process, one thread.

Reads one architecture per line on stdin (the canonical JSON package nas
writes, the string train.py reads from its params file) and, for each,
prints one JSON line: its parameter count and multiply-adds, and at each
epoch of --epochs its validation loss, validation accuracy and the
seconds spent training so far (evaluation not counted).

Every architecture is trained exactly as train.py trains it on one node
(the same network, data split, optimiser and per-epoch data order;
train.py's hyperparameter defaults unless --lr etc. say otherwise, as
gennas's lr 0.01 does; seed --seed), without the trial protocol around
it: starting a Python process with torch per architecture would cost
more than training one.

    /usr/bin/python3 examples/pytorch-nas/bench.py --epochs 1,2,4,8 < archs.jsonl
"""

import argparse
import importlib.util
import json
import os
import sys
import time


def load_train():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("nas_train", os.path.join(here, "train.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", default="1,2,4,8", help="epochs at which to record, ascending")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    marks = [int(e) for e in args.epochs.split(",")]
    if not marks or marks != sorted(marks) or marks[0] < 1:
        sys.exit("bench.py: --epochs: want ascending whole epochs ≥ 1")

    tr = load_train()
    tr._import_or_reexec()
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_digits

    torch.set_num_threads(1)
    digits = load_digits()
    xt, yt, xv, yv = tr.split(torch, digits.data, digits.target)
    spe = max(1, tr.TRAIN // args.batch)

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        arch = tr.parse_arch(line)
        torch.manual_seed(args.seed)
        model = tr.build_model(torch, arch)
        params, flops = tr.count(torch, model)
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
        points, spent = [], 0.0
        for epoch in range(marks[-1]):
            g = torch.Generator().manual_seed(args.seed * 1_000_003 + epoch)
            perm = torch.randperm(tr.TRAIN, generator=g)
            t0 = time.perf_counter()
            model.train()
            for pos in range(spe):
                idx = perm[pos * args.batch:(pos + 1) * args.batch]
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(xt[idx]), yt[idx]).backward()
                opt.step()
            spent += time.perf_counter() - t0
            if epoch + 1 in marks:
                model.eval()
                with torch.no_grad():
                    out = model(xv)
                    loss = F.cross_entropy(out, yv).item()
                    acc = (out.argmax(1) == yv).float().mean().item()
                points.append({"epochs": epoch + 1, "samples": (epoch + 1) * spe * args.batch,
                               "val_loss": loss, "val_accuracy": acc, "seconds": round(spent, 4)})
        print(json.dumps({"arch": arch.canonical(), "params": params, "flops": flops, "points": points},
                         separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
