"""The package installs with nothing from a package index: pip builds it
with the in-tree backend (_build/backend.py) into a fresh virtual
environment with PIP_NO_INDEX=1 and no other source of packages."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import venv

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(PROJECT, "_build"))
import backend  # noqa: E402


def offline_env() -> dict:
    """The environment with every package source but the given path removed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


class OfflineInstallTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="sluice-install-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        # A fresh environment without pip of its own: this interpreter's pip
        # installs into it (--python), which saves seeding one per test.
        venv.create(os.path.join(self.dir, "venv"), with_pip=False)
        self.python = os.path.join(self.dir, "venv", "bin", "python")

    def pip_install(self, *args: str) -> None:
        r = subprocess.run([sys.executable, "-m", "pip", "--python", self.python, "install", *args], env=offline_env(),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, "pip install %s:\n%s%s" % (" ".join(args), r.stdout, r.stderr))

    def imported_from(self) -> str:
        """Where the environment imports sluice from, run outside the tree."""
        code = "import sluice, os; assert sluice.__version__ == %r; print(os.path.dirname(sluice.__file__))" % (
            backend.read_project()["version"])
        r = subprocess.run([self.python, "-c", code], cwd=self.dir, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_install_from_the_tree(self) -> None:
        self.pip_install(PROJECT)
        where = self.imported_from()
        self.assertTrue(where.startswith(os.path.join(self.dir, "venv")), where)
        for fn in ["py.typed", "client.py", "worker.py", "budget.py", "errors.py", "_http.py"]:
            self.assertTrue(os.path.exists(os.path.join(where, fn)), fn + " not installed")

    def test_install_from_the_sdist(self) -> None:
        sdist = backend.build_sdist(self.dir)
        self.pip_install(os.path.join(self.dir, sdist))
        self.assertTrue(self.imported_from().startswith(os.path.join(self.dir, "venv")))

    def test_editable_install(self) -> None:
        self.pip_install("-e", PROJECT)
        self.assertEqual(self.imported_from(), os.path.join(PROJECT, "sluice"))


class ProjectTableTest(unittest.TestCase):
    def test_the_fallback_reader_agrees_with_tomllib(self) -> None:
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib needs Python 3.11")
        path = os.path.join(PROJECT, "pyproject.toml")
        with open(path, "rb") as f:
            want = tomllib.load(f)["project"]
        with open(path, encoding="utf-8") as f:
            self.assertEqual(backend._parse_project(f.read()), want)


if __name__ == "__main__":
    unittest.main()
