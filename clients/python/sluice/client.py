"""A client of `sluice serve`: rate limits, jobs, groups and tenants."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, TypeVar, Union

from ._http import Transport, seg
from .errors import LimitedError, SluiceError, UnavailableError

Job = Dict[str, Any]
Decision = Dict[str, Any]
Group = Dict[str, Any]
Tenant = Dict[str, Any]
Subject = Mapping[str, Union[str, int]]

#: The states a job does not leave on its own.
FINISHED_STATES = ("completed", "failed", "cancelled")

_FORWARDED = {"ratelimit": "RateLimit", "ratelimit-policy": "RateLimit-Policy", "retry-after": "Retry-After"}

T = TypeVar("T")


class Limits:
    """The server's configured scenes and policies (sluice.yaml).

    The scene fixes the subject fields, the policy the quotas and windows;
    counting and deciding is one atomic step on the server.
    """

    def __init__(self, t: Transport) -> None:
        self._t = t

    def list(self) -> Dict[str, Any]:
        """The configured scenes and policies."""
        return self._t.request("GET", "/v1/limits")[2]

    def consume(self, scene: str, policy: str, subject: Subject, cost: int = 1) -> Decision:
        """Count `cost` against every limit of the policy, all or nothing.

        Returns the decision whether allowed or not, with the answer's
        RateLimit, RateLimit-Policy and Retry-After fields under "headers".
        Raises UnavailableError when a fail-closed scene's store is down and
        InvalidError for a cost no limit can ever hold (422).
        """
        return self._decide(f"/v1/limits/{seg(scene)}/{seg(policy)}", subject, cost)

    def peek(self, scene: str, policy: str, subject: Subject) -> Decision:
        """Read the counters without counting; always allowed."""
        return self._decide(f"/v1/limits/{seg(scene)}/{seg(policy)}/peek", subject, None)

    def allow(self, scene: str, policy: str, subject: Subject, cost: int = 1, unreachable: str = "raise") -> bool:
        """Consume and say whether the call may go on.

        A fail-closed scene whose store is down answers 503: a denial. When
        the server itself cannot be reached, `unreachable` decides: "open"
        allows, "closed" denies, "raise" (default) raises UnavailableError.
        """
        try:
            return bool(self.consume(scene, policy, subject, cost).get("allowed"))
        except UnavailableError as e:
            if e.status != 0:
                return False
            if unreachable == "open":
                return True
            if unreachable == "closed":
                return False
            raise

    def assert_(self, scene: str, policy: str, subject: Subject, cost: int = 1) -> Decision:
        """Consume, raising LimitedError (429, retry_after, the decision) when denied.

        Named assert_ because assert is a Python keyword.
        """
        d = self.consume(scene, policy, subject, cost)
        if d.get("allowed"):
            return d
        h = d["headers"]
        ra = h.get("Retry-After")
        raise LimitedError(
            429,
            title="Too Many Requests",
            detail=f"over the limit of {scene}/{policy}",
            retry_after=int(ra) if ra else -(-int(d.get("retry_after_ms", 0)) // 1000),
            body={k: v for k, v in d.items() if k != "headers"},
            headers=h,
        )

    def acquire(self, scene: str, policy: str, subject: Subject, cost: int = 1) -> Dict[str, Any]:
        """Take an in-flight lease of a policy with `in_flight` (at most max at once).

        Counts `cost` against the policy's window limits in the same decision.
        Returns the answer: allowed with lease["id"], or not allowed with
        retry_after_ms (429). Release the lease when the work ends.
        """
        path = f"/v1/limits/{seg(scene)}/{seg(policy)}/acquire"
        return self._t.request("POST", path, body={"subject": dict(subject), "cost": cost}, accept=(429,))[2]

    def release(self, scene: str, policy: str, subject: Subject, lease_id: str) -> bool:
        """Free a lease; False when it had expired or was released already."""
        path = f"/v1/limits/{seg(scene)}/{seg(policy)}/release"
        return bool(self._t.request("POST", path, body={"subject": dict(subject), "lease_id": lease_id})[2].get("released"))

    @contextlib.contextmanager
    def hold(self, scene: str, policy: str, subject: Subject, cost: int = 1) -> Iterator[Dict[str, Any]]:
        """Hold an in-flight lease for the with-block; LimitedError when none is free.

        >>> with sluice.limits.hold("member", "export", {"member": "42"}):  # doctest: +SKIP
        ...     export()
        """
        a = self.acquire(scene, policy, subject, cost)
        lease = a.get("lease") or {}
        if not a.get("allowed") or not lease.get("id"):
            raise LimitedError(429, title="Too Many Requests", detail=f"no in-flight lease free in {scene}/{policy}",
                               retry_after=-(-int(a.get("retry_after_ms") or 0) // 1000), body=a)
        try:
            yield a
        finally:
            try:
                self.release(scene, policy, subject, str(lease["id"]))
            except SluiceError:
                pass  # it frees itself after its TTL

    def _decide(self, path: str, subject: Subject, cost: Optional[int]) -> Decision:
        body: Dict[str, Any] = {"subject": dict(subject)}
        if cost is not None:
            body["cost"] = cost
        _, hdrs, d = self._t.request("POST", path, body=body, accept=(429,))
        d = dict(d or {})
        d["headers"] = {name: hdrs[k] for k, name in _FORWARDED.items() if k in hdrs}
        return d


class Jobs:
    """Enqueue and inspect jobs (role producer; retry and pause need admin)."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def enqueue(self, queue: str, kind: str, payload: Any = None, **spec: Any) -> Dict[str, Any]:
        """Store one job. Returns {"job": ..., "duplicate": bool}.

        `spec` takes the other JobSpec fields: tenant, group, priority,
        run_at, delay_ms, max_attempts, timeout_ms, unique_key, unique_for_ms.
        """
        body = dict(spec, queue=queue, kind=kind)
        if payload is not None:
            body["payload"] = payload
        return self._t.request("POST", "/v1/jobs", body=body)[2]

    def batch(self, specs: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """Store up to 1000 jobs, all or nothing."""
        out = self._t.request("POST", "/v1/jobs/batch", body={"jobs": list(specs)})[2]
        return list(out.get("jobs") or [])

    def get(self, id: str) -> Job:
        return self._t.request("GET", f"/v1/jobs/{seg(id)}")[2]

    def cancel(self, id: str) -> Job:
        """A job not started never runs; a running one is asked to stop."""
        return self._t.request("POST", f"/v1/jobs/{seg(id)}/cancel")[2]

    def retry(self, id: str) -> Job:
        """Make a failed or cancelled job ready again (role admin)."""
        return self._t.request("POST", f"/v1/jobs/{seg(id)}/retry")[2]

    def list(self, queue: Optional[str] = None, state: Union[str, Sequence[str], None] = None, tenant: Optional[str] = None,
             kind: Optional[str] = None, group: Optional[str] = None, order: Optional[str] = None,
             limit: Optional[int] = None, cursor: Optional[str] = None) -> Dict[str, Any]:
        """One page: {"jobs": [...], "next": cursor}; keep paging while "next" is set."""
        if state is not None and not isinstance(state, str):
            state = ",".join(state)
        q = {"queue": queue, "state": state, "tenant": tenant, "kind": kind, "group": group, "order": order, "limit": limit, "cursor": cursor}
        return self._t.request("GET", "/v1/jobs", query=q)[2]

    def all(self, **filters: Any) -> Iterator[Job]:
        """Every job matching the filters, page after page."""
        cursor = None
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.get("jobs") or []
            cursor = page.get("next")
            if not cursor:
                return

    def wait(self, id: str, timeout: Optional[float] = None, max_poll: float = 1.0) -> Job:
        """Return the job once it is completed, failed or cancelled (TimeoutError past timeout).

        It long-polls (GET /v1/jobs/{id}?wait=): the server answers as soon as
        the job ends. max_poll bounds the pause between reads only when the
        server answers at once without the result (one that does not long-poll)."""
        def read(wait: float) -> Job:
            return long_poll_get(self._t, f"/v1/jobs/{seg(id)}", wait)
        return long_poll(read, lambda j: j.get("state") in FINISHED_STATES, timeout, max_poll)

    def stats(self) -> Dict[str, Any]:
        """Job counts per queue and state."""
        return self._t.request("GET", "/v1/queues/stats")[2]

    def pause(self, queue: str, duration_ms: int = 0) -> Dict[str, Any]:
        """Stop leasing from a queue for duration_ms (0: until resumed). Admin."""
        body = {"duration_ms": duration_ms} if duration_ms > 0 else {}
        return self._t.request("POST", f"/v1/queues/{seg(queue)}/pause", body=body)[2]

    def resume(self, queue: str) -> Dict[str, Any]:
        return self._t.request("POST", f"/v1/queues/{seg(queue)}/resume")[2]


class Groups:
    """Batches with a life of their own (a crawl): a concurrency cap, a least
    interval between starts, live progress, cancel as a whole, and one
    completion job when every job has finished."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def create(self, id: str, **spec: Any) -> Group:
        """Create a group before enqueuing its jobs. spec: tenant,
        max_concurrency, min_interval_ms, ttl_ms, completion_kind,
        completion_queue, completion_payload."""
        return self._t.request("POST", "/v1/groups", body=dict(spec, id=id))[2]

    def get(self, id: str) -> Group:
        return self._t.request("GET", f"/v1/groups/{seg(id)}")[2]

    def cancel(self, id: str) -> Group:
        return self._t.request("POST", f"/v1/groups/{seg(id)}/cancel")[2]

    def wait(self, id: str, timeout: Optional[float] = None, max_poll: float = 1.0) -> Group:
        """Return the group once every one of its jobs has finished, long-polling
        (GET /v1/groups/{id}?wait=) as Jobs.wait does."""
        def read(wait: float) -> Group:
            return long_poll_get(self._t, f"/v1/groups/{seg(id)}", wait)
        return long_poll(read, lambda g: bool(g.get("done")), timeout, max_poll)


class Tenants:
    """Per-tenant fairness: concurrency, weight, backlog, max wait."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def list(self, order: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> Dict[str, Any]:
        return self._t.request("GET", "/v1/tenants", query={"order": order, "limit": limit, "cursor": cursor})[2]

    def get(self, tenant: str) -> Tenant:
        return self._t.request("GET", f"/v1/tenants/{seg(tenant)}")[2]

    def set(self, tenant: str, **settings: int) -> Tenant:
        """Replace the tenant's own settings (limit, weight, backlog, max_wait_ms). Admin."""
        return self._t.request("PUT", f"/v1/tenants/{seg(tenant)}", body=settings)[2]

    def set_limit(self, tenant: str, concurrency: int) -> Tenant:
        """Change only the concurrency (0 the default, -1 unlimited). Admin."""
        return self._t.request("PUT", f"/v1/tenants/{seg(tenant)}/limit", body={"concurrency": concurrency})[2]


class Sluice:
    """A client of `sluice serve`. Safe to share between threads.

    >>> sluice = Sluice("http://127.0.0.1:8080", token=None)
    >>> sluice.limits.allow("member", "export-usage", {"member": "42"})  # doctest: +SKIP
    """

    def __init__(self, url: str = "http://127.0.0.1:8080", token: Optional[str] = None, timeout: float = 30.0) -> None:
        self.transport = Transport(url, token, timeout)
        self.limits = Limits(self.transport)
        self.jobs = Jobs(self.transport)
        self.groups = Groups(self.transport)
        self.tenants = Tenants(self.transport)

    def close(self) -> None:
        """Close the client's connections; it may still be used (it reconnects)."""
        self.transport.close()

    def __enter__(self) -> "Sluice":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def url(self) -> str:
        return self.transport.url

    def whoami(self) -> Dict[str, Any]:
        return self.transport.request("GET", "/v1/whoami")[2]

    def openapi(self) -> Dict[str, Any]:
        return self.transport.request("GET", "/v1/openapi.json")[2]


# The longest wait one long-poll asks for (the server allows 60 s), and
# what is added to it for the request's own timeout.
LONG_POLL = 30.0
LONG_POLL_GRACE = 10.0


def long_poll_get(t: Transport, path: str, wait: float) -> Any:
    """GET path, asking the server to hold the answer up to wait seconds."""
    ms = int(wait * 1000)
    return t.request("GET", path, query={"wait": f"{ms}ms"}, timeout=wait + LONG_POLL_GRACE)[2]


def long_poll(read: Callable[[float], T], done: Callable[[T], bool], timeout: Optional[float], max_poll: float) -> T:
    """Call read(wait), a long-poll of up to wait seconds, until done(value),
    within timeout overall (TimeoutError past it). An answer that comes well
    before the wait it asked for without being done (a server that does not
    long-poll) is followed by a pause, 25ms at first and doubling up to
    max_poll, as a poll."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.025
    while True:
        wait = LONG_POLL if deadline is None else max(0.0, min(LONG_POLL, deadline - time.monotonic()))
        asked = time.monotonic()
        v = read(wait)
        if done(v):
            return v
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            raise TimeoutError("sluice: wait timed out")
        if now - asked < wait / 2:
            time.sleep(pause if deadline is None else min(pause, max(0.0, deadline - now)))
            pause = min(pause * 2, max_poll)
