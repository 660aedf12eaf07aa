"""Data-parallel launching shared by Gleaner's PyTorch trainers
(examples/pytorch/train.py, examples/pytorch-nas/train.py; docs/protocol.md).

What both do the same way: re-execute into an interpreter that has torch,
choose where the ranks meet (the launcher's GLEANER_MASTER_ADDR:PORT on a
run of several hosts, else loopback and the given or a free port), spawn
one process per local node and forward a stop to them, set up each rank
(device, threads, process group), the first all-reduce with its
"rendezvous" report line, the per-step all-reduce of loss and stop flag,
and checkpoint writing. The model and the training loop stay in each
trainer.

Only the standard library and gleaner_trial at import time; torch is
imported inside the functions that need it.
"""

import importlib
import os
import signal
import sys

import gleaner_trial as gt

EXIT_ENV = 1
REEXEC_GUARD = "GLEANER_TRAIN_REEXEC"


def import_or_reexec(script, modules, hint):
    """Return if every one of modules imports. Otherwise re-execute script
    (same pid, so signals still reach it) with $GLEANER_PYTHON, else
    /usr/bin/python3, once; failing that, print "train.py: <python> cannot
    import <hint>" and exit EXIT_ENV."""
    try:
        for m in modules:
            importlib.import_module(m)
        return
    except ImportError:
        pass
    if not os.environ.get(REEXEC_GUARD):
        for py in (os.environ.get("GLEANER_PYTHON"), "/usr/bin/python3"):
            if py and os.path.exists(py) and os.path.realpath(py) != os.path.realpath(sys.executable):
                os.environ[REEXEC_GUARD] = "1"
                os.execv(py, [py, os.path.abspath(script)] + sys.argv[1:])
    sys.stderr.write(f"train.py: {sys.executable} cannot import {hint}\n")
    sys.exit(EXIT_ENV)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def master(rv):
    """(address, port) where the ranks meet: the launcher's on a run of
    several hosts; with all ranks here, loopback and the launcher's port if
    it gave one, else a free one."""
    if rv.multi_host:
        return rv.master_addr, rv.master_port
    return "127.0.0.1", rv.master_port or free_port()


def launch(worker, args, local_nodes):
    """Run worker(local_rank, *args) for each local rank: in this process
    when there is one, else in spawned processes, forwarding a stop to
    them. Returns the exit status: 0, a rank's own positive exit status,
    or EXIT_ENV."""
    import torch.multiprocessing as mp

    if local_nodes == 1:
        worker(0, *args)
        return 0
    if gt.stopping():
        return 0  # stopped before any rank started: the last checkpoint stands
    ctx = mp.spawn(_spawned_rank, args=(worker, args), nprocs=local_nodes, join=False)
    forwarded = False
    try:
        while not ctx.join(timeout=0.2):
            # The group's SIGTERM reaches the ranks directly; forward it in
            # case it came while they were still being spawned.
            if gt.stopping() and not forwarded:
                forwarded = True
                for p in ctx.processes:
                    if p.is_alive():
                        os.kill(p.pid, signal.SIGTERM)
    except mp.ProcessExitedException as e:
        if gt.stopping() and e.exit_code is not None and e.exit_code < 0:
            # A rank killed by the stop signal before it could handle it.
            print(f"train.py: stopped while starting: {e}", file=sys.stderr)
            return 0
        print(f"train.py: {e}", file=sys.stderr)
        return e.exit_code if e.exit_code and e.exit_code > 0 else EXIT_ENV
    except mp.ProcessRaisedException as e:
        print(f"train.py: {e}", file=sys.stderr)
        return EXIT_ENV
    return 0


def _spawned_rank(local_rank, worker, args):
    """A spawned rank: worker(local_rank, *args), then out at once
    (exit_now) once it returns; an exception or sys.exit still reaches
    torch's spawn wrapper as before."""
    worker(local_rank, *args)
    exit_now(0)


