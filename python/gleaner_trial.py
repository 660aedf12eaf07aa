"""Python side of Gleaner's trial protocol (docs/protocol.md); stdlib only.

The same contract as the Go package ``trial``, with the same names where
they mean the same (``load_env`` is ``trial.LoadEnv``, ``env.resuming()``
is ``Env.Resuming()``, ``env.budget_reached`` is ``Env.BudgetReached``)::

    import gleaner_trial as gt

    gt.install_stop_handler()           # SIGTERM -> gt.stopping() is True
    env = gt.load_env()                 # GLEANER_* variables, validated
    rep = env.reporter()                # appends to GLEANER_REPORT_FILE
    if env.resuming():                  # GLEANER_RESUME_FROM: restore the counters
        state = gt.load_checkpoint(env.resume_from, pickle.load)
    for step in ...:
        # a stop, or the counters at GLEANER_BUDGET: checkpoint, report, exit 0
        if gt.stopping() or env.budget_reached(samples, step, samples / n):
            path = env.save_checkpoint(gt.checkpoint_name(step, ".pt"),
                                       lambda f: torch.save(state, f))
            rep.report(step=step, samples=samples, checkpoint=path)
            sys.exit(0)
        ...
        rep.report(samples=samples, step=step, metrics={"loss": loss})

Errors about the environment name the variable at fault.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
import os
import re
import signal
import tempfile
import threading
import time
import warnings
from typing import Any, BinaryIO, Callable, Mapping, Optional

ENV_TRIAL_ID = "GLEANER_TRIAL_ID"
ENV_CAMPAIGN_ID = "GLEANER_CAMPAIGN_ID"
ENV_PARAMS_FILE = "GLEANER_PARAMS_FILE"
ENV_NODES = "GLEANER_NODES"
ENV_HOSTFILE = "GLEANER_HOSTFILE"
ENV_CHECKPOINT_DIR = "GLEANER_CHECKPOINT_DIR"
ENV_RESUME_FROM = "GLEANER_RESUME_FROM"
ENV_REPORT_FILE = "GLEANER_REPORT_FILE"
ENV_BUDGET = "GLEANER_BUDGET"  # decimal > 0; absent or empty: no budget
ENV_BUDGET_UNIT = "GLEANER_BUDGET_UNIT"  # one of BUDGET_UNITS, set whenever GLEANER_BUDGET is

# Budget units: which cumulative report counter a budget counts.
BUDGET_SAMPLES = "samples"
BUDGET_STEPS = "steps"
BUDGET_EPOCHS = "epochs"
BUDGET_UNITS = (BUDGET_SAMPLES, BUDGET_STEPS, BUDGET_EPOCHS)

# The rendezvous of a run on several hosts (one trainer process per host).
ENV_NODE_RANK = "GLEANER_NODE_RANK"
ENV_NUM_HOSTS = "GLEANER_NUM_HOSTS"
ENV_LOCAL_NODES = "GLEANER_LOCAL_NODES"
ENV_NODE_OFFSET = "GLEANER_NODE_OFFSET"
ENV_HOST_ADDR = "GLEANER_HOST_ADDR"
ENV_MASTER_ADDR = "GLEANER_MASTER_ADDR"
ENV_MASTER_PORT = "GLEANER_MASTER_PORT"

MAX_REPORT_LINE = 64 << 10


class EnvError(ValueError):
    """The trial environment is missing or malformed; the message names the
    variable."""


@dataclasses.dataclass(frozen=True)
class Env:
    trial_id: str
    campaign_id: str
    params_file: str
    nodes: int
    hostfile: str
    hosts: list
    checkpoint_dir: str
    resume_from: str  # "" at first start
    report_file: str
    params: dict = dataclasses.field(default_factory=dict)
    # budget > 0: train until the budget_unit counter (samples, step or
    # epoch, cumulative since the trial first started) reaches it, then
    # checkpoint, report and exit 0. 0: no budget, train to your own end.
    budget: float = 0.0
    budget_unit: str = ""  # one of BUDGET_UNITS; "" without a budget

    @property
    def resuming(self) -> "_Resuming":
        """Call it: ``env.resuming()`` is True when GLEANER_RESUME_FROM names
        a checkpoint to restore, as Go's ``Env.Resuming()``. Reading it as
        a bare attribute (``if env.resuming:``, the property it was before)
        still works, with a DeprecationWarning."""
        return _Resuming(self.resume_from != "")

    def reporter(self, fsync: bool = False) -> "Reporter":
        """A Reporter on GLEANER_REPORT_FILE, as Go's ``Env.Reporter()``."""
        return Reporter(self.report_file, fsync=fsync)

    def save_checkpoint(self, name: str, write_fn: Callable[[BinaryIO], Any]) -> str:
        """save_checkpoint into GLEANER_CHECKPOINT_DIR, as Go's
        ``Env.SaveCheckpoint``: returns the absolute path to report."""
        return save_checkpoint(name, write_fn, directory=self.checkpoint_dir)

    def budget_reached(self, samples: float, step: int, epoch: float) -> bool:
        """True once a run at these counters (a report's, cumulative since
        the trial first started) has reached its budget: checkpoint, report
        and exit 0. Always False without a budget."""
        if not self.budget > 0:
            return False
        counter = {BUDGET_SAMPLES: samples, BUDGET_STEPS: step, BUDGET_EPOCHS: epoch}.get(self.budget_unit)
        return counter is not None and counter >= self.budget


