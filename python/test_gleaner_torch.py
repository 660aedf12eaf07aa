"""Tests of gleaner_torch's torch-free parts; run with
`python3 -m unittest discover -s python`."""

import math
import os
import socket
import subprocess
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gleaner_torch as gtorch  # noqa: E402


class FakeRendezvous:
    def __init__(self, multi_host, master_addr="", master_port=0):
        self.multi_host, self.master_addr, self.master_port = multi_host, master_addr, master_port


class MasterTest(unittest.TestCase):
    def test_multi_host_uses_the_launchers(self):
        self.assertEqual(gtorch.master(FakeRendezvous(True, "10.0.0.1", 29500)), ("10.0.0.1", 29500))

    def test_one_host_loopback_with_given_port(self):
        self.assertEqual(gtorch.master(FakeRendezvous(False, "ignored", 4242)), ("127.0.0.1", 4242))

    def test_one_host_free_port(self):
        addr, port = gtorch.master(FakeRendezvous(False))
        self.assertEqual(addr, "127.0.0.1")
        with socket.socket() as s:  # free: it binds
            s.bind(("127.0.0.1", port))


class MeanLossTest(unittest.TestCase):
    def test_take_means_and_resets(self):
        m = gtorch.MeanLoss()
        self.assertTrue(math.isnan(m.take()))
        m.add(1.0)
        m.add(2.0)
        self.assertEqual(m.take(), 1.5)
        self.assertTrue(math.isnan(m.take()))


class ImportOrReexecTest(unittest.TestCase):
    def test_missing_module_after_reexec_exits_env(self):
        # With the guard set there is no re-exec: the message and EXIT_ENV.
        code = textwrap.dedent(
            """
            import sys
            sys.path.insert(0, sys.argv[1])
            import gleaner_torch as gtorch
            gtorch.import_or_reexec("x.py", ("os", "no_such_module_gleaner"), "no_such_module_gleaner; install it")
            """
        )
        env = dict(os.environ, **{gtorch.REEXEC_GUARD: "1", "PYTHONDONTWRITEBYTECODE": "1"})
        p = subprocess.run(
            [sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__))],
            env=env, capture_output=True, text=True, timeout=60,
        )
        self.assertEqual(p.returncode, gtorch.EXIT_ENV, p.stderr)
        self.assertEqual(p.stderr, f"train.py: {sys.executable} cannot import no_such_module_gleaner; install it\n")

    def test_present_modules_return(self):
        gtorch.import_or_reexec("x.py", ("os", "json"), "unused")


if __name__ == "__main__":
    unittest.main()
