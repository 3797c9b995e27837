"""The one place this package speaks HTTP: JSON in, JSON or a typed error out.

Each thread keeps one keep-alive connection (http.client is not safe to
share between threads).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.parse
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, cast

from .errors import UnavailableError, problem_error

Reply = Tuple[int, Dict[str, str], Any]


class Transport:
    """Sends requests to one server."""

    def __init__(self, url: str = "http://127.0.0.1:8080", token: Optional[str] = None, timeout: float = 30.0) -> None:
        parsed = urllib.parse.urlsplit(url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"sluice: url must be http(s)://host[:port], got {url!r}")
        self.url = url.rstrip("/")
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port
        self._base = parsed.path
        self._token = token
        self.timeout = timeout
        self._local = threading.local()
        self._all: "list[http.client.HTTPConnection]" = []
        self._all_mu = threading.Lock()

    def _conn(self, timeout: float) -> http.client.HTTPConnection:
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=timeout)
            self._local.conn = conn
            with self._all_mu:
                self._all.append(conn)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def close(self) -> None:
        """Close every connection this transport opened, on any thread."""
        with self._all_mu:
            conns, self._all = self._all, []
        for c in conns:
            c.close()

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            with self._all_mu:
                if conn in self._all:
                    self._all.remove(conn)
        self._local.conn = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Optional[Mapping[str, Any]] = None,
        accept: Iterable[int] = (),
        timeout: Optional[float] = None,
    ) -> Reply:
        """Send one request; answers in `accept` are returned, other failures raised."""
        target = self._base + path
        if query:
            q = {k: str(v) for k, v in query.items() if v is not None and v != ""}
            if q:
                target += "?" + urllib.parse.urlencode(q)
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        status, hdrs, raw = self._send(method, target, data, headers, timeout or self.timeout)
        decoded: Any = None
        if raw:
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = {"detail": raw[:512].decode("utf-8", "replace")}
        if 200 <= status < 300 or status in accept:
            return status, hdrs, decoded
        p: Dict[str, Any] = cast(Dict[str, Any], decoded) if isinstance(decoded, dict) else {}
        ra = hdrs.get("retry-after", "").strip()
        raise problem_error(
            status,
            title=str(p.get("title", "")),
            detail=str(p.get("detail", "")),
            type=str(p.get("type", "about:blank")),
            retry_after=int(ra) if ra.isdigit() else None,
            body=p,
            headers=hdrs,
        )

    def _send(self, method: str, target: str, data: Optional[bytes], headers: Dict[str, str], timeout: float) -> Tuple[int, Dict[str, str], bytes]:
        for attempt in (0, 1):
            conn = self._conn(timeout)
            reused = conn.sock is not None
            try:
                conn.request(method, target, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                hdrs = {k.lower(): v for k, v in resp.getheaders()}
                if resp.getheader("Connection", "").lower() == "close":
                    self._drop()
                return resp.status, hdrs, raw
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self._drop()
                # A keep-alive connection the server closed while idle: the
                # request never reached it, so sending again is safe.
                if reused and attempt == 0:
                    continue
                raise UnavailableError(0, title="Unreachable", detail=f"{method} {target}: {e}") from e
            except (OSError, socket.timeout, http.client.HTTPException) as e:
                self._drop()
                raise UnavailableError(0, title="Unreachable", detail=f"{method} {target}: {e}") from e
        raise AssertionError("unreachable")


def seg(s: str) -> str:
    """Escape one path segment."""
    return urllib.parse.quote(s, safe="")
