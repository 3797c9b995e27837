"""Starts a real `sluice serve` for the tests: built from this repository
(or SLUICE_BIN), on a free loopback port, its SQLite job store in a temp dir."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CONFIG = os.path.join(REPO, "clients", "testdata", "sluice-test.yaml")
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..")))

_built: Optional[str] = None


def sluice_bin() -> str:
    """The server binary, built once per test run unless SLUICE_BIN names one."""
    global _built
    if os.environ.get("SLUICE_BIN"):
        return os.environ["SLUICE_BIN"]
    if _built is None:
        out = os.path.join(tempfile.mkdtemp(prefix="sluice-bin-"), "sluice")
        subprocess.run(["go", "build", "-o", out, "./cmd/sluice"], cwd=REPO, check=True)
        _built = out
    return _built


class Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="sluice-py-")
        self.proc = subprocess.Popen(
            [sluice_bin(), "serve", "--config", CONFIG, "--listen", "127.0.0.1:0", "--data-dir", self.dir],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        found: dict = {}
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                m = re.search(r"listening on (http://\S+)", line)
                if m and "url" not in found:
                    found["url"] = m.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or "url" not in found:
            self.stop()
            raise RuntimeError("sluice did not start")
        self.url: str = found["url"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def eventually(cond: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll cond until truthy, or fail after the deadline."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
