import collections
import logging
import os
import subprocess
import sys
import threading
import time
import unittest

from harness import HERE, Server, eventually, unique

from sluice import InvalidError, JobFailure, Sluice, Snooze, Worker, permanent
from sluice.worker import JobContext, parse_time

srv: Server


class Gate:
    """A handler whose jobs run until released, one release each. It records
    the handlers running now, the most ever at once, and the jobs whose
    handlers started, in order."""

    def __init__(self) -> None:
        self.mu = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list = []
        self.held: list = []  # a release event per running handler, oldest first
        self.closed = False

    def __call__(self, payload, ctx):
        release = threading.Event()
        with self.mu:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(ctx.id)
            self.held.append(release)
            if self.closed:
                release.set()
        try:
            while not release.wait(0.05):
                if ctx.cancelled.is_set():
                    raise RuntimeError(ctx.cause)
            return "released"
        finally:
            with self.mu:
                self.running -= 1

    def release(self) -> None:
        with self.mu:
            self.held.pop(0).set()

    def waiting(self) -> int:
        """Handlers running and not released yet."""
        with self.mu:
            return len(self.held)

    def close(self) -> None:
        """Release every handler, now and later."""
        with self.mu:
            self.closed = True
            for e in self.held:
                e.set()


def setUpModule() -> None:
    global srv
    srv = Server()


def tearDownModule() -> None:
    srv.stop()


class WorkerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sluice = Sluice(srv.url)
        self.addCleanup(self.sluice.close)

    def run_worker(self, w: Worker) -> None:
        w.start()
        self.addCleanup(lambda: (w.stop(), w.join(60)))

    def run_gated(self, w: Worker, g: Gate) -> threading.Thread:
        """Run w in a thread; at cleanup, stop it and release its handlers."""
        t = threading.Thread(target=w.run, kwargs={"handle_signals": False}, daemon=True)
        t.start()
        self.addCleanup(lambda: (w.stop(), g.close(), t.join(60)))
        return t

    def by_state(self, ids):
        """The jobs' ids grouped by state."""
        out: dict = {}
        for i in ids:
            out.setdefault(self.sluice.jobs.get(i)["state"], []).append(i)
        return out

    def test_prefetch_holds_jobs_for_slots(self) -> None:
        q = unique("prefetch")
        ids = [e["job"]["id"] for e in self.sluice.jobs.batch([{"queue": q, "kind": "hold", "payload": n} for n in range(5)])]
        g = Gate()
        w = Worker(self.sluice, [q], {"hold": g}, concurrency=1, prefetch=2, poll_ms=200)
        self.run_gated(w, g)

        def held():
            s = self.by_state(ids)
            return g.running == 1 and w.active == 3 and len(s.get("active", [])) == 3 and len(s.get("pending", [])) == 2

        eventually(held, timeout=30, what="1 handler running and 3 jobs active")
        for n in range(5):
            eventually(lambda: g.waiting() == 1, timeout=30, what=f"handler {n + 1} running")
            self.assertLessEqual(len(self.by_state(ids)["active"]), 3, "more than concurrency + prefetch jobs active")
            g.release()
        for i in ids:
            self.assertEqual(self.sluice.jobs.wait(i, timeout=30)["state"], "completed")
        self.assertEqual(g.most, 1, "handlers running at once")
        self.assertEqual(sorted(g.started), sorted(ids))

    def test_prefetch_leases_half_at_once(self) -> None:
        q = unique("prefetch-half")
        ids = [e["job"]["id"] for e in self.sluice.jobs.batch([{"queue": q, "kind": "hold", "payload": n} for n in range(10)])]
        g = Gate()
        w = Worker(self.sluice, [q], {"hold": g}, concurrency=1, prefetch=4, poll_ms=200)
        asked = []
        lease = w._lease

        def counted(n: int):
            asked.append(n)
            return lease(n)

        w._lease = counted  # type: ignore[method-assign]
        self.run_gated(w, g)
        for n in range(10):
            eventually(lambda: g.waiting() == 1, timeout=30, what=f"handler {n + 1} running")
            g.release()
        for i in ids:
            self.assertEqual(self.sluice.jobs.wait(i, timeout=30)["state"], "completed")
        self.assertEqual(asked[0], 5, f"leases asked for {asked}; want 5 first")
        self.assertTrue(all(n >= 2 for n in asked), f"leases asked for {asked}; want none for fewer than half the prefetch (2)")

    def test_prefetched_lease_is_renewed_while_waiting(self) -> None:
        q = unique("prefetch-renew")
        ids = [e["job"]["id"] for e in self.sluice.jobs.batch([{"queue": q, "kind": "hold"}, {"queue": q, "kind": "hold"}])]
        g = Gate()
        w = Worker(self.sluice, [q], {"hold": g}, concurrency=1, prefetch=1, lease_ms=4500, poll_ms=200)
        self.run_gated(w, g)
        eventually(lambda: len(g.started) == 1 and len(self.by_state(ids).get("active", [])) == 2, timeout=30, what="one job running and one waiting")
        waiting = next(i for i in ids if i not in g.started)
        first = self.sluice.jobs.get(waiting)
        until = parse_time(first["lease_until"])
        assert until is not None

        def deadline(j) -> float:
            return parse_time(j.get("lease_until")) or 0.0

        def outlived():
            j = self.sluice.jobs.get(waiting)
            return time.time() > until and j["state"] == "active" and deadline(j) > until

        # Heartbeats come every third of the lease: wait for one to move the
        # waiting job's deadline, and then for the job to outlive its first one.
        eventually(lambda: deadline(self.sluice.jobs.get(waiting)) > until, timeout=30, what="the waiting job's lease renewed")

        eventually(outlived, timeout=30, what="the waiting job held past its first deadline")
        j = self.sluice.jobs.get(waiting)
        self.assertEqual(j["worker_id"], w.id)
        self.assertEqual(j["attempt"], first["attempt"], "the same attempt")
        self.assertEqual(j.get("stalls", 0), 0, "its lease never lapsed")
        self.assertEqual(g.started, [i for i in ids if i != waiting], "the waiting job did not start")
        g.release()
        eventually(lambda: g.waiting() == 1, timeout=30, what="the waiting job started")
        g.release()
        for i in ids:
            self.assertEqual(self.sluice.jobs.wait(i, timeout=30)["state"], "completed")

    def test_stop_gives_prefetched_jobs_back_at_once(self) -> None:
        q = unique("prefetch-stop")
        ids = [e["job"]["id"] for e in self.sluice.jobs.batch([{"queue": q, "kind": "hold", "payload": n} for n in range(4)])]
        g = Gate()
        # The drain is far longer than the waits below: the waiting jobs
        # must go back without waiting for it.
        w = Worker(self.sluice, [q], {"hold": g}, concurrency=1, prefetch=2, poll_ms=200, drain_timeout=300)
        running = self.run_gated(w, g)
        eventually(lambda: g.running == 1 and len(self.by_state(ids).get("active", [])) == 3, timeout=30, what="1 handler running and 3 jobs active")
        started = g.started[0]
        waiting = [i for i in self.by_state(ids)["active"] if i != started]
        self.assertEqual(len(waiting), 2)
        w.stop()
        eventually(lambda: len(self.by_state(waiting).get("pending", [])) == 2, timeout=30, what="the waiting jobs back to pending")
        self.assertEqual(g.running, 1, "the running job still runs")
        self.assertEqual(self.sluice.jobs.get(started)["state"], "active")
        g.release()
        running.join(60)
        self.assertFalse(running.is_alive(), "run() did not return")
        self.assertEqual(self.sluice.jobs.get(started)["state"], "completed")
        self.assertEqual(g.started, [started], "a waiting job started")
        for i in waiting:
            j = self.sluice.jobs.get(i)
            self.assertEqual((j["state"], j["attempt"]), ("pending", 0), "giving a waiting job back does not spend its attempt")

    def test_prefetched_job_cancelled_while_waiting(self) -> None:
        q = unique("prefetch-cancel")
        ids = [e["job"]["id"] for e in self.sluice.jobs.batch([{"queue": q, "kind": "hold"}, {"queue": q, "kind": "hold"}])]
        g = Gate()
        self.run_gated(Worker(self.sluice, [q], {"hold": g}, concurrency=1, prefetch=1, lease_ms=4500, poll_ms=200), g)
        eventually(lambda: len(g.started) == 1 and len(self.by_state(ids).get("active", [])) == 2, timeout=30, what="one job running and one waiting")
        waiting = next(i for i in ids if i not in g.started)
        self.assertTrue(self.sluice.jobs.cancel(waiting)["cancel_requested"])
        # The next heartbeat (a third of the lease) reads the request.
        self.assertEqual(self.sluice.jobs.wait(waiting, timeout=30)["state"], "cancelled")
        g.release()
        other = next(i for i in ids if i != waiting)
        self.assertEqual(self.sluice.jobs.wait(other, timeout=30)["state"], "completed")
        self.assertEqual(g.started, [other], "the cancelled job's handler ran")

    def test_prefetch_must_not_be_negative(self) -> None:
        with self.assertRaisesRegex(ValueError, "prefetch must not be negative, got -1"):
            Worker(self.sluice, ["q"], {}, prefetch=-1)

    def test_drains_1000_jobs_exactly_once(self) -> None:
        q = unique("bulk")
        ids = []
        for i in range(0, 1000, 500):
            ids += [e["job"]["id"] for e in self.sluice.jobs.batch([{"queue": q, "kind": "n", "payload": i + k, "tenant": f"t{k % 7}"} for k in range(500)])]
        runs: "collections.Counter[str]" = collections.Counter()
        mu = threading.Lock()

        def n(payload, ctx):
            with mu:
                runs[ctx.id] += 1
            return payload * 2

        workers = [Worker(self.sluice, [q], {"n": n}, concurrency=16, poll_ms=200) for _ in range(2)]
        for w in workers:
            w.start()

        def completed():
            row = [r for r in self.sluice.jobs.stats()["queues"] if r["queue"] == q]
            return row and row[0]["counts"].get("completed") == 1000

        eventually(completed, timeout=90, what="1000 completed")
        for w in workers:
            w.stop()
        for w in workers:
            w.join(60)
        self.assertEqual(len(runs), 1000)
        self.assertEqual([k for k, v in runs.items() if v != 1], [], "a job ran more than once")
        self.assertEqual(set(ids), set(runs))
        j = self.sluice.jobs.get(ids[123])
        self.assertEqual((j["state"], j["result"]), ("completed", 246))

    def test_fail_retry_snooze_permanent(self) -> None:
        q = unique("q")
        calls = collections.Counter()

        def flaky(p, ctx):
            calls["flaky"] += 1
            if calls["flaky"] == 1:
                raise RuntimeError("upstream 502")
            return "ok"

        def sleepy(p, ctx):
            calls["sleepy"] += 1
            if calls["sleepy"] == 1:
                raise Snooze(50)
            return "woke"

        def broken(p, ctx):
            raise permanent(ValueError("bad payload"))

        def later(p, ctx):
            calls["later"] += 1
            if calls["later"] == 1:
                raise JobFailure("try again soon", retry_in_ms=10)
            return "fine"

        self.run_worker(Worker(self.sluice, [q], {"flaky": flaky, "sleepy": sleepy, "broken": broken, "later": later}, poll_ms=100))
        a, b, c, d = self.sluice.jobs.batch([{"queue": q, "kind": k, "max_attempts": 3} for k in ("flaky", "sleepy", "broken", "later")])
        ja = self.sluice.jobs.wait(a["job"]["id"], timeout=30)
        self.assertEqual(ja["state"], "completed")
        self.assertEqual(ja["errors"][0]["error"], "upstream 502")
        jb = self.sluice.jobs.wait(b["job"]["id"], timeout=30)
        self.assertEqual((jb["state"], jb["result"], calls["sleepy"]), ("completed", "woke", 2))
        jc = self.sluice.jobs.wait(c["job"]["id"], timeout=30)
        self.assertEqual((jc["state"], jc["attempt"]), ("failed", 1))
        self.assertEqual(self.sluice.jobs.wait(d["job"]["id"], timeout=30)["result"], "fine")

    def test_cancellation_sets_the_event(self) -> None:
        q = unique("q")
        started = threading.Event()
        causes = []

        def long(p, ctx):
            started.set()
            if not ctx.cancelled.wait(30):
                return "not cancelled"
            causes.append(ctx.cause)
            raise RuntimeError("stopped")

        self.run_worker(Worker(self.sluice, [q], {"long": long}, lease_ms=1500, poll_ms=100))
        job = self.sluice.jobs.enqueue(q, "long")["job"]
        self.assertTrue(started.wait(30))
        self.assertTrue(self.sluice.jobs.cancel(job["id"])["cancel_requested"])
        self.assertEqual(self.sluice.jobs.wait(job["id"], timeout=20)["state"], "cancelled")
        self.assertEqual(causes, ["cancelled"])

    def test_progress_is_warned_once_when_missing(self) -> None:
        q = unique("q")

        def p(payload, ctx):
            ctx.progress(10, {"step": 1})
            ctx.progress(90)
            return "ok"

        with self.assertLogs("sluice.worker", logging.WARNING) as logs:
            logging.getLogger("sluice.worker").warning("marker")
            self.run_worker(Worker(self.sluice, [q], {"p": p}, poll_ms=100))
            for e in self.sluice.jobs.batch([{"queue": q, "kind": "p"}, {"queue": q, "kind": "p"}]):
                self.assertEqual(self.sluice.jobs.wait(e["job"]["id"], timeout=20)["state"], "completed")
        others = [m for m in logs.output if "marker" not in m]
        self.assertLessEqual(len([m for m in others if "does not take progress" in m]), 1, others)
        # A progress call that failed otherwise would be logged as "progress <id>".
        self.assertEqual([m for m in others if "progress " in m and "does not take progress" not in m], [])

    def test_reported_usage_settles_the_budget(self) -> None:
        # Queue budgeted-py claims 1,000 tokens of llm-py (sluice-test.yaml).
        def u(payload, ctx):
            ctx.report_usage({"llm-py": {"tokens": 1000}})
            ctx.report_usage({"llm-py": {"tokens": 2000}})
            return "ok"

        self.run_worker(Worker(self.sluice, ["budgeted-py"], {"u": u}, poll_ms=100))
        job = self.sluice.jobs.enqueue("budgeted-py", "u")["job"]
        self.assertEqual(self.sluice.jobs.wait(job["id"], timeout=20)["state"], "completed")
        st = self.sluice.transport.request("GET", "/v1/budgets/llm-py")[2]
        tokens = [l for l in st["limits"] if l["limit"] == "tokens" and l["scope"] == "total"][0]
        self.assertTrue(2990 <= tokens["used"] <= 3000, st)

    def test_lease_cooldown_gathers_jobs(self) -> None:
        q = unique("cool")
        a = self.sluice.jobs.enqueue(q, "k")
        # The cooldown runs from the first lease: long enough for the two
        # enqueues below on any machine, short enough for the test.
        w = Worker(self.sluice, [q], {"k": lambda payload, ctx: "ok"}, poll_ms=200, lease_cooldown_ms=5000)
        got = []  # jobs per lease call that brought any
        lease = w._lease

        def counting(max_jobs):
            out = lease(max_jobs)
            if out:
                got.append(len(out))
            return out

        w._lease = counting
        self.run_worker(w)
        self.assertEqual(self.sluice.jobs.wait(a["job"]["id"], timeout=30)["state"], "completed")
        b = self.sluice.jobs.enqueue(q, "k")
        c = self.sluice.jobs.enqueue(q, "k")
        for e in (b, c):
            self.assertEqual(self.sluice.jobs.wait(e["job"]["id"], timeout=30)["state"], "completed")
        self.assertEqual(got, [1, 2])

    def test_lease_cooldown_must_not_be_negative(self) -> None:
        with self.assertRaisesRegex(ValueError, "lease_cooldown_ms"):
            Worker(self.sluice, ["q"], {}, lease_cooldown_ms=-1)

    def test_drain_timeout_gives_jobs_back(self) -> None:
        q = unique("q")
        started = threading.Event()

        def stuck(p, ctx):
            started.set()
            ctx.cancelled.wait(30)
            raise RuntimeError(ctx.cause)

        w = Worker(self.sluice, [q], {"stuck": stuck}, poll_ms=100, drain_timeout=0.1)
        w.start()
        job = self.sluice.jobs.enqueue(q, "stuck")["job"]
        self.assertTrue(started.wait(30))
        w.stop()
        w.join(30)
        back = self.sluice.jobs.get(job["id"])
        self.assertEqual((back["state"], back["attempt"]), ("pending", 0))

    def test_sigterm_drains(self) -> None:
        q = unique("drain")
        first = self.sluice.jobs.batch([{"queue": q, "kind": "hold", "payload": n} for n in range(4)])
        child = subprocess.Popen([sys.executable, os.path.join(HERE, "drain_worker.py"), srv.url, q], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: child.poll() is None and child.kill())
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(iter(child.stdout.readline, "")), daemon=True)
        reader.start()
        eventually(lambda: sum(1 for l in lines if l.startswith("started")) == 4, timeout=90, what="4 jobs started")
        later = self.sluice.jobs.batch([{"queue": q, "kind": "hold", "payload": n} for n in (5, 6)])
        child.terminate()
        self.assertEqual(child.wait(60), 0)
        reader.join(10)
        child.stdout.close()
        self.assertIn("drained\n", lines)
        for e in first:
            self.assertEqual(self.sluice.jobs.get(e["job"]["id"])["state"], "completed")
        for e in later:
            self.assertEqual(self.sluice.jobs.get(e["job"]["id"])["state"], "pending")

    def test_a_lease_that_can_never_work_raises(self) -> None:
        w = Worker(self.sluice, [" "], {})
        with self.assertRaises(InvalidError) as cm:
            w.run(handle_signals=False)
        self.assertIn("queues", cm.exception.detail)
        w2 = Worker(self.sluice, [" "], {})
        w2.start()
        w2.join(30)
        self.assertIsInstance(w2.error, InvalidError)