def exit_now(status):
    """Flush stdout and stderr and end the process with status, skipping
    interpreter teardown. Call it only when every checkpoint and report is
    written and closed (finish): a process group's and torch's destructors
    at interpreter exit have hung a finished rank under load (seen in CI
    as a 2-rank run that never exited after its last checkpoint)."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    os._exit(0 if status is None else status)


def finish():
    """Wait for every rank to be done with the process group (a barrier,
    bounded by the group's timeout), so that none leaves while another
    still needs it. The group is not destroyed: the process ends next
    (exit_now)."""
    import torch.distributed as dist

    dist.barrier()


class Rank:
    """One rank's place: global rank and world size, its device, whether it
    uses CUDA (NCCL, a GPU per local process) or the CPU (gloo)."""

    def __init__(self, rank, world, device, use_cuda):
        self.rank, self.world, self.device, self.use_cuda = rank, world, device, use_cuda


def init_rank(local_rank, rv, master_addr, master_port, seed, keep_omp_threads=False):
    """Set up this process as local rank local_rank: the stop handler,
    torch's seed, the device (on the CPU, an equal share of the cores as
    threads, unless keep_omp_threads and OMP_NUM_THREADS is set) and the
    process group."""
    import datetime

    import torch
    import torch.distributed as dist

    gt.install_stop_handler()
    torch.manual_seed(seed)
    rank, world = rv.node_offset + local_rank, rv.nodes  # global
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= rv.local_nodes
    if use_cuda:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        if not (keep_omp_threads and os.environ.get("OMP_NUM_THREADS")):
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // rv.local_nodes))
    os.environ["MASTER_ADDR"] = master_addr
    os.environ["MASTER_PORT"] = str(master_port)
    dist.init_process_group(
        "nccl" if use_cuda else "gloo", rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=120),
    )
    return Rank(rank, world, device, use_cuda)


def meet(r, local_rank, rv, report_file, samples, step, epoch=None):
    """The first all-reduce (the sum of rank + 1 over all ranks); each
    host's first process then appends the rendezvous report line. Call it
    once every rank has read its checkpoint. Returns global rank 0's
    Reporter, None on the others."""
    import torch
    import torch.distributed as dist

    met = torch.tensor([r.rank + 1.0], device=r.device)
    dist.all_reduce(met)
    reporter = gt.Reporter(report_file) if r.rank == 0 else None
    if local_rank == 0:
        info = {
            "node_rank": rv.node_rank, "num_hosts": rv.num_hosts, "host_addr": rv.host_addr, "world_size": r.world,
            "local_nodes": rv.local_nodes, "node_offset": rv.node_offset, "allreduce": met.item(),
        }
        with gt.Reporter(report_file) as w:
            w.report(samples=samples, step=step, epoch=epoch, extra={"rendezvous": info})
    return reporter


def step_allreduce(r, loss, n):
    """One all-reduce carries the batch loss (over n samples here) and
    everyone's stop flag, so all ranks, on every host, stop after the same
    step. Returns (the batch's mean loss over all ranks, whether any rank
    is stopping)."""
    import torch
    import torch.distributed as dist

    stats = torch.tensor([loss.item() * n, n, 1.0 if gt.stopping() else 0.0], device=r.device)
    dist.all_reduce(stats)
    return (stats[0] / stats[1]).item(), stats[2].item() > 0


class MeanLoss:
    """The mean of the losses added since the last take (NaN if none)."""

    def __init__(self):
        self.sum, self.n = 0.0, 0

    def add(self, loss):
        self.sum += loss
        self.n += 1

    def take(self):
        m = self.sum / self.n if self.n else float("nan")
        self.sum, self.n = 0.0, 0
        return m


def write_checkpoint(state, step, directory, then):
    """Save state atomically as step-<step>.pt in directory, call
    then(path) once it is completely written (to report it), and keep the
    newest two."""
    import torch

    path = gt.save_checkpoint(gt.checkpoint_name(step, ".pt"), lambda f: torch.save(state, f), directory=directory)
    then(path)
    gt.prune_checkpoints("step-*.pt", 2, directory=directory)
