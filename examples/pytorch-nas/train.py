#!/usr/bin/env python3
"""Gleaner's NAS example trainer (docs/protocol.md): NAS-Bench-201-style
cell networks on scikit-learn's digits.

What it trains
--------------
The trial's `arch` parameter (a JSON string in the params file, written by
package nas) names a cell and how it is stacked:

    {"cell": {"nodes": 4,
              "edges": [["conv_3x3"],
                        ["skip_connect", "none"],
                        ["conv_1x1", "avg_pool_3x3", "conv_3x3"]],
              "stacks": 2, "cells": 1, "channels": 8}}

The cell is a DAG of `nodes` nodes: node 0 is the cell's input, the last
node its output, and edges[i-1][j] is the operation on the edge j -> i
(j < i), so node i = sum over j < i of op_{j->i}(node j). Operations, as in
NAS-Bench-201 (Dong & Yang, ICLR 2020), all keeping channels and size:

    none          contributes nothing
    skip_connect  identity
    conv_1x1      ReLU -> Conv 1x1 -> BatchNorm  (NB201's ReLUConvBN)
    conv_3x3      ReLU -> Conv 3x3, padding 1 -> BatchNorm
    avg_pool_3x3  average pooling 3x3, stride 1, padding 1 (padding not counted)
    max_pool_3x3  max pooling 3x3, stride 1, padding 1

Only edges that carry signal are built: an edge j -> i whose node j no
input path reaches (every edge into it is none) or whose node i reaches
no output contributes nothing and has no parameters, so isomorphic cells
give the same network, parameters and FLOPs. A cell whose output no path
reaches outputs zeros (input x 0, NB201's Zero): the network still trains
its stem, reduction blocks and classifier and reports a (bad) loss.

The network (8x8 grey images in, 10 classes out):

    stem:      Conv 3x3 (1 -> channels, padding 1) -> BatchNorm
    stage 1:   `cells` cells, `channels` channels, 8x8
    stage s>1: a residual reduction block (NB201's ResNet basic block,
               stride 2: ReLUConvBN 3x3 stride 2 -> ReLUConvBN 3x3, plus
               AvgPool 2x2 (ceil mode) -> Conv 1x1 on the shortcut),
               doubling the channels and halving the size, rounding up
               (8x8, 4x4, 2x2, 1x1, 1x1, ...); then `cells` cells
    head:      BatchNorm -> ReLU -> global average pooling -> Linear(10)

for `stacks` stages: the network package nas's Cell.Cost describes
(nas/cost.go), within its bounds (nodes 2..7, stacks 1..6, cells 1..32,
channels 1..4096).

At start it prints to stderr, and reports once as metrics, `params` (the
count of trainable parameters, as Cell.Cost counts them) and `flops`
(multiply-adds of one sample's forward pass, counting convolutions,
Cout*Cin*k*k*Hout*Wout each, and linear layers, in*out; batch norm,
pooling, additions and biases are not counted, so this is a little less
than Cell.Cost's FLOPs, which count them). `train.py --count ARCH...`
prints both as JSON lines without training.

The data: sklearn.datasets.load_digits (1,797 images, shipped inside
scikit-learn, nothing downloaded), pixels scaled to mean 0 and variance 1
over the training images, split once and for all (seed 201, whatever the
trial's seed) into 1,437 training and 360 validation images. An epoch is
a permutation of the training images, drawn from (seed, epoch), in
floor(1437 / batch) batches (the remainder is dropped).

How it runs (as examples/pytorch/train.py does: the launching, rendezvous
and checkpoint writing are python/gleaner_torch.py's, shared by both)
---------------------------------------------------------------------
* Data-parallel with torch.distributed over GLEANER_NODES processes (gloo on
  CPU, NCCL when CUDA offers a GPU per local process), DistributedDataParallel
  averaging the gradients. On one host this script spawns them all and they
  meet on 127.0.0.1; on a run of several hosts (GLEANER_NUM_HOSTS > 1, one
  train.py per host) each spawns its GLEANER_LOCAL_NODES processes, global
  ranks GLEANER_NODE_OFFSET onwards, meeting at
  GLEANER_MASTER_ADDR:GLEANER_MASTER_PORT. Rank r trains on every
  world-th image of the global batch (batch norm statistics are each
  rank's own). Each host's first process first appends one rendezvous line
  to its own GLEANER_REPORT_FILE, as examples/pytorch does.
* Every step one all-reduce carries the batch loss and each rank's stop
  flag, so a SIGTERM (to any process of any host) stops all ranks after
  the same step; global rank 0 then writes a checkpoint, reports it and
  all exit 0.
* Global rank 0 reports `samples`, `step`, `epoch` and metrics `loss`
  (mean training loss since the last report), `val_loss` and
  `val_accuracy` every report_every steps (default: once an epoch), then
  also `measured_ms_per_sample`: the wall time of this run's training
  steps (forward, backward, all-reduce, optimiser; not evaluation or
  checkpoints; the first 5 steps of a run left out as warm-up) per sample
  of the global batch, on the run's nodes: what the worker's throughput
  model predicts as `predicted_ms_per_sample` for one node (docs/nas.md),
  and
  checkpoints atomically (gleaner_trial.save_checkpoint: weights with batch
  norm statistics, optimiser state, counters, the data order's position,
  torch's RNG state, the architecture) every checkpoint_every steps, when
  stopped and at the end, keeping the newest two.
* GLEANER_RESUME_FROM resumes exactly: same weights, momentum buffers,
  counters and data order (the batch of a step depends only on the seed
  and the position), on any node count. A checkpoint of another
  architecture is refused. The learning rate, momentum and weight decay
  are the params file's, not the checkpoint's.
* With a budget (GLEANER_BUDGET in GLEANER_BUDGET_UNIT: samples, steps or
  epochs, cumulative since the trial first started) it trains until that
  counter reaches the budget instead of for `epochs`, then checkpoints,
  reports and exits 0; given a checkpoint already there, it trains nothing.

Parameters (params file; choice values may be strings): arch (required),
lr (0.05), momentum (0.9), weight_decay (5e-4), batch (global, 64; at
least 2 per node), epochs (20, without a budget), seed (1), report_every
(steps; 0: once an epoch), checkpoint_every (steps; 0: every 5 epochs),
step_ms (0: a sleep per step, for tests).

Exit status: 0 done, at its budget or stopped; 1 bad environment or
checkpoint, or another rank failed; 2 bad parameters (the message, on
stderr, names the field: "arch.cell.edges[2][1]: unknown operation ...").

The interpreter: if the python3 running it cannot import torch and
sklearn, it re-executes itself (same pid, so signals still reach it) with
$GLEANER_PYTHON, else /usr/bin/python3, where Debian's python3-torch and
python3-sklearn install them.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import gleaner_torch as gtorch  # noqa: E402
import gleaner_trial as gt  # noqa: E402

# First thing, in the parent and in every spawned rank (which re-imports this
# module): SIGTERM must set the stop flag, never kill a half-started process.
gt.install_stop_handler()

EXIT_ENV, EXIT_PARAMS = gtorch.EXIT_ENV, 2

OPS = ("none", "skip_connect", "conv_1x1", "conv_3x3", "avg_pool_3x3", "max_pool_3x3")
IMAGE, CLASSES = 8, 10
IMAGES, VAL, SPLIT_SEED = 1797, 360, 201
TRAIN = IMAGES - VAL
# The bounds of package nas's cell spaces (nas/ops.go), so that every cell
# it writes trains here.
LIMITS = {"nodes": (2, 7), "stacks": (1, 6), "cells": (1, 32), "channels": (1, 4096)}


def _import_or_reexec():
    gtorch.import_or_reexec(
        __file__, ("sklearn", "torch"),
        "torch and sklearn; install python3-torch and python3-sklearn, "
        "or set GLEANER_PYTHON to an interpreter that has them",
    )


class ArchError(ValueError):
    """A malformed arch parameter; the message starts with the field at
    fault (arch.cell.edges[2][1])."""


class Cell:
    """A checked cell architecture (see the module's docstring)."""

    def __init__(self, nodes, edges, stacks, cells, channels):
        self.nodes, self.edges = nodes, edges
        self.stacks, self.cells, self.channels = stacks, cells, channels
        n = nodes
        # live[i]: some path of non-none edges reaches node i from the input;
        # useful[i]: one leads from node i to the output.
        live = [True] + [False] * (n - 1)
        for i in range(1, n):
            live[i] = any(edges[i - 1][j] != "none" and live[j] for j in range(i))
        useful = [False] * (n - 1) + [True]
        for j in range(n - 2, -1, -1):
            useful[j] = any(edges[i - 1][j] != "none" and useful[i] for i in range(j + 1, n))
        self.output_reached = live[n - 1]
        # The edges that carry signal, (i, j, op), in the order a forward
        # pass evaluates them: every node complete before it is read.
        self.active = [
            (i, j, edges[i - 1][j])
            for i in range(1, n)
            for j in range(i)
            if edges[i - 1][j] != "none" and live[j] and useful[i]
        ]

    def canonical(self):
        return json.dumps(
            {"cell": {"nodes": self.nodes, "edges": self.edges, "stacks": self.stacks,
                      "cells": self.cells, "channels": self.channels}},
            separators=(",", ":"), sort_keys=True,
        )


def parse_arch(raw):
    """The arch parameter (a JSON string, or an object already decoded) as
    a Cell; ArchError naming the field otherwise."""
    if raw is None:
        raise ArchError("arch: missing; the params file must hold the architecture (a JSON string)")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise ArchError(f"arch: not JSON: {e}") from None
    if not isinstance(raw, dict):
        raise ArchError(f"arch: {raw!r} is not a JSON object with a cell section")
    for k in raw:
        if k == "layers":
            raise ArchError("arch.layers: this trainer builds cell networks only (a cell section)")
        if k != "cell":
            raise ArchError(f"arch.{k}: unknown field (want cell)")
    c = raw.get("cell")
    if not isinstance(c, dict):
        raise ArchError(f"arch.cell: {'missing' if c is None else repr(c) + ' is not an object'}")
    known = ("nodes", "edges", "stacks", "cells", "channels")
    for k in c:
        if k not in known:
            raise ArchError(f"arch.cell.{k}: unknown field (want {', '.join(known)})")

    def count(name):
        v = c.get(name)
        lo, hi = LIMITS[name]
        if v is None:
            raise ArchError(f"arch.cell.{name}: missing")
        if isinstance(v, bool) or not isinstance(v, int):
            raise ArchError(f"arch.cell.{name}: {v!r} is not an integer")
        if not lo <= v <= hi:
            raise ArchError(f"arch.cell.{name}: {v} is not in {lo}..{hi}")
        return v

    nodes = count("nodes")
    edges = c.get("edges")
    if edges is None:
        raise ArchError("arch.cell.edges: missing")
    if not isinstance(edges, list):
        raise ArchError(f"arch.cell.edges: {edges!r} is not a list")
    if len(edges) != nodes - 1:
        raise ArchError(
            f"arch.cell.edges: {len(edges)} entries, want nodes - 1 = {nodes - 1} "
            "(edges[i-1] lists the operations into node i)"
        )
    for k, into in enumerate(edges):
        if not isinstance(into, list):
            raise ArchError(f"arch.cell.edges[{k}]: {into!r} is not a list")
        if len(into) != k + 1:
            raise ArchError(
                f"arch.cell.edges[{k}]: {len(into)} operations, want {k + 1} "
                f"(one from each of nodes 0..{k} into node {k + 1})"
            )
        for j, op in enumerate(into):
            if op not in OPS:
                raise ArchError(f"arch.cell.edges[{k}][{j}]: unknown operation {op!r} (want one of {', '.join(OPS)})")
    return Cell(nodes, [list(e) for e in edges], count("stacks"), count("cells"), count("channels"))


def build_model(torch, arch):
    """The network of arch (see the module's docstring)."""
    nn = torch.nn

    class ReLUConvBN(nn.Module):
        def __init__(self, cin, cout, k, stride):
            super().__init__()
            self.op = nn.Sequential(
                nn.ReLU(inplace=False),
                nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False),
                nn.BatchNorm2d(cout),
            )

        def forward(self, x):
            return self.op(x)

    def operation(op, c):
        if op == "skip_connect":
            return nn.Identity()
        if op == "conv_1x1":
            return ReLUConvBN(c, c, 1, 1)
        if op == "conv_3x3":
            return ReLUConvBN(c, c, 3, 1)
        if op == "avg_pool_3x3":
            return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        if op == "max_pool_3x3":
            return nn.MaxPool2d(3, stride=1, padding=1)
        raise AssertionError(f"operation {op!r} has no module")  # "none" is never active

    class CellModule(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.plan = [(i, j) for i, j, _ in arch.active]
            self.ops = nn.ModuleList(operation(op, c) for _, _, op in arch.active)

        def forward(self, x):
            if not arch.output_reached:
                return x.mul(0.0)  # zeros, still in the graph (DDP needs every parameter used)
            node = [x] + [None] * (arch.nodes - 1)
            for (i, j), op in zip(self.plan, self.ops):
                y = op(node[j])
                node[i] = y if node[i] is None else node[i] + y
            return node[-1]

    class Reduction(nn.Module):
        """NB201's ResNetBasicblock with stride 2."""

        def __init__(self, cin, cout):
            super().__init__()
            self.conv_a = ReLUConvBN(cin, cout, 3, 2)
            self.conv_b = ReLUConvBN(cout, cout, 3, 1)
            self.downsample = nn.Sequential(  # ceil mode: 1x1 stays 1x1
                nn.AvgPool2d(kernel_size=2, stride=2, padding=0, ceil_mode=True),
                nn.Conv2d(cin, cout, 1, stride=1, padding=0, bias=False),
            )

        def forward(self, x):
            return self.downsample(x) + self.conv_b(self.conv_a(x))

    c = arch.channels
    layers = [nn.Conv2d(1, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)]
    for stage in range(arch.stacks):
        if stage > 0:
            layers.append(Reduction(c, 2 * c))
            c *= 2
        layers.extend(CellModule(c) for _ in range(arch.cells))
    layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=False), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, CLASSES)]
    return nn.Sequential(*layers)


