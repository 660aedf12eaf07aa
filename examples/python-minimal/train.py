"""A complete minimal Gleaner trainer in Python (docs/write-a-trainer.md).

Logistic regression on a synthetic two-class problem, trained by minibatch
SGD, standard library only. It does what the trial protocol
(docs/protocol.md) asks of every trainer:

- reads its assignment from the GLEANER_* environment (gleaner_trial);
- resumes from GLEANER_RESUME_FROM when set, continuing its counters;
- reports step, samples and metrics to GLEANER_REPORT_FILE;
- stops at GLEANER_BUDGET when there is one, else after `steps`;
- on SIGTERM, or at the end, writes a checkpoint atomically, reports it and
  exits 0.

The batch of step s depends only on (seed, s), so a resumed run trains
exactly what an uninterrupted one would. Check it with

    gleaner trainer check -- python3 examples/python-minimal/train.py

Parameters: lr (0.5), batch (32), steps (200), seed (1), step_ms (20: a
sleep per step, so a run lasts long enough to be stopped), report_every
(5), checkpoint_every (50).
"""

import json
import math
import os
import random
import sys
import time

# gleaner_trial: `pip install ./python`, or python/ on the path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gleaner_trial as gt  # noqa: E402

FEATURES = 8
TRAIN = 6400  # training examples: an epoch


def example(seed, i):
    """Example i of the data set: features and a label from a fixed teacher."""
    rng = random.Random(seed * 1_000_003 + i)
    x = [rng.gauss(0, 1) for _ in range(FEATURES)]
    teacher = sum((j + 1) * (-1) ** j * v for j, v in enumerate(x))
    return x, 1.0 if teacher + rng.gauss(0, 2) > 0 else 0.0


def loss_and_grad(w, batch):
    """Mean logistic loss of the batch and its gradient (bias last)."""
    grad = [0.0] * (FEATURES + 1)
    loss = 0.0
    for x, y in batch:
        z = sum(wi * xi for wi, xi in zip(w, x)) + w[-1]
        p = 1 / (1 + math.exp(-max(min(z, 30), -30)))
        loss -= y * math.log(p + 1e-12) + (1 - y) * math.log(1 - p + 1e-12)
        for j, xj in enumerate(x):
            grad[j] += (p - y) * xj
        grad[-1] += p - y
    n = len(batch)
    return loss / n, [g / n for g in grad]


def main():
    gt.install_stop_handler()  # SIGTERM sets a flag instead of killing us
    env = gt.load_env()  # errors name the GLEANER_* variable at fault
    p = env.params
    lr = gt.number(p, "lr", 0.5)
    batch = int(gt.number(p, "batch", 32))
    steps = int(gt.number(p, "steps", 200))
    seed = int(gt.number(p, "seed", 1))
    step_ms = gt.number(p, "step_ms", 20)
    report_every = int(gt.number(p, "report_every", 5))
    checkpoint_every = int(gt.number(p, "checkpoint_every", 50))

    # The state a checkpoint holds: weights and the cumulative counters.
    state = {"w": [0.0] * (FEATURES + 1), "step": 0, "samples": 0}
    if env.resuming():
        state = gt.load_checkpoint(env.resume_from, json.load)
    val = [example(seed, -1 - i) for i in range(256)]  # held out: negative indices
    rep = env.reporter()

    def checkpoint(metrics=None):
        data = json.dumps(state).encode()
        path = env.save_checkpoint(gt.checkpoint_name(state["step"], ".json"), lambda f: f.write(data))
        rep.report(samples=state["samples"], step=state["step"], epoch=state["samples"] / TRAIN,
                   metrics=metrics, checkpoint=path)
        gt.prune_checkpoints("step-*.json", keep=2)

    def ended():
        if env.budget > 0:  # the budget, not `steps`, says where this run ends
            return env.budget_reached(state["samples"], state["step"], state["samples"] / TRAIN)
        return state["step"] >= steps

    while not ended() and not gt.stopping():
        s = state["step"]
        data = [example(seed, (s * batch + k) % TRAIN) for k in range(batch)]
        loss, grad = loss_and_grad(state["w"], data)
        state["w"] = [wi - lr * g for wi, g in zip(state["w"], grad)]
        state["step"], state["samples"] = s + 1, state["samples"] + batch
        time.sleep(step_ms / 1000)
        if state["step"] % report_every == 0:
            val_loss, _ = loss_and_grad(state["w"], val)
            rep.report(samples=state["samples"], step=state["step"], epoch=state["samples"] / TRAIN,
                       metrics={"loss": loss, "val_loss": val_loss})
        if state["step"] % checkpoint_every == 0:
            checkpoint()

    # Stopped, at the budget, or done: checkpoint, report, exit 0.
    val_loss, _ = loss_and_grad(state["w"], val)
    checkpoint({"val_loss": val_loss})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gt.EnvError as e:
        print(f"train.py: {e}", file=sys.stderr)
        sys.exit(1)