class _Resuming:
    """What Env.resuming returns: a method-like flag. ``env.resuming()`` is
    the form Go has (``Env.Resuming()``); the truth of the bare attribute
    is the old property's, kept working with a DeprecationWarning."""

    __slots__ = ("_value",)

    def __init__(self, value: bool):
        self._value = value

    def __call__(self) -> bool:
        return self._value

    def _deprecated(self) -> bool:
        warnings.warn(
            "gleaner_trial: env.resuming is a method, as Go's Env.Resuming(): call env.resuming()",
            DeprecationWarning,
            stacklevel=3,
        )
        return self._value

    def __bool__(self) -> bool:
        return self._deprecated()

    def __eq__(self, other: object) -> bool:
        return self._deprecated() == other

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"<bound method Env.resuming: {self._value}>"


def load_env(environ: Optional[Mapping[str, str]] = None) -> Env:
    """Read and check the GLEANER_* variables, as Go's ``trial.LoadEnv``;
    the same as env()."""
    return env(environ)


def env(environ: Optional[Mapping[str, str]] = None) -> Env:
    """Read and check the GLEANER_* variables (from os.environ by default).

    GLEANER_PARAMS_FILE, GLEANER_NODES, GLEANER_CHECKPOINT_DIR and
    GLEANER_REPORT_FILE are required; GLEANER_HOSTFILE, when set, must list
    exactly GLEANER_NODES hosts; GLEANER_RESUME_FROM, when set, must exist;
    GLEANER_BUDGET, when set, must be a finite decimal number > 0, and then
    GLEANER_BUDGET_UNIT one of samples, steps and epochs (a unit without a
    budget is ignored).
    """
    environ = os.environ if environ is None else environ

    def get(name: str) -> str:
        return (environ.get(name) or "").strip()

    def required(name: str) -> str:
        v = get(name)
        if not v:
            raise EnvError(f"{name}: not set; the trial launcher sets it (see docs/protocol.md)")
        return v

    params_file = required(ENV_PARAMS_FILE)
    checkpoint_dir = required(ENV_CHECKPOINT_DIR)
    report_file = required(ENV_REPORT_FILE)
    nodes_s = required(ENV_NODES)
    try:
        nodes = int(nodes_s)
    except ValueError:
        nodes = 0
    if nodes < 1:
        raise EnvError(f"{ENV_NODES}: {nodes_s!r} is not a node count of at least 1")

    try:
        with open(params_file, "rb") as f:
            p = json.load(f)
    except OSError as e:
        raise EnvError(f"{ENV_PARAMS_FILE}: {e}") from e
    except ValueError as e:
        raise EnvError(f"{ENV_PARAMS_FILE}: {params_file} is not a JSON object: {e}") from e
    if not isinstance(p, dict):
        raise EnvError(f"{ENV_PARAMS_FILE}: {params_file} is not a JSON object")

    hostfile = get(ENV_HOSTFILE)
    hosts: list = []
    if hostfile:
        try:
            with open(hostfile, encoding="utf-8") as f:
                hosts = [line.strip() for line in f if line.strip()]
        except OSError as e:
            raise EnvError(f"{ENV_HOSTFILE}: {e}") from e
        if len(hosts) != nodes:
            raise EnvError(f"{ENV_HOSTFILE}: {hostfile} lists {len(hosts)} hosts but {ENV_NODES} is {nodes}")

    resume_from = get(ENV_RESUME_FROM)
    if resume_from and not os.path.exists(resume_from):
        raise EnvError(f"{ENV_RESUME_FROM}: {resume_from}: no such file")
    budget, budget_unit = _budget(get(ENV_BUDGET), get(ENV_BUDGET_UNIT))

    return Env(
        trial_id=get(ENV_TRIAL_ID),
        campaign_id=get(ENV_CAMPAIGN_ID),
        params_file=params_file,
        nodes=nodes,
        hostfile=hostfile,
        hosts=hosts,
        checkpoint_dir=checkpoint_dir,
        resume_from=resume_from,
        report_file=report_file,
        params=p,
        budget=budget,
        budget_unit=budget_unit,
    )


