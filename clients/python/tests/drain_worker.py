"""A worker process for the SIGTERM drain test: its handlers hold every job
until the process gets SIGTERM, so the jobs complete only if the worker
drains instead of dropping them."""

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sluice import Worker  # noqa: E402

url, queue = sys.argv[1], sys.argv[2]
worker = Worker(url, [queue], concurrency=4, poll_ms=200, handlers={})


# print() writes the text and its newline apart, so lines from handler threads
# could interleave; one locked write per line keeps them whole.
out = threading.Lock()


def say(line: str) -> None:
    with out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def hold(payload: object, ctx: object) -> object:
    say(f"started {payload}")
    worker.stopping.wait()  # set by the worker's own SIGTERM handler
    return {"held": payload}


worker.handlers["hold"] = hold
worker.run(handle_signals=True)
say("drained")
