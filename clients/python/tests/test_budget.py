import http.server
import json
import os
import sys
import threading
import unittest
import urllib.parse

from harness import HERE, Server, unique

from sluice import SharedBudget, Sluice, UnavailableError, budgeted

sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import price_sweep  # noqa: E402

srv: Server


def setUpModule() -> None:
    global srv
    srv = Server()


def tearDownModule() -> None:
    srv.stop()


class SharedBudgetTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sluice = Sluice(srv.url)
        self.addCleanup(self.sluice.close)

    def test_one_budget_for_every_holder(self) -> None:
        # Two budgets with one name stand for two processes: the policy
        # (2 calls a minute) is spent by both together.
        subject = {"upstream": unique("api")}
        a = SharedBudget(self.sluice, "upstream", "tiny", subject)
        other = Sluice(srv.url)
        self.addCleanup(other.close)
        b = SharedBudget(other, "upstream", "tiny", subject)
        self.assertTrue(a.try_take())
        self.assertTrue(b.try_take())
        self.assertFalse(a.try_take())
        with self.assertRaises(TimeoutError):
            b.wait(timeout=0.2)

    def test_decorator_takes_before_each_call(self) -> None:
        subject = {"upstream": unique("api")}
        calls = []

        @budgeted(self.sluice, "upstream", "tiny", subject, timeout=5)
        def fetch(x: int) -> int:
            calls.append(x)
            return x * 10

        self.assertEqual(fetch(1), 10)
        self.assertEqual(fetch(2), 20)
        self.assertEqual(fetch.__name__, "fetch")
        d = self.sluice.limits.peek("upstream", "tiny", subject)
        self.assertEqual(d["limits"][0]["remaining"], 0)
        # The next token is 30s away, past the timeout: the call never runs.
        with self.assertRaises(TimeoutError):
            fetch(3)
        self.assertEqual(calls, [1, 2])

    def test_waits_out_a_short_window(self) -> None:
        # 20 a second, starting full: the 21st..30th calls wait for refills.
        budget = SharedBudget(self.sluice, "upstream", "flights", {"upstream": unique("api")})
        for _ in range(30):
            budget.wait(timeout=30)
        self.assertFalse(budget.try_take(20), "the budget is spent, not 30 fresh calls")

    def test_unreachable(self) -> None:
        dead = Sluice("http://127.0.0.1:1", timeout=2)
        self.addCleanup(dead.close)
        with self.assertRaises(UnavailableError):
            SharedBudget(dead, "upstream", "tiny", {"upstream": "x"}).wait()
        SharedBudget(dead, "upstream", "tiny", {"upstream": "x"}, unreachable="open").wait()


class Upstream(http.server.ThreadingHTTPServer):
    daemon_threads = True
    hits = 0
    fail_from = 10**9


class UpstreamHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        srv: Upstream = self.server  # type: ignore[assignment]
        srv.hits += 1
        date = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)["date"][0]
        day = int(date[-2:])
        if day >= srv.fail_from:
            self.send_response(503)
            self.end_headers()
            return
        body = json.dumps({"price": 100 + day}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class PriceSweepExampleTest(unittest.TestCase):
    def setUp(self) -> None:
        self.up = Upstream(("127.0.0.1", 0), UpstreamHandler)
        threading.Thread(target=self.up.serve_forever, daemon=True).start()
        self.addCleanup(self.up.server_close)
        self.addCleanup(self.up.shutdown)
        self.upstream = f"http://127.0.0.1:{self.up.server_address[1]}"
        self.sluice = Sluice(srv.url)
        self.addCleanup(self.sluice.close)

    def test_sweep_through_the_shared_budget(self) -> None:
        dates = [f"2026-06-{d:02d}" for d in range(1, 25)]
        search = price_sweep.make_search(self.sluice, self.upstream)
        found = price_sweep.sweep(search, dates)
        self.assertEqual(found, {d: 100.0 + int(d[-2:]) for d in dates})
        self.assertEqual(self.up.hits, 24)
        # Every call took from the server's budget.
        left = self.sluice.limits.peek("upstream", "flights", {"upstream": "google-flights"})["limits"][0]
        self.assertLess(left["remaining"], 20)

    def test_breaker_stops_after_consecutive_failures(self) -> None:
        self.up.fail_from = 5
        dates = [f"2026-07-{d:02d}" for d in range(1, 31)]
        found = price_sweep.sweep(price_sweep.make_search(self.sluice, self.upstream), dates, workers=1, max_failures=3)
        self.assertEqual([found[d] for d in dates[:4]], [101.0, 102.0, 103.0, 104.0])
        self.assertEqual(self.up.hits, 7, "three failures in a row stop the sweep")
        self.assertEqual(sum(1 for d in dates if d not in found), 23)


if __name__ == "__main__":
    unittest.main()