# A decimal number, optional exponent: none of float()'s other forms (inf,
# nan, underscores), as the Go helper reads it.
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _budget(budget: str, unit: str) -> tuple:
    """The values of GLEANER_BUDGET and GLEANER_BUDGET_UNIT, checked: (0.0,
    "") when the budget is empty, whatever the unit."""
    if not budget:
        return 0.0, ""
    b = float(budget) if _DECIMAL.fullmatch(budget) else math.nan
    if not (b > 0 and math.isfinite(b)):
        raise EnvError(f"{ENV_BUDGET}: {budget!r} is not a finite decimal number greater than 0")
    if not unit:
        raise EnvError(
            f"{ENV_BUDGET_UNIT}: not set, but {ENV_BUDGET} is {budget}; a launcher sets both (see docs/protocol.md)"
        )
    if unit not in BUDGET_UNITS:
        raise EnvError(f"{ENV_BUDGET_UNIT}: {unit!r} is not {BUDGET_SAMPLES}, {BUDGET_STEPS} or {BUDGET_EPOCHS}")
    return b, unit


def _atoi(s: str) -> Optional[int]:
    """s as Go's strconv.Atoi reads it (ASCII digits, optional sign, 64
    bits), or None: int() would also take "1_0" and non-ASCII digits."""
    if not re.fullmatch(r"[+-]?[0-9]+", s):
        return None
    n = int(s)
    return n if -(1 << 63) <= n < (1 << 63) else None


@dataclasses.dataclass(frozen=True)
class Rendezvous:
    """Where this trainer process stands among the hosts of its run: it
    trains local_nodes of the run's nodes, numbered node_offset, ... among
    all of them; host rank 0 reports and checkpoints; the hosts meet at
    master_addr:master_port (0: none assigned, single host only)."""

    node_rank: int
    num_hosts: int
    nodes: int
    local_nodes: int
    node_offset: int
    host_addr: str
    master_addr: str
    master_port: int

    @property
    def multi_host(self) -> bool:
        return self.num_hosts > 1


def rendezvous(environ: Optional[Mapping[str, str]] = None) -> Rendezvous:
    """Read and check the rendezvous variables (from os.environ by default),
    as the Go trial.LoadRendezvousFrom does.

    GLEANER_NODES is required. Without GLEANER_NUM_HOSTS (or with 1) the run
    is on one host: rank 0 of 1, every node local, offset 0, the addresses
    default to each other and then to 127.0.0.1, and the port may be absent.
    With more hosts every GLEANER_* rendezvous variable is required, and the
    layout must be one a partition of the nodes over the hosts gives."""
    environ = os.environ if environ is None else environ

    def get(name: str) -> str:
        return (environ.get(name) or "").strip()

    def count(name: str, least: int, what: str) -> int:
        s = get(name)
        n = _atoi(s)
        if n is None or n < least:
            raise EnvError(f"{name}: {s!r} is not {what}")
        return n

    if not get(ENV_NODES):
        raise EnvError(f"{ENV_NODES}: not set; the trial launcher sets it (see docs/protocol.md)")
    nodes = count(ENV_NODES, 1, "a node count of at least 1")
    hosts = count(ENV_NUM_HOSTS, 1, "a host count of at least 1") if get(ENV_NUM_HOSTS) else 1
    if hosts > nodes:
        raise EnvError(f"{ENV_NUM_HOSTS}: {hosts} hosts for {ENV_NODES}={nodes} nodes; every host runs at least one")

    def layout(name: str, default: int, least: int, what: str) -> int:
        if get(name):
            return count(name, least, what)
        if hosts > 1:
            raise EnvError(f"{name}: not set; required when {ENV_NUM_HOSTS} is {hosts} (see docs/protocol.md)")
        return default

    rank = layout(ENV_NODE_RANK, 0, 0, "a host rank")
    local = layout(ENV_LOCAL_NODES, nodes, 1, "a node count of at least 1")
    offset = layout(ENV_NODE_OFFSET, 0, 0, "a node index")
    if rank >= hosts:
        raise EnvError(f"{ENV_NODE_RANK}: rank {rank} of {ENV_NUM_HOSTS}={hosts} hosts; ranks are 0..{hosts - 1}")
    others = hosts - 1
    if hosts == 1 and local != nodes:
        raise EnvError(f"{ENV_LOCAL_NODES}: {local}, but on one host it is {ENV_NODES}={nodes}")
    if local > nodes - others:
        raise EnvError(
            f"{ENV_LOCAL_NODES}: {local} of {ENV_NODES}={nodes} nodes leaves fewer than one "
            f"for each of the {others} other hosts"
        )
    lo, hi = rank, nodes - local - (others - rank)  # every other host holds at least one node
    if rank == 0:
        hi = 0
    if rank == others:
        lo = nodes - local
    if not lo <= offset <= hi:
        want = str(lo) if lo == hi else f"{lo}..{hi}"
        raise EnvError(
            f"{ENV_NODE_OFFSET}: {offset}, but host {rank} of {hosts} with {local} of the {nodes} nodes "
            f"starts at node {want}"
        )

    host, master, port_s = get(ENV_HOST_ADDR), get(ENV_MASTER_ADDR), get(ENV_MASTER_PORT)
    if hosts > 1:
        for name, v in ((ENV_HOST_ADDR, host), (ENV_MASTER_ADDR, master), (ENV_MASTER_PORT, port_s)):
            if not v:
                raise EnvError(f"{name}: not set; required when {ENV_NUM_HOSTS} is {hosts} (see docs/protocol.md)")
    master = master or host or "127.0.0.1"
    host = host or master
    port = 0
    if port_s:
        port = _atoi(port_s) or 0
        if not 1 <= port <= 65535:
            raise EnvError(f"{ENV_MASTER_PORT}: {port_s!r} is not a TCP port (1..65535)")
    return Rendezvous(
        node_rank=rank, num_hosts=hosts, nodes=nodes, local_nodes=local, node_offset=offset,
        host_addr=host, master_addr=master, master_port=port,
    )


