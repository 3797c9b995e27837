"""fli's date sweep through a budget shared by every process.

fli searches one date per request against an upstream that blocks callers
above about 10 requests a second. In one process a token bucket and a
thread pool suffice; once several processes (CLI, MCP server, workers)
sweep at once, the budget must be one for all of them: here the Sluice
server keeps it (scene "upstream", a token-bucket policy), and each search
takes from it before calling. A sweep stops early after a run of
consecutive failures (fli's circuit breaker), returning what it found.

    python examples/price_sweep.py --sluice http://127.0.0.1:8080 --upstream http://127.0.0.1:9000 2026-06-01 14
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Optional

from sluice import SharedBudget, Sluice


def make_search(sluice: Sluice, upstream: str, policy: str = "flights") -> Callable[[str], float]:
    """A search of one date, taking from the shared budget before each call."""
    budget = SharedBudget(sluice, "upstream", policy, {"upstream": "google-flights"}, concurrency=10)

    @budget
    def search(date: str) -> float:
        with urllib.request.urlopen(f"{upstream}/search?date={date}", timeout=10) as r:
            return float(json.load(r)["price"])

    return search


def sweep(search: Callable[[str], float], dates: List[str], workers: int = 10, max_failures: int = 3) -> Dict[str, Optional[float]]:
    """Search every date in parallel; after max_failures failures in a row the rest are skipped."""
    results: Dict[str, Optional[float]] = {}
    failures = 0
    lock = threading.Lock()
    tripped = threading.Event()

    def one(date: str) -> None:
        nonlocal failures
        if tripped.is_set():
            return
        try:
            price: Optional[float] = search(date)
            with lock:
                failures = 0
        except Exception:
            price = None
            with lock:
                failures += 1
                if failures >= max_failures:
                    tripped.set()
        with lock:
            results[date] = price

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, dates))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description="fli's date sweep through a budget shared by every process.")
    ap.add_argument("--sluice", default="http://127.0.0.1:8080")
    ap.add_argument("--upstream", required=True)
    ap.add_argument("start", help="first date, YYYY-MM-DD")
    ap.add_argument("days", type=int)
    args = ap.parse_args()
    first = dt.date.fromisoformat(args.start)
    dates = [(first + dt.timedelta(days=i)).isoformat() for i in range(args.days)]
    found = sweep(make_search(Sluice(args.sluice), args.upstream), dates)
    for d in dates:
        print(d, found.get(d))


if __name__ == "__main__":
    main()