def count(torch, model):
    """(params, flops): trainable parameters, and multiply-adds of one
    sample's forward pass counting convolutions (Cout*Cin/groups*kh*kw*Hout*Wout)
    and linear layers (in*out) only."""
    nn = torch.nn
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    flops = 0

    def hook(m, inputs, out):
        nonlocal flops
        if isinstance(m, nn.Conv2d):
            kh, kw = m.kernel_size
            flops += m.out_channels * (m.in_channels // m.groups) * kh * kw * out.shape[2] * out.shape[3]
        else:
            flops += m.in_features * m.out_features

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(torch.zeros(1, 1, IMAGE, IMAGE))
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return params, flops


class Hyper:
    def __init__(self, p):
        n = lambda name, default: gt.number(p, name, default)  # noqa: E731
        try:
            self.arch = parse_arch(p.get("arch"))
        except ArchError as e:
            raise gt.EnvError(f"{gt.ENV_PARAMS_FILE}: parameter 'arch': {e}") from None
        self.lr = n("lr", 0.05)
        self.momentum = n("momentum", 0.9)
        self.weight_decay = n("weight_decay", 5e-4)
        self.batch = int(n("batch", 64))
        self.epochs = n("epochs", 20)
        self.seed = int(n("seed", 1))
        self.steps_per_epoch = max(1, TRAIN // max(1, self.batch))
        self.report_every = int(n("report_every", 0)) or self.steps_per_epoch
        self.checkpoint_every = int(n("checkpoint_every", 0)) or 5 * self.steps_per_epoch
        self.step_ms = n("step_ms", 0)
        checks = [
            ("lr", 0 < self.lr < float("inf")),
            ("momentum", 0 <= self.momentum < 1),
            ("weight_decay", 0 <= self.weight_decay < 1),
            ("batch", 2 <= self.batch <= TRAIN),
            ("epochs", 0 <= self.epochs < float("inf")),
            ("report_every", self.report_every >= 1),
            ("checkpoint_every", self.checkpoint_every >= 1),
            ("step_ms", 0 <= self.step_ms <= 60000),
        ]
        for name, ok in checks:
            if not ok:
                raise gt.EnvError(f"{gt.ENV_PARAMS_FILE}: parameter {name!r}: {getattr(self, name)!r} out of range")


def split(torch, x, y):
    """The fixed train/validation split, standardised by the training
    pixels' mean and deviation: the same for every trial, seed and rank."""
    perm = torch.randperm(IMAGES, generator=torch.Generator().manual_seed(SPLIT_SEED))
    x = torch.as_tensor(x, dtype=torch.float32).view(-1, 1, IMAGE, IMAGE)[perm]
    y = torch.as_tensor(y, dtype=torch.int64)[perm]
    xt, yt, xv, yv = x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]
    mean, std = xt.mean(), xt.std()
    return (xt - mean) / std, yt, (xv - mean) / std, yv


def worker(local_rank, rv, env, h, master_addr, master_port, data):
    import time

    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    r = gtorch.init_rank(local_rank, rv, master_addr, master_port, h.seed, keep_omp_threads=True)
    rank, world, device = r.rank, r.world, r.device

    xt, yt, xv, yv = (t.to(device) for t in split(torch, *data))
    arch = h.arch
    model = build_model(torch, arch)
    params, flops = count(torch, model)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=h.lr, momentum=h.momentum, weight_decay=h.weight_decay)
    spe = h.steps_per_epoch
    # Counters, and where the data order stands: batch `position` of epoch
    # `epoch_index`'s permutation is the next one.
    step, samples, epoch_index, position = 0, 0, 0, 0
    if env.resuming():
        ck = torch.load(env.resume_from, map_location=device)
        if ck.get("arch") != arch.canonical():
            raise SystemExit(
                f"train.py: {gt.ENV_RESUME_FROM}: checkpoint of architecture {ck.get('arch')}, "
                f"params say {arch.canonical()}"
            )
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])  # momentum buffers, and the hyperparameters it was trained with...
        for group in opt.param_groups:  # ...but the hyperparameters are this trial's
            group["lr"], group["momentum"], group["weight_decay"] = h.lr, h.momentum, h.weight_decay
        step, samples = int(ck["step"]), int(ck["samples"])
        epoch_index, position = int(ck["epoch_index"]), int(ck["position"])
        if position >= spe:  # trained with a smaller batch: start the next epoch
            epoch_index, position = epoch_index + 1, 0
        torch.set_rng_state(ck["rng"].cpu())

    def epoch():
        return epoch_index + position / spe

    # Every rank has read the checkpoint before this first collective, so
    # rank 0 may prune it once training moves on.
    reporter = gtorch.meet(r, local_rank, rv, env.report_file, samples, step, epoch=epoch())
    if rank == 0:
        reporter.report(samples=samples, step=step, epoch=epoch(), metrics={"params": params, "flops": flops})
    ddp = DDP(model, device_ids=[local_rank] if r.use_cuda else None)

    def evaluate():
        model.eval()
        try:
            with torch.no_grad():
                out = model(xv)
                return F.cross_entropy(out, yv).item(), (out.argmax(1) == yv).float().mean().item()
        finally:
            model.train()

    def report(train_loss, checkpoint=None):
        val_loss, acc = evaluate()
        reporter.report(
            samples=samples, step=step, epoch=epoch(), checkpoint=checkpoint,
            metrics={"loss": train_loss, "val_loss": val_loss, "val_accuracy": acc, "params": params, "flops": flops,
                     **timer.metrics()},
        )

    def save(train_loss):
        if rank == 0:
            state = {
                "version": 1, "arch": arch.canonical(), "step": step, "samples": samples,
                "epoch_index": epoch_index, "position": position, "rng": torch.get_rng_state(),
                "model": model.state_dict(), "optimizer": opt.state_dict(),
            }
            gtorch.write_checkpoint(state, step, env.checkpoint_dir, lambda path: report(train_loss, checkpoint=path))

    losses = gtorch.MeanLoss()

    def ended():
        # The campaign's budget when it gives one (every rank has the same
        # counters, so all end after the same step), else our own epochs.
        if env.budget > 0:
            return env.budget_reached(samples, step, epoch())
        return epoch() >= h.epochs

    perm_epoch, perm = -1, None

    def next_batch():
        """The global batch at the data order's position: a function of
        (seed, epoch_index, position) only."""
        nonlocal perm_epoch, perm
        if perm_epoch != epoch_index:
            g = torch.Generator().manual_seed(h.seed * 1_000_003 + epoch_index)
            perm, perm_epoch = torch.randperm(TRAIN, generator=g), epoch_index
        return perm[position * h.batch:(position + 1) * h.batch]

    end = f"{env.budget:g} {env.budget_unit}" if env.budget > 0 else f"epoch {h.epochs:g}"
    if local_rank == 0:
        print(f"train.py: trial {env.trial_id!r}, host {rv.node_rank} of {rv.num_hosts} ({rv.host_addr}): "
              f"ranks {rank}..{rank + rv.local_nodes - 1} of {world} on {device}, arch {arch.canonical()}: "
              f"{params} parameters, {flops} multiply-adds per sample; batch {h.batch}, lr {h.lr}, "
              f"step {step} (epoch {epoch():g}) -> {end}", file=sys.stderr, flush=True)
    stopped = False
    timer = StepTimer(h.batch)
    while not ended():
        timer.start()
        idx = next_batch()[rank::world].to(device)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(xt[idx]), yt[idx])
        loss.backward()  # DDP averages gradients across ranks here
        opt.step()
        step += 1
        samples += h.batch
        position += 1
        if position == spe:
            epoch_index, position = epoch_index + 1, 0
        batch_loss, stop = gtorch.step_allreduce(r, loss, len(idx))
        timer.stop()
        losses.add(batch_loss)
        if stop:
            stopped = True
            break
        if step % h.checkpoint_every == 0 and not ended():
            save(losses.take())
        elif step % h.report_every == 0 and not ended() and rank == 0:
            report(losses.take())
        if h.step_ms:
            time.sleep(h.step_ms / 1000)

    save(losses.take())  # the last report: the final checkpoint and metrics
    if rank == 0:
        what = "stopped" if stopped else "budget reached" if env.budget > 0 else "done"
        val_loss, acc = evaluate()
        print(f"train.py: {what} at step {step} (epoch {epoch():g}), val_loss {val_loss:.4f}, "
              f"val_accuracy {acc:.4f}, checkpoint written", file=sys.stderr, flush=True)
        reporter.close()
    gtorch.finish()


