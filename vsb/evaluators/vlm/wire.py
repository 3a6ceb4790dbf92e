"""The wire under the HTTP judges: one JSON POST with its failures sorted for the retry layer,
the API key read at call time, and a base URL in one spelling (``endpoint``, part of every
cache key).

``post_json`` never puts the key in an error: 408/409/429/5xx and dropped connections raise
``RetryableError`` (with the server's Retry-After), a connection no server accepted (refused,
unresolvable host, connect timeout) ``Unreachable`` (a ``RetryableError`` the judge counts to
fail fast on a dead endpoint), other failures ``AdapterError``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from vsb.errors import AdapterError, CredentialMissing
from vsb.store.calls import QuotaExceeded, RetryableError, classify, parse_retry_after, redact

if TYPE_CHECKING:
    import httpx

#: Read timeout for a judge call (a batched scene can take a while), short connect timeout.
READ_TIMEOUT_S, CONNECT_TIMEOUT_S = 120.0, 15.0
_EXCERPT = 200


class Unreachable(RetryableError):
    """No server accepted the connection (refused, unknown host, connect timeout): unlike an
    error answer, nothing is listening at the endpoint (``endpoint``: its base URL)."""

    def __init__(self, message: str, *, endpoint: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


def normalise_endpoint(url: str) -> str:
    """A base URL in one spelling: lower-case scheme and host, default port dropped, no
    credentials, no trailing slash (``HTTP://Host:80/v1/`` -> ``http://host/v1``)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if port is None or port == default else f"{host}:{port}"
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{path}{query}"


def default_client(timeout_s: float | None = None) -> httpx.Client:
    """A real client: generous read timeout (``timeout_s``: ``--timeout``, the longest wait
    for a connection or a byte of the answer), no redirects (a key never follows one)."""
    import httpx

    read = READ_TIMEOUT_S if timeout_s is None else timeout_s
    timeout = httpx.Timeout(read, connect=min(CONNECT_TIMEOUT_S, read))
    return httpx.Client(timeout=timeout, follow_redirects=False)


def api_key(env: str, *, optional: bool) -> str | None:
    key = os.environ.get(env)
    if not key and not optional:
        raise CredentialMissing(f"the VLM judge needs an API key: set {env}")
    return key or None


def post_json(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    secret: str | None,
    endpoint: str | None = None,
) -> Any:
    import httpx  # with the client: evaluating without a judge never loads it

    try:
        resp = client.post(url, headers=headers, json=body)
    except (httpx.ConnectError, httpx.ConnectTimeout) as err:
        raise Unreachable(
            redact(f"VLM request to {url} failed: {err}", secret), endpoint=endpoint or url
        ) from None
    except httpx.TransportError as err:
        # sent, then the answer was lost: the server may have done (and billed) the work
        billed = isinstance(err, (httpx.ReadTimeout, httpx.ReadError, httpx.RemoteProtocolError))
        raise RetryableError(
            redact(f"VLM request to {url} failed: {err}", secret), billed=billed
        ) from None
    except httpx.HTTPError as err:
        raise AdapterError(redact(f"VLM request to {url} failed: {err}", secret)) from None
    if resp.status_code >= 300:
        flat = " ".join(resp.text.split())[:_EXCERPT]
        msg = redact(f"VLM request to {url} failed: HTTP {resp.status_code}: {flat}", secret)
        kind = classify(resp.status_code, resp.text)  # vsb.store.calls: the one retry layer
        if kind == "retry":
            raise RetryableError(
                msg, retry_after=parse_retry_after(resp.headers.get("retry-after"))
            )
        if kind == "quota":  # a spent quota: retrying cannot help
            raise QuotaExceeded(msg)
        raise AdapterError(msg)
    try:
        return resp.json()
    except (ValueError, RecursionError):  # RecursionError: a hostile, deeply nested body
        raise AdapterError(f"VLM response from {url} is not JSON") from None


def int_or_none(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None
