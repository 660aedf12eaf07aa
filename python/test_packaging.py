"""`pip install ./python` works offline: a pyproject.toml, no dependencies,
built with the setuptools the interpreter already has."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def _builder():
    """An interpreter that can build the package without downloading
    anything: pip, setuptools >= 61 and wheel (or setuptools >= 70.1, which
    builds wheels itself). This one first, then Debian's python3."""
    probe = (
        "import setuptools, pip; v = tuple(int(x) for x in setuptools.__version__.split('.')[:2]); "
        "assert v >= (61, 0)\n"
        "if v < (70, 1): import wheel"
    )
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py):
            if subprocess.run([py, "-c", probe], capture_output=True).returncode == 0:
                return py
    return None


class PackagingTest(unittest.TestCase):
    def test_pip_install_offline(self):
        py = _builder()
        if py is None:
            self.skipTest("no interpreter with pip, setuptools >= 61 and wheel (apt-get install python3-pip python3-setuptools python3-wheel)")
        with tempfile.TemporaryDirectory() as tmp:
            # A copy, so the build leaves nothing in the checkout.
            src = os.path.join(tmp, "src")
            shutil.copytree(HERE, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            target = os.path.join(tmp, "site")
            out = subprocess.run(
                [py, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                 "--disable-pip-version-check", "--target", target, src],
                capture_output=True, text=True,
            )
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            for name in ("gleaner_trial.py", "gleaner_torch.py"):
                self.assertTrue(os.path.exists(os.path.join(target, name)), name)
            self.assertFalse([n for n in os.listdir(target) if n.startswith("test_")], "tests are not installed")
            # The installed module, not this directory's, imports and works.
            code = "import gleaner_trial as gt, sys; print(gt.__file__); print(gt.checkpoint_name(7, '.pt'))"
            env = dict(os.environ, PYTHONPATH=target, PYTHONDONTWRITEBYTECODE="1")
            run = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(run.returncode, 0, run.stderr)
            where, name = run.stdout.split()
            self.assertEqual(os.path.dirname(where), target)
            self.assertEqual(name, "step-000000000007.pt")


if __name__ == "__main__":
    unittest.main()
