import threading
import time
import unittest
from typing import Any, List

from harness import Server, unique

from sluice import (ConflictError, InvalidError, LimitedError, NotFoundError, Sluice,
                    UnavailableError)

srv: Server


def setUpModule() -> None:
    global srv
    srv = Server()


def tearDownModule() -> None:
    srv.stop()


class LimitsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sluice = Sluice(srv.url)
        self.addCleanup(self.sluice.close)

    def test_consume_then_denied_with_headers(self) -> None:
        member = unique("m")
        first = self.sluice.limits.consume("member", "export-usage", {"member": member})
        self.assertTrue(first["allowed"])
        self.assertIn("r=0", first["headers"]["RateLimit"])
        second = self.sluice.limits.consume("member", "export-usage", {"member": member})
        self.assertFalse(second["allowed"])
        self.assertGreater(second["retry_after_ms"], 0)
        self.assertGreaterEqual(int(second["headers"]["Retry-After"]), 1)

    def test_allow_and_assert(self) -> None:
        member = unique("m")
        self.assertTrue(self.sluice.limits.allow("member", "export-usage", {"member": member}))
        self.assertFalse(self.sluice.limits.allow("member", "export-usage", {"member": member}))
        with self.assertRaises(LimitedError) as cm:
            self.sluice.limits.assert_("member", "export-usage", {"member": member})
        self.assertEqual(cm.exception.status, 429)
        self.assertGreaterEqual(cm.exception.retry_after or 0, 1)
        self.assertGreater(cm.exception.retry_after_ms, 0)

    def test_peek_does_not_count(self) -> None:
        member = unique("m")
        for _ in range(3):
            self.assertEqual(self.sluice.limits.peek("member", "chat", {"member": member})["limits"][0]["remaining"], 5)
        self.sluice.limits.consume("member", "chat", {"member": member}, cost=2)
        self.assertEqual(self.sluice.limits.peek("member", "chat", {"member": member})["limits"][0]["remaining"], 3)

    def test_errors(self) -> None:
        with self.assertRaises(NotFoundError):
            self.sluice.limits.consume("nope", "x", {"member": "1"})
        with self.assertRaises(InvalidError) as cm:
            self.sluice.limits.consume("member", "chat", {"team": "1"})
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("team", cm.exception.detail)
        with self.assertRaises(InvalidError) as cm:
            self.sluice.limits.consume("member", "chat", {"member": "1"}, cost=99)
        self.assertEqual(cm.exception.status, 422)

    def test_unreachable(self) -> None:
        dead = Sluice("http://127.0.0.1:1", timeout=2)
        self.addCleanup(dead.close)
        with self.assertRaises(UnavailableError) as cm:
            dead.limits.allow("member", "chat", {"member": "1"})
        self.assertEqual(cm.exception.status, 0)
        self.assertTrue(dead.limits.allow("member", "chat", {"member": "1"}, unreachable="open"))
        self.assertFalse(dead.limits.allow("member", "chat", {"member": "1"}, unreachable="closed"))

    def test_in_flight_leases(self) -> None:
        member = {"member": unique("m")}
        a = self.sluice.limits.acquire("member", "export", member)
        b = self.sluice.limits.acquire("member", "export", member)
        self.assertTrue(a["allowed"] and b["allowed"])
        full = self.sluice.limits.acquire("member", "export", member)
        self.assertFalse(full["allowed"])
        self.assertEqual(full["in_flight"]["held"], 2)
        with self.assertRaises(LimitedError):
            with self.sluice.limits.hold("member", "export", member):
                self.fail("no lease was free")
        self.assertTrue(self.sluice.limits.release("member", "export", member, a["lease"]["id"]))
        self.assertFalse(self.sluice.limits.release("member", "export", member, a["lease"]["id"]))
        with self.sluice.limits.hold("member", "export", member) as held:
            self.assertTrue(held["allowed"])
        self.assertTrue(self.sluice.limits.acquire("member", "export", member)["allowed"], "hold released its lease")

    def test_list(self) -> None:
        names = {s["name"] for s in self.sluice.limits.list()["scenes"]}
        self.assertTrue({"ip", "member", "upstream"} <= names)


class JobsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sluice = Sluice(srv.url)
        self.addCleanup(self.sluice.close)

    def test_enqueue_get_duplicate(self) -> None:
        q, key = unique("q"), unique("k")
        a = self.sluice.jobs.enqueue(q, "email", {"to": "a@example.com"}, tenant="t1", unique_key=key)
        self.assertFalse(a.get("duplicate", False))
        b = self.sluice.jobs.enqueue(q, "email", {"to": "b@example.com"}, unique_key=key)
        self.assertTrue(b["duplicate"])
        self.assertEqual(b["job"]["id"], a["job"]["id"])
        got = self.sluice.jobs.get(a["job"]["id"])
        self.assertEqual(got["payload"], {"to": "a@example.com"})
        self.assertEqual(got["tenant"], "t1")

    def test_bad_input_names_the_field(self) -> None:
        with self.assertRaises(InvalidError) as cm:
            self.sluice.jobs.enqueue(" ", "x")
        self.assertIn("queue", cm.exception.detail)
        with self.assertRaises(NotFoundError):
            self.sluice.jobs.get("no-such-job")

    def test_batch_list_pages(self) -> None:
        q = unique("q")
        out = self.sluice.jobs.batch([{"queue": q, "kind": "odd" if i % 2 else "even", "payload": i} for i in range(25)])
        self.assertEqual(len(out), 25)
        self.assertEqual([j["payload"] for j in self.sluice.jobs.all(queue=q, limit=10)], list(range(25)))
        self.assertEqual(len(self.sluice.jobs.list(queue=q, kind="odd")["jobs"]), 12)
        self.assertEqual(len(self.sluice.jobs.list(queue=q, state=["pending", "active"])["jobs"]), 25)

    def test_cancel_retry_wait(self) -> None:
        q = unique("q")
        job = self.sluice.jobs.enqueue(q, "x")["job"]
        self.assertEqual(self.sluice.jobs.cancel(job["id"])["state"], "cancelled")
        self.assertEqual(self.sluice.jobs.wait(job["id"], timeout=10)["state"], "cancelled")
        self.assertEqual(self.sluice.jobs.retry(job["id"])["state"], "pending")
        with self.assertRaises(TimeoutError):
            self.sluice.jobs.wait(job["id"], timeout=0.1)

    def test_wait_long_polls(self) -> None:
        q = unique("q")
        job = self.sluice.jobs.enqueue(q, "x")["job"]
        gets: List[str] = []
        t = self.sluice.transport
        plain = t.request

        def counting(method: str, path: str, **kw: Any) -> Any:
            if method == "GET":
                gets.append(f"{path}?wait={(kw.get('query') or {}).get('wait', '')}")
            return plain(method, path, **kw)

        t.request = counting  # type: ignore[method-assign]
        self.addCleanup(lambda: setattr(t, "request", plain))
        timer = threading.Timer(1.5, lambda: self.sluice.jobs.cancel(job["id"]))
        timer.start()
        self.addCleanup(timer.cancel)
        started = time.monotonic()
        self.assertEqual(self.sluice.jobs.wait(job["id"], timeout=20)["state"], "cancelled")
        self.assertLess(time.monotonic() - started, 10)
        self.assertEqual(len(gets), 1, gets)
        self.assertRegex(gets[0], r"^/v1/jobs/[^?]+\?wait=\d+ms$")

        gid = unique("g")
        self.sluice.groups.create(gid)
        self.sluice.jobs.enqueue(q, "x", group=gid)
        gets.clear()
        gtimer = threading.Timer(1.5, lambda: self.sluice.groups.cancel(gid))
        gtimer.start()
        self.addCleanup(gtimer.cancel)
        self.assertTrue(self.sluice.groups.wait(gid, timeout=20)["done"])
        self.assertLessEqual(len(gets), 2, gets)
        self.assertRegex(gets[0], r"^/v1/groups/[^?]+\?wait=\d+ms$")

    def test_stats_pause_resume(self) -> None:
        q = unique("q")
        self.sluice.jobs.enqueue(q, "x")
        row = [r for r in self.sluice.jobs.stats()["queues"] if r["queue"] == q][0]
        self.assertEqual(row["counts"]["pending"], 1)
        self.assertTrue(self.sluice.jobs.pause(q, 60_000)["paused"])
        self.assertFalse(self.sluice.jobs.resume(q)["paused"])

    def test_groups(self) -> None:
        gid, q = unique("crawl"), unique("q")
        g = self.sluice.groups.create(gid, tenant="team-1", max_concurrency=2, completion_kind="done", completion_queue=q)
        self.assertEqual(g["id"], gid)
        with self.assertRaises(ConflictError):
            self.sluice.groups.create(gid)
        self.sluice.jobs.batch([{"queue": q, "kind": "page", "group": gid, "payload": n} for n in range(3)])
        self.assertEqual(self.sluice.groups.get(gid)["total"], 3)
        self.assertTrue(self.sluice.groups.cancel(gid)["cancel_requested"])
        done = self.sluice.groups.wait(gid, timeout=10)
        self.assertTrue(done["done"])
        self.assertTrue(done["completion_job_id"])

    def test_tenants(self) -> None:
        t = unique("tenant")
        self.assertEqual(self.sluice.tenants.set(t, limit=3, weight=2)["own"]["limit"], 3)
        self.assertEqual(self.sluice.tenants.set_limit(t, 7)["own"]["limit"], 7)
        self.assertEqual(self.sluice.tenants.get(t)["effective"]["weight"], 2)
        self.assertIn(t, [x["tenant"] for x in self.sluice.tenants.list(limit=1000)["tenants"]])


if __name__ == "__main__":
    unittest.main()
