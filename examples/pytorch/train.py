#!/usr/bin/env python3
"""Gleaner's PyTorch example trainer (docs/protocol.md).

A small MLP classifies synthetic data (points labelled by a fixed random
"teacher" network; nothing is downloaded), trained with SGD, data-parallel
with torch.distributed over GLEANER_NODES processes: gloo on CPU, NCCL when
CUDA offers a GPU per local process. On one host this script spawns them
all; on a run of several hosts (GLEANER_NUM_HOSTS > 1: one train.py per
host, see the rendezvous in docs/protocol.md) each spawns its
GLEANER_LOCAL_NODES processes, global ranks GLEANER_NODE_OFFSET onwards,
and they meet at GLEANER_MASTER_ADDR:GLEANER_MASTER_PORT. Global rank 0
(on host rank 0) reports progress and metrics and writes checkpoints
(model, optimizer, step, samples) every checkpoint_every steps, at the end,
and when Gleaner stops the trial: SIGTERM reaches every process of the
group, the ranks of all hosts agree on it through the per-step all-reduce,
rank 0 checkpoints, all exit 0. GLEANER_RESUME_FROM resumes exactly: the
batch of step s depends only on (seed, s); the learning rate and momentum
are the params file's, not the checkpoint's (a trial started from another
trial's checkpoint, as population based training does, may have others).
With a budget (GLEANER_BUDGET in GLEANER_BUDGET_UNIT) it trains until its
samples, step or epoch counter reaches the budget, instead of for steps,
then checkpoints, reports and exits 0, as on a stop.

First, each host's first process appends one line to its own
GLEANER_REPORT_FILE after a first all-reduce: a report line (the samples
and step the run starts from) with a "rendezvous" member that readers
ignore: node_rank, num_hosts, host_addr, world_size, local_nodes,
node_offset, and allreduce, the sum over all ranks of rank + 1 (world ×
(world + 1) / 2 when every rank took part).

Parameters (params file; choice values may be strings): lr (0.05),
momentum (0.9), hidden (64), batch (global, 128), steps (300), seed (1),
report_every (10), checkpoint_every (100), step_ms (0: sleep per step, for
tests), fail_at_step (0: test-only, exit 3 on reaching it, first run only).

The interpreter: the campaign runs `python3 examples/pytorch/train.py`. If
that python3 cannot import torch, the script re-executes itself (same pid,
so signals still reach it) with $GLEANER_PYTHON, else /usr/bin/python3 —
where Debian's python3-torch installs it.

The launching (re-exec, rendezvous, spawning, each rank's set-up, the
per-step all-reduce, checkpoint writing) is python/gleaner_torch.py's,
shared with examples/pytorch-nas/train.py; the model and loop are here.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import gleaner_torch as gtorch  # noqa: E402
import gleaner_trial as gt  # noqa: E402

# First thing, in the parent and in every spawned rank (which re-imports this
# module): SIGTERM must set the stop flag, never kill a half-started process.
gt.install_stop_handler()

EXIT_ENV, EXIT_PARAMS, EXIT_INJECTED = gtorch.EXIT_ENV, 2, 3


class Hyper:
    def __init__(self, p):
        n = lambda name, default: gt.number(p, name, default)  # noqa: E731
        self.lr = n("lr", 0.05)
        self.momentum = n("momentum", 0.9)
        self.hidden = int(n("hidden", 64))
        self.batch = int(n("batch", 128))
        self.steps = int(n("steps", 300))
        self.seed = int(n("seed", 1))
        self.report_every = int(n("report_every", 10))
        self.checkpoint_every = int(n("checkpoint_every", 100))
        self.step_ms = n("step_ms", 0)
        self.fail_at_step = int(n("fail_at_step", 0))
        checks = [
            ("lr", self.lr > 0 and self.lr < float("inf")),
            ("momentum", 0 <= self.momentum < 1),
            ("hidden", 1 <= self.hidden <= 65536),
            ("batch", 1 <= self.batch <= 1 << 20),
            ("steps", self.steps >= 0),
            ("report_every", self.report_every >= 1),
            ("checkpoint_every", self.checkpoint_every >= 1),
            ("step_ms", 0 <= self.step_ms <= 60000),
            ("fail_at_step", self.fail_at_step >= 0),
        ]
        for name, ok in checks:
            if not ok:
                raise gt.EnvError(f"{gt.ENV_PARAMS_FILE}: parameter {name!r}: {getattr(self, name)!r} out of range")


FEATURES, CLASSES, TRAIN, VAL, DATA_SEED = 20, 4, 4096, 1024, 7


def make_data(torch):
    """Points labelled by a fixed random teacher network: the same for every
    trial and rank, learnable but not linearly separable."""
    g = torch.Generator().manual_seed(DATA_SEED)
    x = torch.randn(TRAIN + VAL, FEATURES, generator=g)
    w1 = torch.randn(FEATURES, 32, generator=g)
    w2 = torch.randn(32, CLASSES, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(dim=1)
    return x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]


def make_model(torch, hidden):
    nn = torch.nn
    return nn.Sequential(
        nn.Linear(FEATURES, hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, CLASSES),
    )


def batch_indices(torch, seed, step, batch):
    """The global batch of a step depends only on (seed, step), so a resumed
    run draws exactly the batches the stopped one would have."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    return torch.randint(0, TRAIN, (batch,), generator=g)


