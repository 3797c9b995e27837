"""Invoices through the server's queue: the Go examples/queue program in Python.

A producer enqueues invoices (one per tenant's unique key, and one again as
a duplicate); a threaded worker renders them: ACME-3 fails its first
attempt (a flaky PDF service) and is retried, BROKEN can never be rendered
and fails for good. Then it prints what happened to each.

    python examples/invoices.py --sluice http://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import sys
from typing import List, TextIO

from sluice import JobContext, JobFailure, Sluice, Worker, permanent

INVOICES = ["ACME-1", "ACME-2", "ACME-3", "GLOBEX-1", "BROKEN"]


def produce(sluice: Sluice, queue: str, out: TextIO) -> List[str]:
    ids = []
    for i, inv in enumerate(INVOICES):
        job = sluice.jobs.enqueue(queue, "render-invoice", inv, tenant=inv.split("-")[0], priority=i % 2,
                                  max_attempts=3, unique_key=f"{queue}:invoice:{inv}")["job"]
        ids.append(job["id"])
    dup = sluice.jobs.enqueue(queue, "render-invoice", "ACME-1", unique_key=f"{queue}:invoice:ACME-1")
    print(f"enqueued {len(ids)} invoices; enqueuing ACME-1 again: duplicate={dup['duplicate']} (job {dup['job']['id']})", file=out)
    return ids


def render(inv: str, ctx: JobContext) -> str:
    if inv == "BROKEN":
        raise permanent("invoice has no lines")
    if inv == "ACME-3" and ctx.job["attempt"] == 1:
        raise JobFailure("pdf service timed out", retry_in_ms=10)
    return f"{inv.lower()}.pdf"


def run(sluice: Sluice, queue: str = "billing", out: TextIO = sys.stdout) -> List[str]:
    ids = produce(sluice, queue, out)
    worker = Worker(sluice, [queue], {"render-invoice": render}, concurrency=4, poll_ms=200)
    worker.start()
    try:
        jobs = [sluice.jobs.wait(i, timeout=60) for i in ids]
    finally:
        worker.stop()
        worker.join(60)
    for j in jobs:
        line = f"{j['payload']:<8} {j['state']:<9} after {j['attempt']} attempt(s)"
        if j.get("result") is not None:
            line += f" -> {j['result']}"
        if j.get("last_error"):
            line += f" (last error: {j['last_error']})"
        print(line, file=out)
    return [j["state"] for j in jobs]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Invoices through the server's queue.")
    ap.add_argument("--sluice", default="http://127.0.0.1:8080")
    run(Sluice(ap.parse_args().sluice))