if __name__ == "__main__":
    unittest.main()


class SlotWaitTest(unittest.TestCase):
    """A prefetched job waiting for a handler slot sleeps until something
    wakes it (its grant, its cancellation, the worker's stop) rather than
    polling. No server: the wait is the worker's own."""

    def waiting_job(self, w: Worker):
        """A job queued behind one that holds the only slot, with its wait
        running on a thread; the wait's timeouts are recorded."""
        held = w._handler_slots.enter()
        self.assertTrue(held.granted)
        ctx = JobContext(w, {"job": {"id": "1"}, "token": "t"})
        ticket = w._handler_slots.enter()
        ctx._wake = ticket.event
        waits: list = []
        real = ticket.event.wait

        def wait(timeout=None):
            waits.append(timeout)
            return real(timeout)

        ticket.event.wait = wait  # type: ignore[method-assign]
        got: list = []
        t = threading.Thread(target=lambda: got.append(w._await_slot(ctx, ticket)), daemon=True)
        t.start()
        eventually(lambda: waits, timeout=30, what="the job waiting for its slot")
        return ctx, t, got, waits

    def settled(self, t: threading.Thread, got: list, waits: list, want: bool) -> None:
        t.join(30)
        self.assertFalse(t.is_alive(), "the waiting job was not woken")
        self.assertEqual(got, [want])
        self.assertEqual(set(waits), {None}, "the wait polled with a timeout")

    def test_grant_wakes_it(self) -> None:
        w = Worker("http://127.0.0.1:1", ["q"], {}, concurrency=1, prefetch=1)
        _, t, got, waits = self.waiting_job(w)
        w._handler_slots.release()
        self.settled(t, got, waits, True)

    def test_cancel_wakes_it_and_the_slot_passes_on(self) -> None:
        w = Worker("http://127.0.0.1:1", ["q"], {}, concurrency=1, prefetch=1)
        ctx, t, got, waits = self.waiting_job(w)
        ctx._abort("cancelled")
        self.settled(t, got, waits, False)
        w._handler_slots.release()
        self.assertTrue(w._handler_slots.enter().granted, "the slot went to the job that left")

    def test_stop_wakes_it(self) -> None:
        w = Worker("http://127.0.0.1:1", ["q"], {}, concurrency=1, prefetch=1)
        _, t, got, waits = self.waiting_job(w)
        w.stop()
        self.settled(t, got, waits, False)
