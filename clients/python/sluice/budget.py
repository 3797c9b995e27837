"""A call budget shared by every process through the server.

This is flow.SharedBudget over HTTP: a policy of the server's limits with
the token-bucket algorithm is the budget (calls per period, starting full).
A call takes from it, and when denied sleeps for the retry-after the server
answered and asks again. Every process and thread naming the same scene,
policy and subject draws from one budget, so fli-style code that calls a
rate-limited upstream from many workers stays under the upstream's ceiling
together, not each on its own.

    # sluice.yaml
    limits:
      scenes:
        upstream:
          subject: [upstream]
          policies:
            flights: {limits: [{quota: 10, window: 1s, algorithm: token-bucket}]}

    flights = SharedBudget(sluice, "upstream", "flights", {"upstream": "google-flights"})

    @flights
    def search(date): ...
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any, Callable, Mapping, Optional, TypeVar, Union, cast

from .client import Sluice
from .errors import UnavailableError

F = TypeVar("F", bound=Callable[..., Any])


class SharedBudget:
    """A budget kept by the server: wait() blocks until `cost` calls may be made.

    Within a process, waiters ask the server one at a time (the longest
    waiter first, as flow's turnstile), so a burst of threads does not flood
    the server with denied asks. `concurrency`, when set, also bounds how
    many decorated calls of this process run at once (fli's thread pool
    width). When the server cannot be reached, `unreachable` decides:
    "raise" (default) raises UnavailableError, "open" lets the call go.
    `timeout` bounds how long a decorated call waits (TimeoutError past it,
    raised at once when the server's retry-after already exceeds it).
    """

    def __init__(
        self,
        client: Sluice,
        scene: str,
        policy: str,
        subject: Mapping[str, Union[str, int]],
        cost: int = 1,
        concurrency: Optional[int] = None,
        unreachable: str = "raise",
        timeout: Optional[float] = None,
    ) -> None:
        if cost < 1:
            raise ValueError(f"sluice: budget: cost must be at least 1, got {cost}")
        self.client = client
        self.scene = scene
        self.policy = policy
        self.subject = dict(subject)
        self.cost = cost
        self.unreachable = unreachable
        #: How long a decorated call (or with-block) waits for the budget; None: no bound.
        self.timeout = timeout
        self._turn = threading.Lock()
        self._width = threading.BoundedSemaphore(concurrency) if concurrency else None

    def try_take(self, cost: Optional[int] = None) -> bool:
        """Take now if the budget has room; never waits."""
        try:
            return bool(self.client.limits.consume(self.scene, self.policy, self.subject, cost or self.cost).get("allowed"))
        except UnavailableError as e:
            if e.status == 0 and self.unreachable == "open":
                return True
            raise

    def wait(self, cost: Optional[int] = None, timeout: Optional[float] = None) -> None:
        """Block until the budget grants `cost` calls; TimeoutError past timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._turn.acquire(timeout=-1 if timeout is None else timeout):
            raise TimeoutError("sluice: budget: timed out waiting for a turn")
        try:
            while True:
                try:
                    d = self.client.limits.consume(self.scene, self.policy, self.subject, cost or self.cost)
                except UnavailableError as e:
                    if e.status == 0 and self.unreachable == "open":
                        return
                    raise
                if d.get("allowed"):
                    return
                pause = max(int(d.get("retry_after_ms") or 0), 1) / 1000
                if deadline is not None and time.monotonic() + pause > deadline:
                    raise TimeoutError(f"sluice: budget {self.scene}/{self.policy}: no room within the timeout")
                time.sleep(pause)
        finally:
            self._turn.release()

    def __call__(self, fn: F) -> F:
        """Decorate a function that calls the upstream: each call takes from the budget first."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return cast(F, wrapper)

    def __enter__(self) -> "SharedBudget":
        if self._width is not None:
            self._width.acquire()
        try:
            self.wait(timeout=self.timeout)
        except BaseException:
            if self._width is not None:
                self._width.release()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._width is not None:
            self._width.release()


def budgeted(
    client: Sluice,
    scene: str,
    policy: str,
    subject: Mapping[str, Union[str, int]],
    cost: int = 1,
    concurrency: Optional[int] = None,
    timeout: Optional[float] = None,
) -> Callable[[F], F]:
    """Decorator form of SharedBudget, for one function."""
    return SharedBudget(client, scene, policy, subject, cost=cost, concurrency=concurrency, timeout=timeout)