def params(environ: Optional[Mapping[str, str]] = None) -> dict:
    """The trial's parameters. Choice parameters arrive as strings; see
    number() and flag()."""
    return env(environ).params


def number(p: Mapping[str, Any], name: str, default: float) -> float:
    """p[name] as a float (accepting "64" as well as 64), or default."""
    v = p.get(name)
    if v is None:
        return default
    try:
        return float(v)
    except (TypeError, ValueError):
        raise EnvError(f"{ENV_PARAMS_FILE}: parameter {name!r}: {v!r} is not a number") from None


def flag(p: Mapping[str, Any], name: str, default: bool = False) -> bool:
    """p[name] as a bool (true/false, "true"/"false", numbers), or default."""
    v = p.get(name)
    if v is None:
        return default
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    s = str(v).strip().lower()
    if s in ("true", "t", "1"):
        return True
    if s in ("false", "f", "0"):
        return False
    raise EnvError(f"{ENV_PARAMS_FILE}: parameter {name!r}: {v!r} is not a boolean")


def _finite_nonneg(v: float) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


_REPORT_MEMBERS = frozenset(("samples", "step", "epoch", "metrics", "checkpoint", "time"))


def encode_report(
    samples: Optional[float] = None,
    step: Optional[int] = None,
    epoch: Optional[float] = None,
    metrics: Optional[Mapping[str, float]] = None,
    checkpoint: Optional[str] = None,
    time_s: Optional[float] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> bytes:
    """One report line, newline included. Non-finite metrics become null;
    non-finite or negative progress is a ValueError. extra holds members of
    the trainer's own (JSON values, names other than the protocol's), which
    readers ignore."""
    line: dict = {}
    for name, v in (("samples", samples), ("epoch", epoch), ("time", time_s)):
        if v is None:
            continue
        if not _finite_nonneg(v):
            raise ValueError(f"report: {name}: {v!r} must be finite and non-negative")
        line[name] = v
    if step is not None:
        if isinstance(step, bool) or int(step) != step or step < 0:
            raise ValueError(f"report: step: {step!r} must be a non-negative integer")
        line["step"] = int(step)
    if metrics:
        m = {}
        for k, v in metrics.items():
            v = float(v)
            m[str(k)] = v if math.isfinite(v) else None
        line["metrics"] = m
    if checkpoint:
        line["checkpoint"] = str(checkpoint)
    for k, v in (extra or {}).items():
        if k in _REPORT_MEMBERS:
            raise ValueError(f"report: extra member {k!r} is a protocol member; pass it by its own argument")
        line[str(k)] = v
    data = (json.dumps(line, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
    if len(data) - 1 > MAX_REPORT_LINE:
        raise ValueError(f"report: {len(data) - 1} bytes, more than {MAX_REPORT_LINE}")
    return data


class Reporter:
    """Appends report lines to the report file, one os.write per line on a
    descriptor opened with O_APPEND, so readers never see half a line.
    Thread-safe. fsync=True syncs after every line."""

    def __init__(self, path: Optional[str] = None, fsync: bool = False, clock: Callable[[], float] = time.time):
        if path is None:
            path = (os.environ.get(ENV_REPORT_FILE) or "").strip()
            if not path:
                raise EnvError(f"{ENV_REPORT_FILE}: not set; the trial launcher sets it (see docs/protocol.md)")
        self.path = path
        self.fsync = fsync
        self._clock = clock
        self._lock = threading.Lock()
        self._fd: Optional[int] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def report(
        self,
        samples: Optional[float] = None,
        step: Optional[int] = None,
        epoch: Optional[float] = None,
        metrics: Optional[Mapping[str, float]] = None,
        checkpoint: Optional[str] = None,
        time_s: Optional[float] = None,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """Append one line. Pass checkpoint only once save_checkpoint has
        returned its path; extra adds members of your own (see
        encode_report)."""
        if time_s is None and self._clock is not None:
            time_s = self._clock()
        data = encode_report(samples, step, epoch, metrics, checkpoint, time_s, extra)
        with self._lock:
            if self._fd is None:
                raise ValueError(f"report to {self.path}: reporter closed")
            n = os.write(self._fd, data)
            if n != len(data):  # not expected for regular files
                raise OSError(f"report to {self.path}: short write {n} of {len(data)} bytes")
            if self.fsync:
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> "Reporter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def save_checkpoint(name: str, write_fn: Callable[[BinaryIO], Any], directory: Optional[str] = None) -> str:
    """Write a checkpoint atomically and return its absolute path.

    write_fn gets a binary file in the checkpoint directory (default
    GLEANER_CHECKPOINT_DIR); the file is flushed, fsynced and renamed onto
    directory/name, so the name only ever holds a complete checkpoint.
    Report the path only after this returns."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"checkpoint name {name!r}: must be a plain file name not starting with a dot")
    if directory is None:
        directory = (os.environ.get(ENV_CHECKPOINT_DIR) or "").strip()
        if not directory:
            raise EnvError(f"{ENV_CHECKPOINT_DIR}: not set; the trial launcher sets it (see docs/protocol.md)")
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        final = os.path.join(directory, name)
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename durable; not every filesystem can
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return final


def load_checkpoint(path: str, read_fn: Callable[[BinaryIO], Any]) -> Any:
    """Open the checkpoint at path (GLEANER_RESUME_FROM) for reading and
    return what read_fn makes of it, as Go's ``trial.LoadCheckpoint``:
    ``state = gt.load_checkpoint(env.resume_from, json.load)``."""
    with open(path, "rb") as f:
        return read_fn(f)


def checkpoint_name(step: int, ext: str = "") -> str:
    """A checkpoint file name whose lexical order is step order."""
    return f"step-{int(step):012d}{ext}"


def prune_checkpoints(pattern: str, keep: int, directory: Optional[str] = None) -> None:
    """Remove all but the keep lexically greatest files matching pattern
    (fnmatch syntax). Call only after the newest checkpoint was reported."""
    if keep < 1:
        raise ValueError(f"prune checkpoints: keep {keep} must be at least 1")
    if directory is None:
        directory = os.environ.get(ENV_CHECKPOINT_DIR, "")
    names = sorted(n for n in os.listdir(directory) if fnmatch.fnmatch(n, pattern) and not n.startswith("."))
    for n in names[: max(0, len(names) - keep)]:
        try:
            os.unlink(os.path.join(directory, n))
        except FileNotFoundError:
            pass


_stop = threading.Event()
_installed = False


def install_stop_handler() -> threading.Event:
    """Make SIGTERM (Gleaner's stop request, sent to the process group) and
    SIGINT set a flag instead of killing the process. Call it from the main
    thread before training; returns the Event that stopping() reads."""
    global _installed
    if not _installed:
        handler = lambda signum, frame: _stop.set()  # noqa: E731
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        _installed = True
    return _stop


def stopping() -> bool:
    """True once a stop signal arrived: checkpoint, report it, exit 0.
    Installs the handler on first use when called from the main thread.
    Go's ``trial.StopRequested()``; also named stop_requested."""
    if not _installed and threading.current_thread() is threading.main_thread():
        install_stop_handler()
    return _stop.is_set()


stop_requested = stopping
