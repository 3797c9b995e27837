"""Errors mirroring the server's application/problem+json answers (RFC 9457).

One class per kind of answer a caller acts on differently: LimitedError
(429), InvalidError (400, 413, 415, 422), UnavailableError (503, or no
answer at all: status 0), ConflictError (409), NotFoundError (404),
AuthError (401, 403), UnsupportedError (501).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional


class SluiceError(Exception):
    """An answer of the server that is not a success, or no answer."""

    def __init__(
        self,
        status: int,
        title: str = "",
        detail: str = "",
        type: str = "about:blank",
        retry_after: Optional[int] = None,
        body: Optional[Dict[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.status = status
        self.title = title or f"HTTP {status}"
        self.detail = detail
        self.type = type
        #: Seconds to wait before trying again (Retry-After), if the server said.
        self.retry_after = retry_after
        self.body: Dict[str, Any] = dict(body or {})
        self.headers: Dict[str, str] = dict(headers or {})
        msg = f"sluice: {status} {self.title}"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class LimitedError(SluiceError):
    """429: over a rate limit; nothing was counted."""

    @property
    def retry_after_ms(self) -> int:
        ms = self.body.get("retry_after_ms")
        if isinstance(ms, int):
            return ms
        return (self.retry_after or 0) * 1000


class InvalidError(SluiceError):
    """The request can never succeed as sent; the detail names the field."""


class UnavailableError(SluiceError):
    """A store is down or overloaded (503), or the server did not answer (status 0)."""


class ConflictError(SluiceError):
    """409: lease lost, job already finished, group id taken."""


class NotFoundError(SluiceError):
    """404: unknown scene, policy, job or group."""


class AuthError(SluiceError):
    """401 or 403: no valid token, or the token lacks the route's role."""


class UnsupportedError(SluiceError):
    """501: the server's job backend lacks the feature."""


def problem_error(status: int, **kw: Any) -> SluiceError:
    """Return the error class that fits the status."""
    if status == 429:
        return LimitedError(status, **kw)
    if status == 409:
        return ConflictError(status, **kw)
    if status == 404:
        return NotFoundError(status, **kw)
    if status in (401, 403):
        return AuthError(status, **kw)
    if status == 501:
        return UnsupportedError(status, **kw)
    if status in (502, 503, 504):
        return UnavailableError(status, **kw)
    if 400 <= status < 500:
        return InvalidError(status, **kw)
    return SluiceError(status, **kw)
