"""A threaded worker for the server's worker protocol.

It long-polls leases, runs each job on a thread of its pool, heartbeats
every third of the lease, ends each job with its token (complete, fail or
requeue) and, when stopped (or on SIGTERM), stops leasing, lets running
jobs finish for drain_timeout seconds and gives back those still running.
With a prefetch, it holds leased jobs beyond its concurrency, waiting for a
handler slot; those still waiting when it stops go back at once.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import uuid
import re
from datetime import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ._http import seg
from .client import Sluice
from .errors import AuthError, ConflictError, InvalidError, NotFoundError, SluiceError, UnavailableError

log = logging.getLogger("sluice.worker")


class Snooze(Exception):
    """Raise to give the job back without spending its attempt, to run after delay_ms."""

    def __init__(self, delay_ms: int) -> None:
        super().__init__(f"sluice: snoozed for {delay_ms}ms")
        self.delay_ms = delay_ms


class JobFailure(Exception):
    """Raise to fail the attempt: permanently, or to retry after retry_in_ms."""

    def __init__(self, message: str, permanent: bool = False, retry_in_ms: Optional[int] = None) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.retry_in_ms = retry_in_ms


def permanent(err: Union[BaseException, str]) -> JobFailure:
    """Wrap an error so the job fails for good, without retries."""
    f = JobFailure(str(err), permanent=True)
    if isinstance(err, BaseException):
        f.__cause__ = err
    return f


class JobContext:
    """What a handler gets besides the payload."""

    def __init__(self, worker: "Worker", lease: Mapping[str, Any]) -> None:
        self.job: Dict[str, Any] = dict(lease["job"])
        self.token: str = lease["token"]
        #: Set when the job is cancelled, its lease is lost, or the worker gives it back.
        self.cancelled = threading.Event()
        #: Why cancelled was set: "cancelled", "lease-lost" or "shutdown".
        self.cause: Optional[str] = None
        self._worker = worker
        self._lock = threading.Lock()
        # With a prefetch, the event its wait for a handler slot sleeps on.
        self._wake: Optional[threading.Event] = None
        # What the handler reported using of its budgets (report_usage).
        self._usage: Dict[str, Dict[str, int]] = {}

    @property
    def id(self) -> str:
        return str(self.job["id"])

    def progress(self, percent: float, data: Any = None) -> None:
        """Report progress (0..100 and any JSON); a no-op on a server without it."""
        self._worker._progress(self, percent, data)

    def report_usage(self, usage: Mapping[str, Mapping[str, int]]) -> None:
        """Report what the job really used of the budgets it claimed, by budget
        and unit (``{"openai": {"tokens": 3000}}``); reports add up. Sent with
        the job's complete or fail, so the server settles the job's budgets
        with it: the difference from the estimate is charged or refunded."""
        with self._lock:
            for budget, cost in usage.items():
                into = self._usage.setdefault(budget, {})
                for unit, n in cost.items():
                    into[unit] = into.get(unit, 0) + int(n)

    def _usage_body(self, body: Dict[str, Any]) -> Dict[str, Any]:
        with self._lock:
            if self._usage:
                body["usage"] = {b: dict(c) for b, c in self._usage.items()}
        return body

    def _abort(self, cause: str) -> None:
        with self._lock:
            if self.cause is None:
                self.cause = cause
                self.cancelled.set()
        if self._wake is not None:
            self._wake.set()  # a job waiting for a slot must not start now


Handler = Callable[[Any, JobContext], Any]


class _Ticket:
    """A prefetched job's place in line for a handler slot. Its event is
    set when the slot is granted (granted is then true), and also to wake
    the waiting job when it is cancelled or the worker stops."""

    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.granted = False

    def grant(self) -> None:
        self.granted = True
        self.event.set()


class _SlotQueue:
    """Hands the handler slots to prefetched jobs in the order they were
    leased, which is the server's order: a job leased first starts first."""

    def __init__(self, slots: int) -> None:
        self._mu = threading.Lock()
        self._free = slots
        self._wait: List[_Ticket] = []

    def enter(self) -> _Ticket:
        """Queue for a slot. Calls must be made in lease order."""
        ticket = _Ticket()
        with self._mu:
            if self._free > 0 and not self._wait:
                self._free -= 1
                ticket.grant()
            else:
                self._wait.append(ticket)
        return ticket

    def release(self) -> None:
        """Free a granted slot: the longest waiter gets it."""
        with self._mu:
            if self._wait:
                self._wait.pop(0).grant()
            else:
                self._free += 1

    def leave(self, ticket: _Ticket) -> None:
        """Withdraw a ticket that will not run; a slot granted to it passes on."""
        with self._mu:
            if ticket in self._wait:
                self._wait.remove(ticket)
                return
        self.release()

    def wake_all(self) -> None:
        """Wake every waiting job (the worker stops). Takes no lock: stop()
        may run in a signal handler, on the thread that holds it; copying
        the list is one step under the GIL, and a job that queues after
        the copy sees the worker stopping before it waits."""
        for ticket in list(self._wait):
            ticket.event.set()


