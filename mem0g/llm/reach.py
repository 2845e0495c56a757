"""A first-call check that the LLM endpoint accepts connections at all.

The `openai` SDK retries a refused or silent endpoint with backoff, each attempt waiting for its
own timeout, so a mistyped base URL used to surface after 80 s as "Connection error.". One TCP
connect, bounded by `llm.connect_timeout`, fails at once instead, and says which URL, which
model and why. Endpoints that answered once are not probed again.
"""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit

DEFAULT_URL = "https://api.openai.com/v1"


class Unreachable(OSError):
    """The endpoint refused the connection, timed out, or its host is unknown."""


class ReachCheck:
    """Probes one endpoint once (thread-safe); later calls return at once."""

    def __init__(self, base_url: str | None, timeout: float) -> None:
        self.url = base_url or DEFAULT_URL
        self.timeout = timeout
        self._done = False
        self._lock = threading.Lock()

    def ensure(self) -> None:
        if self._done:
            return
        with self._lock:
            if self._done:
                return
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise Unreachable(f"not an http(s) URL: {self.url!r}")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            try:
                with socket.create_connection((parts.hostname, port), timeout=self.timeout):
                    pass
            except TimeoutError:
                why = f"no connection within {self.timeout:g} s (llm.connect_timeout)"
                raise Unreachable(why) from None
            except OSError as err:
                raise Unreachable(err.strerror or str(err)) from None
            self._done = True