def count_main(archs):
    """train.py --count ARCH...: one JSON line {"params", "flops"} per
    architecture, nothing trained."""
    try:
        cells = [parse_arch(a) for a in archs]
    except ArchError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return EXIT_PARAMS
    _import_or_reexec()
    import torch

    for a in cells:
        params, flops = count(torch, build_model(torch, a))
        print(json.dumps({"arch": a.canonical(), "params": params, "flops": flops}, separators=(",", ":")))
    return 0


class StepTimer:
    """Times a run's training steps: wall time per sample of the global
    batch, leaving out the run's first WARMUP steps (allocation, caches)."""

    WARMUP = 5

    def __init__(self, batch):
        self.batch, self.steps, self.seconds, self.t0 = batch, 0, 0.0, None

    def start(self):
        self.t0 = time.perf_counter()

    def stop(self):
        self.steps += 1
        if self.steps > self.WARMUP:
            self.seconds += time.perf_counter() - self.t0

    def metrics(self):
        timed = self.steps - self.WARMUP
        if timed <= 0:
            return {}
        return {"measured_ms_per_sample": 1000 * self.seconds / (timed * self.batch)}


def main():
    if sys.argv[1:2] == ["--count"]:
        return count_main(sys.argv[2:])
    try:
        env = gt.env()
        rv = gt.rendezvous()
        h = Hyper(env.params)
        if h.batch < 2 * rv.nodes:  # batch norm needs two images on every rank
            raise gt.EnvError(
                f"{gt.ENV_PARAMS_FILE}: parameter 'batch': {h.batch} is less than 2 per node on {rv.nodes} nodes"
            )
    except gt.EnvError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return EXIT_PARAMS if gt.ENV_PARAMS_FILE in str(e) and "parameter" in str(e) else EXIT_ENV
    _import_or_reexec()
    import sklearn.datasets

    digits = sklearn.datasets.load_digits()
    data = (digits.data, digits.target)
    if len(digits.target) != IMAGES:
        print(f"train.py: load_digits returned {len(digits.target)} images, want {IMAGES}", file=sys.stderr)
        return EXIT_ENV

    return gtorch.launch(worker, (rv, env, h, *gtorch.master(rv), data), rv.local_nodes)


if __name__ == "__main__":
    gtorch.exit_now(main())
