"""Tests of gleaner_trial; run with `python3 -m unittest discover -s python`."""

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gleaner_trial as gt  # noqa: E402


class Fixture(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name
        self.addCleanup(self._tmp.cleanup)

    def environ(self, params='{"lr": 0.01, "batch": "64", "fast": "true"}', hosts="a\n\n b \n", nodes="2"):
        pf = os.path.join(self.dir, "params.json")
        hf = os.path.join(self.dir, "hostfile")
        with open(pf, "w") as f:
            f.write(params)
        with open(hf, "w") as f:
            f.write(hosts)
        return {
            gt.ENV_TRIAL_ID: "t-7",
            gt.ENV_CAMPAIGN_ID: "c-1",
            gt.ENV_PARAMS_FILE: pf,
            gt.ENV_NODES: nodes,
            gt.ENV_HOSTFILE: hf,
            gt.ENV_CHECKPOINT_DIR: os.path.join(self.dir, "ckpt"),
            gt.ENV_RESUME_FROM: "",
            gt.ENV_REPORT_FILE: os.path.join(self.dir, "reports.jsonl"),
        }


class EnvTest(Fixture):
    def test_env(self):
        e = gt.env(self.environ())
        self.assertEqual(e.trial_id, "t-7")
        self.assertEqual(e.campaign_id, "c-1")
        self.assertEqual(e.nodes, 2)
        self.assertEqual(e.hosts, ["a", "b"])
        self.assertFalse(e.resuming())
        self.assertEqual(e.params, {"lr": 0.01, "batch": "64", "fast": "true"})
        p = gt.params(self.environ())
        self.assertEqual(gt.number(p, "batch", 32), 64.0)
        self.assertEqual(gt.number(p, "steps", 100), 100)
        self.assertTrue(gt.flag(p, "fast"))
        self.assertFalse(gt.flag(p, "slow"))
        with self.assertRaisesRegex(gt.EnvError, "GLEANER_PARAMS_FILE.*'lr2'"):
            gt.number({"lr2": "x"}, "lr2", 1)
        with self.assertRaises(gt.EnvError):
            gt.flag({"f": "maybe"}, "f")

    def test_resuming_is_a_method_as_in_go(self):
        m = self.environ()
        ckpt = os.path.join(self.dir, "step-000000000005.json")
        with open(ckpt, "w") as f:
            f.write('{"step": 5}')
        m[gt.ENV_RESUME_FROM] = ckpt
        e = gt.load_env(m)
        self.assertIs(e.resuming(), True)
        self.assertIs(gt.env(self.environ()).resuming(), False)
        self.assertEqual(gt.load_checkpoint(e.resume_from, json.load), {"step": 5})
        # The property it was: still true or false, with a deprecation.
        with self.assertWarnsRegex(DeprecationWarning, r"call env\.resuming\(\)"):
            self.assertTrue(e.resuming)
        with self.assertWarns(DeprecationWarning):
            self.assertFalse(gt.env(self.environ()).resuming)

    def test_env_reporter_and_save_checkpoint(self):
        e = gt.load_env(self.environ())
        path = e.save_checkpoint(gt.checkpoint_name(3, ".json"), lambda f: f.write(b'{"step": 3}'))
        self.assertEqual(path, os.path.join(self.dir, "ckpt", "step-000000000003.json"))
        with e.reporter() as rep:
            rep.report(step=3, checkpoint=path)
        with open(e.report_file) as f:
            line = json.loads(f.read())
        self.assertEqual((line["step"], line["checkpoint"]), (3, path))
        self.assertIs(gt.stop_requested, gt.stopping)

    def test_errors_name_the_variable(self):
        cases = [
            (lambda m: m.pop(gt.ENV_PARAMS_FILE), gt.ENV_PARAMS_FILE),
            (lambda m: m.__setitem__(gt.ENV_PARAMS_FILE, m[gt.ENV_PARAMS_FILE] + ".nope"), gt.ENV_PARAMS_FILE),
            (lambda m: m.__setitem__(gt.ENV_REPORT_FILE, " "), gt.ENV_REPORT_FILE),
            (lambda m: m.pop(gt.ENV_CHECKPOINT_DIR), gt.ENV_CHECKPOINT_DIR),
            (lambda m: m.pop(gt.ENV_NODES), gt.ENV_NODES),
            (lambda m: m.__setitem__(gt.ENV_NODES, "0"), gt.ENV_NODES),
            (lambda m: m.__setitem__(gt.ENV_NODES, "two"), gt.ENV_NODES),
            (lambda m: m.__setitem__(gt.ENV_NODES, "3"), gt.ENV_HOSTFILE),
            (lambda m: m.__setitem__(gt.ENV_HOSTFILE, "/nonexistent/hosts"), gt.ENV_HOSTFILE),
            (lambda m: m.__setitem__(gt.ENV_RESUME_FROM, "/nonexistent/ckpt"), gt.ENV_RESUME_FROM),
        ]
        for change, var in cases:
            m = self.environ()
            change(m)
            with self.subTest(var=var), self.assertRaisesRegex(gt.EnvError, var):
                gt.env(m)
        for body in ("[1]", "null", '{"lr":', ""):
            with self.subTest(params=body), self.assertRaisesRegex(gt.EnvError, gt.ENV_PARAMS_FILE):
                gt.env(self.environ(params=body))

    def test_budget(self):
        cases = [
            ("", "", 0.0, ""),
            (" ", gt.BUDGET_SAMPLES, 0.0, ""),  # a unit without a budget is ignored
            ("64000", gt.BUDGET_SAMPLES, 64000.0, gt.BUDGET_SAMPLES),
            (" 1e5 ", " steps ", 1e5, gt.BUDGET_STEPS),
            ("2.5", gt.BUDGET_EPOCHS, 2.5, gt.BUDGET_EPOCHS),
            (".5", gt.BUDGET_EPOCHS, 0.5, gt.BUDGET_EPOCHS),
            ("+3.", gt.BUDGET_STEPS, 3.0, gt.BUDGET_STEPS),
        ]
        for budget, unit, want, want_unit in cases:
            m = self.environ()
            m[gt.ENV_BUDGET], m[gt.ENV_BUDGET_UNIT] = budget, unit
            with self.subTest(budget=budget, unit=unit):
                e = gt.env(m)
                self.assertEqual((e.budget, e.budget_unit), (want, want_unit))
        e = gt.env(self.environ())  # neither variable set
        self.assertEqual((e.budget, e.budget_unit), (0.0, ""))
        self.assertFalse(e.budget_reached(1e18, 1 << 62, 1e9))

    def test_budget_errors_name_the_variable(self):
        cases = [
            ("0", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("-5", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("1e400", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("inf", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("NaN", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("0x10", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("1_000", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("lots", gt.BUDGET_SAMPLES, gt.ENV_BUDGET),
            ("100", "", gt.ENV_BUDGET_UNIT),
            ("100", " ", gt.ENV_BUDGET_UNIT),
            ("100", "tokens", gt.ENV_BUDGET_UNIT),
            ("100", "Samples", gt.ENV_BUDGET_UNIT),
        ]
        for budget, unit, var in cases:
            m = self.environ()
            m[gt.ENV_BUDGET], m[gt.ENV_BUDGET_UNIT] = budget, unit
            with self.subTest(budget=budget, unit=unit), self.assertRaisesRegex(gt.EnvError, "^" + var + ":"):
                gt.env(m)

    def test_budget_reached(self):
        def at(budget, unit):
            m = self.environ()
            m[gt.ENV_BUDGET], m[gt.ENV_BUDGET_UNIT] = budget, unit
            return gt.env(m)

        cases = [
            (at("6400", "samples"), (6336, 99, 5), False),
            (at("6400", "samples"), (6400, 100, 0), True),
            (at("6400", "samples"), (6464, 0, 0), True),
            (at("100", "steps"), (1e9, 99, 1e9), False),
            (at("100", "steps"), (0, 100, 0), True),
            (at("99.5", "steps"), (0, 100, 0), True),
            (at("2", "epochs"), (1e9, 10**9, 1.99), False),
            (at("2", "epochs"), (0, 0, 2), True),
            (at("0.1", "epochs"), (0, 0, 240 / 2400), True),
        ]
        for e, counters, want in cases:
            with self.subTest(budget=e.budget, unit=e.budget_unit, counters=counters):
                self.assertEqual(e.budget_reached(*counters), want)


class ReporterTest(Fixture):
    def read(self, path):
        with open(path) as f:
            return [json.loads(line) for line in f]

    def test_null_for_non_finite(self):
        path = os.path.join(self.dir, "r.jsonl")
        with gt.Reporter(path, fsync=True, clock=lambda: 1700000000.5) as r:
            r.report(samples=64, step=1, epoch=0.5, metrics={"loss": math.nan, "acc": 0.5, "g": math.inf})
            r.report(samples=128, step=2, checkpoint="/ck/step-2", time_s=42)
        with open(path) as f:
            raw = f.read()
        self.assertNotIn("NaN", raw)
        self.assertNotIn("Infinity", raw)
        self.assertEqual(
            self.read(path),
            [
                {"samples": 64, "step": 1, "epoch": 0.5, "time": 1700000000.5,
                 "metrics": {"loss": None, "acc": 0.5, "g": None}},
                {"samples": 128, "step": 2, "checkpoint": "/ck/step-2", "time": 42},
            ],
        )

    def test_rejects_bad_progress(self):
        r = gt.Reporter(os.path.join(self.dir, "r"))
        self.addCleanup(r.close)
        for kw in ({"samples": math.nan}, {"samples": -1}, {"step": -1}, {"step": 1.5},
                   {"epoch": math.inf}, {"time_s": -1}):
            with self.subTest(kw=kw), self.assertRaises(ValueError):
                r.report(**kw)
        with self.assertRaises(ValueError):
            r.report(checkpoint="a" * gt.MAX_REPORT_LINE)
        r.close()
        with self.assertRaises(ValueError):
            r.report(step=1)

    def test_default_path_from_env(self):
        path = os.path.join(self.dir, "env.jsonl")
        old = os.environ.get(gt.ENV_REPORT_FILE)
        os.environ[gt.ENV_REPORT_FILE] = path
        try:
            with gt.Reporter() as r:
                r.report(step=3)
        finally:
            if old is None:
                del os.environ[gt.ENV_REPORT_FILE]
            else:
                os.environ[gt.ENV_REPORT_FILE] = old
        self.assertEqual(self.read(path)[0]["step"], 3)

    def test_concurrent_appends_stay_whole(self):
        path = os.path.join(self.dir, "r.jsonl")
        a, b = gt.Reporter(path), gt.Reporter(path)

        def write(r, base):
            for i in range(100):
                r.report(step=base + i, metrics={"loss": 1.0 / (i + 1)})

        ts = [threading.Thread(target=write, args=(r, k * 1000)) for k, r in enumerate((a, b, a))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        a.close()
        b.close()
        self.assertEqual(len(self.read(path)), 300)


class CheckpointTest(Fixture):
    def test_atomic(self):
        d = os.path.join(self.dir, "ck", "nested")
        path = gt.save_checkpoint("step-1.bin", lambda f: f.write(b"first"), directory=d)
        self.assertEqual(path, os.path.join(os.path.abspath(d), "step-1.bin"))

        def boom(f):
            f.write(b"half")
            raise RuntimeError("disk on fire")

        with self.assertRaisesRegex(RuntimeError, "disk on fire"):
            gt.save_checkpoint("step-1.bin", boom, directory=d)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"first")
        self.assertEqual(os.listdir(d), ["step-1.bin"])

    def test_bad_names(self):
        for name in ("", ".", "..", "a/b", "a\\b", ".hidden"):
            with self.subTest(name=name), self.assertRaises(ValueError):
                gt.save_checkpoint(name, lambda f: None, directory=self.dir)

    def test_prune(self):
        for step in (5, 100, 20, 1000):
            gt.save_checkpoint(gt.checkpoint_name(step, ".pt"), lambda f: f.write(b"x"), directory=self.dir)
        open(os.path.join(self.dir, "notes.txt"), "w").close()
        gt.prune_checkpoints("step-*.pt", 2, directory=self.dir)
        self.assertEqual(
            sorted(os.listdir(self.dir)),
            ["notes.txt", gt.checkpoint_name(100, ".pt"), gt.checkpoint_name(1000, ".pt")],
        )
        with self.assertRaises(ValueError):
            gt.prune_checkpoints("*", 0, directory=self.dir)


class StoppingTest(unittest.TestCase):
    def test_sigterm_sets_flag_in_a_real_process(self):
        # A child process, so the handler does not outlive the test.
        here = os.path.dirname(os.path.abspath(__file__))
        code = textwrap.dedent(
            """
            import sys, time
            sys.path.insert(0, sys.argv[1])
            import gleaner_trial as gt
            assert not gt.stopping()
            print("ready", flush=True)
            deadline = time.time() + 10
            while not gt.stopping():
                if time.time() > deadline:
                    sys.exit(2)
                time.sleep(0.01)
            print("stopped", flush=True)
            """
        )
        p = subprocess.Popen([sys.executable, "-c", code, here], stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=15)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(out.strip(), "stopped")


if __name__ == "__main__":
    unittest.main()