def worker(local_rank, rv, env, h, master_addr, master_port):
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    r = gtorch.init_rank(local_rank, rv, master_addr, master_port, h.seed)
    rank, world, device = r.rank, r.world, r.device

    xt, yt, xv, yv = (t.to(device) for t in make_data(torch))
    model = make_model(torch, h.hidden).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=h.lr, momentum=h.momentum)
    step, samples = 0, 0
    if env.resuming():
        ck = torch.load(env.resume_from, map_location=device)
        if ck.get("hidden") != h.hidden:
            raise SystemExit(
                f"train.py: {gt.ENV_RESUME_FROM}: checkpoint has hidden={ck.get('hidden')}, params say {h.hidden}"
            )
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])  # momentum buffers, and the lr it was trained with...
        for group in opt.param_groups:  # ...but the hyperparameters are this trial's
            group["lr"], group["momentum"] = h.lr, h.momentum
        step, samples = int(ck["step"]), int(ck["samples"])
    # Every rank has read the checkpoint before this first collective, so
    # rank 0 may prune it once training moves on.
    reporter = gtorch.meet(r, local_rank, rv, env.report_file, samples, step)
    ddp = DDP(model, device_ids=[local_rank] if r.use_cuda else None)

    def evaluate():
        with torch.no_grad():
            out = model(xv)
            return F.cross_entropy(out, yv).item(), (out.argmax(1) == yv).float().mean().item()

    def report(train_loss, checkpoint=None):
        val_loss, acc = evaluate()
        reporter.report(
            samples=samples, step=step, epoch=samples / TRAIN, checkpoint=checkpoint,
            metrics={"loss": train_loss, "val_loss": val_loss, "accuracy": acc},
        )

    def save(train_loss):
        if rank == 0:
            state = {
                "version": 1, "step": step, "samples": samples, "hidden": h.hidden,
                "model": model.state_dict(), "optimizer": opt.state_dict(),
            }
            gtorch.write_checkpoint(state, step, env.checkpoint_dir, lambda path: report(train_loss, checkpoint=path))

    losses = gtorch.MeanLoss()

    def ended():
        # The campaign's budget when it gives one (every rank has the same
        # counters, so all end after the same step), else our own steps.
        if env.budget > 0:
            return env.budget_reached(samples, step, samples / TRAIN)
        return step >= h.steps

    end = f"{env.budget:g} {env.budget_unit}" if env.budget > 0 else f"step {h.steps}"
    if local_rank == 0:
        print(f"train.py: trial {env.trial_id!r}, host {rv.node_rank} of {rv.num_hosts} ({rv.host_addr}): "
              f"ranks {rank}..{rank + rv.local_nodes - 1} of {world} on {device}, hidden {h.hidden}, "
              f"batch {h.batch}, lr {h.lr}, step {step} -> {end}", file=sys.stderr, flush=True)
    stopped = False
    while not ended():
        idx = batch_indices(torch, h.seed, step, h.batch)[rank::world].to(device)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(xt[idx]), yt[idx])
        loss.backward()  # DDP averages gradients across ranks here
        opt.step()
        step += 1
        samples += h.batch
        batch_loss, stop = gtorch.step_allreduce(r, loss, len(idx))
        losses.add(batch_loss)

        if h.fail_at_step and step == h.fail_at_step and not env.resuming():
            if rank == 0:
                print(f"train.py: failing at step {step} as fail_at_step asks", file=sys.stderr, flush=True)
            sys.exit(EXIT_INJECTED)
        if stop:
            stopped = True
            break
        if step % h.checkpoint_every == 0 and not ended():
            save(losses.take())
        elif step % h.report_every == 0 and not ended() and rank == 0:
            report(losses.take())
        if h.step_ms:
            import time

            time.sleep(h.step_ms / 1000)

    save(losses.take())  # the last report: the final checkpoint and metrics
    if rank == 0:
        what = "stopped" if stopped else "budget reached" if env.budget > 0 else "done"
        print(f"train.py: {what} at step {step}, checkpoint written", file=sys.stderr, flush=True)
        reporter.close()
    gtorch.finish()


def main():
    try:
        env = gt.env()
        rv = gt.rendezvous()
        h = Hyper(env.params)
    except gt.EnvError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return EXIT_PARAMS if gt.ENV_PARAMS_FILE in str(e) and "parameter" in str(e) else EXIT_ENV
    gtorch.import_or_reexec(
        __file__, ("torch",),
        "torch; install python3-torch or set GLEANER_PYTHON to an interpreter that has it",
    )
    return gtorch.launch(worker, (rv, env, h, *gtorch.master(rv)), rv.local_nodes)


if __name__ == "__main__":
    gtorch.exit_now(main())