class Worker:
    """Runs jobs of the given kinds from the given queues.

    A handler's return value completes the job; Snooze requeues it; any other
    exception fails the attempt (retried while attempts remain unless a
    permanent JobFailure). A cancelled job's ctx.cancelled is set and it ends
    cancelled whatever the handler does; a job whose lease was lost is
    dropped. It runs up to concurrency handlers at once, and holds up to
    prefetch more leased jobs waiting for a slot (see prefetch below).
    """

    def __init__(
        self,
        client: Union[Sluice, str],
        queues: Sequence[str],
        handlers: Mapping[str, Handler],
        concurrency: int = 10,
        worker_id: Optional[str] = None,
        lease_ms: Optional[int] = None,
        poll_ms: int = 1000,
        drain_timeout: float = 30.0,
        lease_cooldown_ms: int = 0,
        prefetch: int = 0,
    ) -> None:
        if not queues:
            raise ValueError("sluice: worker: queues must name at least one queue")
        if concurrency < 1:
            raise ValueError(f"sluice: worker: concurrency must be at least 1, got {concurrency}")
        if lease_cooldown_ms < 0:
            raise ValueError(f"sluice: worker: lease_cooldown_ms must not be negative, got {lease_cooldown_ms}")
        if prefetch < 0:
            raise ValueError(f"sluice: worker: prefetch must not be negative, got {prefetch}")
        self.client = client if isinstance(client, Sluice) else Sluice(client)
        self.queues = list(queues)
        self.handlers = dict(handlers)
        self.concurrency = concurrency
        self.id = worker_id or f"py-{uuid.uuid4()}"
        self.lease_ms = lease_ms
        self.poll_ms = min(poll_ms, 60_000)
        self.drain_timeout = drain_timeout
        # After a lease that brought fewer jobs than asked, wait until this
        # long has passed since it began before leasing again: the jobs that
        # arrive meanwhile come in one call (the Go worker's LeaseCooldown).
        self.lease_cooldown_ms = lease_cooldown_ms
        # How many leased jobs beyond concurrency the worker may hold,
        # waiting for a handler slot. Default 0, none: it leases only for
        # free slots. With short jobs the next ones are then already in hand
        # when slots free, and the lease overlaps the work instead of
        # following it. A waiting job is held: its lease is renewed as a
        # running job's is, it counts against its tenant's limit in the
        # server, and no other worker can take it, so keep this small when
        # jobs are long. A waiting job that is cancelled ends cancelled and
        # one whose lease is lost is dropped, neither having run; jobs still
        # waiting when the worker stops are given back at once (attempt not
        # spent). While busy, the worker leases again once half the prefetch
        # (rounded up) is free, not for each job that ends: fewer, larger
        # leases, and the rest of the prefetch keeps the slots fed. The Go
        # worker's Prefetch.
        self.prefetch = prefetch
        self._lease_at = max(1, (prefetch + 1) // 2)
        self._stop = threading.Event()
        # Jobs held: running, waiting for a handler slot, or being ended.
        self._slots = threading.BoundedSemaphore(concurrency + prefetch)
        # Handler slots, only with a prefetch (without, every held job has one).
        self._handler_slots = _SlotQueue(concurrency) if prefetch > 0 else None
        self._running: Dict[str, JobContext] = {}
        self._mu = threading.Lock()
        self._idle = threading.Condition(self._mu)
        self._progress_missing = False
        self._thread: Optional[threading.Thread] = None
        self._fatal: Optional[SluiceError] = None

    @property
    def stopping(self) -> threading.Event:
        """Set once stop() was called (or SIGTERM/SIGINT arrived)."""
        return self._stop

    @property
    def active(self) -> int:
        """Jobs held now: running, or (with a prefetch) leased and waiting for a slot."""
        with self._mu:
            return len(self._running)

    def stop(self) -> None:
        """Stop leasing; run() returns once running jobs finished or were given back."""
        self._stop.set()
        if self._handler_slots is not None:
            self._handler_slots.wake_all()  # prefetched jobs go back at once

    @property
    def error(self) -> Optional[SluiceError]:
        """Why the worker stopped on its own, if it did."""
        return self._fatal

    def start(self) -> None:
        """Run in a background thread (see join and error)."""

        def target() -> None:
            try:
                self.run(handle_signals=False)
            except SluiceError:
                pass  # kept in self.error

        self._thread = threading.Thread(target=target, name=f"sluice-worker-{self.id}", daemon=True)
        self._thread.start()

    def join(self, timeout: Optional[float] = None) -> None:
        if self._thread:
            self._thread.join(timeout)

    def run(self, handle_signals: bool = True) -> None:
        """Lease and run jobs until stop() or, from the main thread, SIGTERM/SIGINT.

        Raises, after draining, when leasing can never work (AuthError: the
        token; InvalidError: the queue names); transient faults are logged
        and retried with back-off. With start(), the error is kept in
        `error` instead.
        """
        restore = self._on_signals() if handle_signals else (lambda: None)
        try:
            self._loop()
            self._drain()
        finally:
            restore()
        if self._fatal is not None:
            raise self._fatal

    def _on_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        for s in old:
            signal.signal(s, lambda _sig, _frame: self.stop())

        def restore() -> None:
            for s, h in old.items():
                signal.signal(s, h)

        return restore

    def _loop(self) -> None:
        backoff = 0.1
        last: Optional[float] = None  # when the last lease that brought fewer than asked began
        while not self._stop.is_set():
            if self.lease_cooldown_ms > 0 and last is not None:
                wait = last + self.lease_cooldown_ms / 1000 - time.monotonic()
                if wait > 0 and self._stop.wait(wait):
                    break
                last = None
            free = 0
            while free < self._lease_at and not self._stop.is_set():
                if self._slots.acquire(timeout=0.2):
                    free += 1
            if self._stop.is_set():  # stopped while waiting for places
                for _ in range(free):
                    self._slots.release()
                break
            while free < 100 and self._slots.acquire(blocking=False):
                free += 1
            try:
                began = time.monotonic()
                leases = self._lease(free)
                last = began if len(leases) < free else None
                backoff = 0.1
            except SluiceError as e:
                for _ in range(free):
                    self._slots.release()
                if isinstance(e, (AuthError, InvalidError)):
                    # A bad token or queue name never heals: stop, and run() raises.
                    self._fatal = e
                    self.stop()
                    return
                log.warning("sluice: worker: lease: %s", e)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            for _ in range(free - len(leases)):
                self._slots.release()
            for lease in leases:
                if self._stop.is_set():
                    self._give_back(lease)  # leased as we stopped
                    self._slots.release()
                    continue
                ctx = JobContext(self, lease)
                with self._mu:
                    self._running[ctx.id] = ctx
                ticket = self._handler_slots.enter() if self._handler_slots else None  # here, in lease order
                if ticket is not None:
                    ctx._wake = ticket.event
                # Daemon threads: a handler that ignores its cancelled event
                # after being given back must not keep the process alive.
                threading.Thread(target=self._execute, args=(ctx, ticket), name=f"sluice-job-{ctx.id}", daemon=True).start()

    def _lease(self, max_jobs: int) -> List[Dict[str, Any]]:
        body: Dict[str, Any] = {"queues": self.queues, "worker_id": self.id, "max": max_jobs, "wait_ms": self.poll_ms}
        if self.lease_ms:
            body["lease_ms"] = self.lease_ms
        out = self.client.transport.request("POST", "/v1/worker/lease", body=body, timeout=self.poll_ms / 1000 + 30)[2]
        return list(out.get("leases") or [])

    def _execute(self, ctx: JobContext, ticket: Optional[_Ticket]) -> None:
        done = threading.Event()
        # The heartbeat renews the lease while the job waits for a slot, too.
        beat = threading.Thread(target=self._heartbeat, args=(ctx, done), daemon=True)
        beat.start()
        try:
            if ticket is not None and not self._await_slot(ctx, ticket):
                done.set()
                if self._stop.is_set():
                    ctx._abort("shutdown")  # it never started: back at once
                if ctx.cause == "shutdown":
                    self._give_back({"job": ctx.job, "token": ctx.token})
                else:  # cancelled or lost while it waited
                    self._finish(ctx, ("err", RuntimeError(f"sluice: job {ctx.id}: {ctx.cause}")))
                return
            handler = self.handlers.get(str(ctx.job.get("kind")))
            try:
                if handler is None:
                    raise JobFailure(f"sluice: worker: no handler for kind {ctx.job.get('kind')!r}")
                outcome: Any = ("ok", handler(ctx.job.get("payload"), ctx))
            except BaseException as e:  # noqa: B902 - a handler's failure, whatever it is, fails the job
                outcome = ("err", e)
            finally:
                done.set()
                if ticket is not None and self._handler_slots is not None:
                    self._handler_slots.release()  # the next job starts while this one's end is written
            self._finish(ctx, outcome)
        finally:
            with self._mu:
                self._running.pop(ctx.id, None)
                self._idle.notify_all()
            self._slots.release()

    def _await_slot(self, ctx: JobContext, ticket: _Ticket) -> bool:
        """Wait for the job's handler slot. False, the slot left, when the job
        must not start: cancelled or its lease lost while it waited, or the
        worker stopped. The ticket's event wakes it for each of these."""
        # The stop is read after the ticket was queued: a stop() whose
        # wake_all came before that is seen here, one after it wakes us.
        while not (ticket.granted or ctx.cancelled.is_set() or self._stop.is_set()):
            ticket.event.wait()
        if ctx.cancelled.is_set() or self._stop.is_set():
            if self._handler_slots is not None:
                self._handler_slots.leave(ticket)
            return False
        return True

    def _finish(self, ctx: JobContext, outcome: Any) -> None:
        if ctx.cause in ("lease-lost", "shutdown"):
            return  # no longer ours
        kind, value = outcome
        path = f"/v1/worker/jobs/{seg(ctx.id)}"
        if ctx.cause == "cancelled":
            self._settle(path + "/fail", {"token": ctx.token, "error": "cancelled", "permanent": True})
        elif kind == "ok":
            self._settle(path + "/complete", ctx._usage_body({"token": ctx.token, "result": value}))
        elif isinstance(value, Snooze):
            self._settle(path + "/requeue", {"token": ctx.token, "delay_ms": max(0, int(value.delay_ms))})
        else:
            body: Dict[str, Any] = {"token": ctx.token, "error": str(value) or type(value).__name__}
            if isinstance(value, JobFailure):
                body["permanent"] = value.permanent
                if value.retry_in_ms is not None:
                    body["retry_in_ms"] = value.retry_in_ms
            self._settle(path + "/fail", ctx._usage_body(body))

    def _settle(self, path: str, body: Dict[str, Any]) -> None:
        # A finished job must not run again for a blip: retry while the
        # server is unreachable or unavailable.
        pause = 0.1
        for attempt in range(9):
            try:
                self.client.transport.request("POST", path, body=body)
                return
            except ConflictError:
                return  # the lease is gone: the job is not ours
            except UnavailableError as e:
                if attempt == 8:
                    log.error("sluice: worker: %s: %s", path, e)
                    return
                time.sleep(pause)
                pause = min(pause * 2, 2.0)
            except SluiceError as e:
                log.error("sluice: worker: %s: %s", path, e)
                return

    def _interval(self, lease_until: Optional[str]) -> float:
        left = (self.lease_ms or 30_000) / 1000
        until = parse_time(lease_until)
        if until is not None:
            left = until - time.time()
        return max(0.05, left / 3)

    def _heartbeat(self, ctx: JobContext, done: threading.Event) -> None:
        interval = self._interval(ctx.job.get("lease_until"))
        while not done.wait(interval):
            body: Dict[str, Any] = {"token": ctx.token}
            if self.lease_ms:
                body["lease_ms"] = self.lease_ms
            try:
                r = self.client.transport.request("POST", f"/v1/worker/jobs/{seg(ctx.id)}/heartbeat", body=body)[2]
                if r.get("cancel_requested"):
                    ctx._abort("cancelled")
                interval = self._interval(r.get("lease_until"))
            except (ConflictError, NotFoundError):
                ctx._abort("lease-lost")
                return
            except SluiceError as e:
                log.warning("sluice: worker: heartbeat %s: %s", ctx.id, e)

    def _progress(self, ctx: JobContext, percent: float, data: Any) -> None:
        if self._progress_missing or ctx.cause:
            return
        try:
            self.client.transport.request("POST", f"/v1/worker/jobs/{seg(ctx.id)}/progress", body={"token": ctx.token, "percent": percent, "data": data})
        except NotFoundError as e:
            if e.detail.startswith("no route"):
                with self._mu:
                    first, self._progress_missing = not self._progress_missing, True
                if first:
                    log.warning("sluice: worker: this server does not take progress reports; progress() is a no-op")
                return
            log.warning("sluice: worker: progress %s: %s", ctx.id, e)
        except ConflictError:
            ctx._abort("lease-lost")
        except SluiceError as e:
            log.warning("sluice: worker: progress %s: %s", ctx.id, e)

    def _drain(self) -> None:
        deadline = time.monotonic() + self.drain_timeout
        with self._mu:
            while self._running and time.monotonic() < deadline:
                self._idle.wait(max(0.0, deadline - time.monotonic()))
            left = list(self._running.values())
        for ctx in left:
            ctx._abort("shutdown")
            self._give_back({"job": ctx.job, "token": ctx.token})

    def _give_back(self, lease: Mapping[str, Any]) -> None:
        self._settle(f"/v1/worker/jobs/{seg(str(lease['job']['id']))}/requeue", {"token": lease["token"], "delay_ms": 0})


_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def parse_time(s: Optional[str]) -> Optional[float]:
    """An RFC 3339 time as the server writes it (up to nanoseconds) as a Unix time.

    Python before 3.11 reads at most microseconds and no "Z", hence the trim.
    """
    m = _RFC3339.match(s or "")
    if not m:
        return None
    frac = (m.group(2) or ".0")[:7]
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(m.group(1) + frac.ljust(7, "0") + zone).timestamp()
