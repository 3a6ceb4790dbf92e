"""What every HTTP provider adapter shares: the injected client, safe I/O, error mapping,
bounded image decoding.

``HttpAdapter`` holds an ``httpx.Client`` (injected, or a real one made on first use) and
makes ONE attempt per ``generate`` call; the runner retries it (``vsb.store.calls``), writing every
attempt to the ledger before it is sent. Its rules:

- **Credentials go only to the provider's own API host** (``api_base``): ``send(…, auth=True)``
  refuses any other host, and the credential is read from the environment at call time.
- **HTTPS only** (plain http only to a loopback address: tests, local servers); redirects
  are never followed for API calls, and downloads follow at most a few, on the same host.
- **Size caps**: no answer body over ``max_bytes`` is read (declared or streamed).
- **Errors**: transport failures and timeouts raise ``RetryableError`` (billed: the provider
  may have done the work), error answers are classified by ``vsb.store.calls.classify``
  (``RetryableError``, ``QuotaExceeded``, ``Refused``, ``AdapterError``) with the status and a
  short body excerpt; no error text holds the credential (redacted, even when a server
  echoes the request) or a query string.
- **Images** are decoded under a pixel cap (``MAX_PIXELS``, 4096²): a decompression bomb or
  an oversized image is a per-image ``AdapterError``, never a traceback, and never reaches an
  evaluator; whatever format comes back is re-encoded as PNG.

Free sub-requests (polling a prediction, downloading its output) are retried here with the
same policy (``vsb.store.calls.call_with_retries``); they are not billed and not in the ledger.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urljoin, urlsplit

import httpx

from vsb.adapters.base import (
    PNG_SIGNATURE,
    GenerationRequest,
    GenerationResult,
    ImageModelAdapter,
    PromptFit,
    require_env,
)
from vsb.errors import AdapterError
from vsb.fsio import MAX_PIXELS
from vsb.store.calls import (
    CallError,
    QuotaExceeded,
    Refused,
    RetryableError,
    RetryPolicy,
    call_with_retries,
    classify,
    is_loopback,
    parse_retry_after,
    redact,
)

#: Generous read timeout (image models take tens of seconds), short connect timeout.
DEFAULT_TIMEOUT = httpx.Timeout(180.0, connect=15.0)
#: Requests at a time per HTTP provider (``--concurrency`` overrides).
HTTP_CONCURRENCY = 8
#: The largest answer body read (an image as base64 JSON is a few MB).
MAX_BYTES = 50 * 1024 * 1024
#: Same-host redirects a download follows.
MAX_REDIRECTS = 3
_EXCERPT = 200


def default_client(timeout_s: float | None = None) -> httpx.Client:
    """A real client: generous read timeout (``timeout_s``: ``vsb run --timeout``, the
    longest wait for a connection or a byte of the answer), never following a redirect by
    itself."""
    timeout = (
        DEFAULT_TIMEOUT
        if timeout_s is None
        else httpx.Timeout(timeout_s, connect=min(15.0, timeout_s))
    )
    return httpx.Client(timeout=timeout, follow_redirects=False)


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``text`` with whitespace collapsed, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def check_url(url: str, what: str) -> None:
    """``AdapterError`` unless ``url`` is https (or http to a loopback address)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == "https" or (scheme == "http" and is_loopback(url)):
        return
    raise CallError(f"{what}: refusing {scheme or 'a relative'} URL {_shown(url)} (https only)")


def _shown(url: str) -> str:
    """A URL as errors show it: no query string, no user info."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else parts.path


def to_png(data: bytes, what: str, *, max_pixels: int = MAX_PIXELS) -> bytes:
    """``data`` (PNG, JPEG, WebP…) as PNG bytes; ``AdapterError`` if it is not an image, does
    not decode in full, or has more than ``max_pixels`` pixels (checked from the header,
    before decoding)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
        with im:
            w, h = im.size
            if w * h > max_pixels:
                side = int(max_pixels**0.5)
                raise AdapterError(
                    f"{what}: the image is {w}×{h} pixels, over the {side}×{side} cap"
                )
            if im.format == "PNG" and data.startswith(PNG_SIGNATURE):
                im.verify()  # chunk CRCs; then decode every pixel (scrambled data, issue #23)
                with Image.open(io.BytesIO(data)) as full:
                    full.load()
                return data
            im.load()
            img: Image.Image = im
            if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
                img = img.convert("RGBA" if "A" in img.getbands() else "RGB")
            out = io.BytesIO()
            img.save(out, format="PNG")
            return out.getvalue()
    except Image.DecompressionBombError as err:
        raise AdapterError(f"{what}: refused a decompression bomb ({err})") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as err:
        raise AdapterError(f"{what}: the returned bytes are not a readable image ({err})") from err


def b64decode(text: str, what: str) -> bytes:
    """Strict base64 decoding (a ``data:`` URI prefix is allowed); ``AdapterError`` if bad."""
    if text.startswith("data:"):
        text = text.partition(",")[2]
    if len(text) > MAX_BYTES * 4 // 3 + 4:
        raise AdapterError(f"{what}: base64 image data over {MAX_BYTES} bytes")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        raise AdapterError(f"{what}: invalid base64 image data") from err


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class HttpAdapter(ImageModelAdapter):
    """Base of the HTTP providers: subclasses set ``provider``/``env_var``/``api_base`` and
    implement ``request_image`` (one attempt; ``generate`` redacts its errors)."""

    provider: ClassVar[str] = "abstract"
    env_var: ClassVar[str] = ""
    #: The provider's API root; the credential goes to this host only.
    api_base: str = ""
    version = "1"
    paid = True
    concurrency: int = HTTP_CONCURRENCY

    def __init__(
        self,
        model: str,
        *,
        client: httpx.Client | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.model = model
        self.name = f"{self.provider}:{model}"
        self._client = client
        self._own_client = False
        self._client_lock = threading.Lock()
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.max_bytes = max_bytes

    @property
    def client(self) -> httpx.Client:
        """The injected client, or a real one created on first use (once, however many
        threads ask at the same moment: a second one would never be closed)."""
        with self._client_lock:
            if self._client is None:
                self._client = default_client()
                self._own_client = True
            return self._client

    def close(self) -> None:
        """Close the client this adapter created (an injected one is its owner's)."""
        with self._client_lock:
            if self._client is not None and self._own_client:
                self._client.close()
                self._client = None
                self._own_client = False

    @property
    def pricing_key(self) -> str:
        """This model's entry in ``config/pricing.json`` (``provider/model``)."""
        return f"{self.provider}/{self.model}"

    @property
    def api_host(self) -> str:
        """The host (and port) the credential may be sent to."""
        return urlsplit(self.api_base).netloc.lower()

    def preflight(self) -> None:
        self.credential()

    def prompt_limit(self) -> int | None:
        """The provider's documented limit on the prompt, in characters, for this model
        (None: none documented; each provider cites its page)."""
        return None

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        """The prompt sent (``full_prompt``) in characters against ``prompt_limit``; unknown
        where no limit is documented. A prompt over it is refused before any call
        (``vsb run``): the provider would reject it, never cut it."""
        limit = self.prompt_limit()
        if limit is None:
            return PromptFit()
        return PromptFit("characters", len(request.full_prompt()), limit)

    def credential(self) -> str:
        """The API key, read from the environment now (``CredentialMissing`` if unset)."""
        return require_env(self.env_var, self.name)

    def secrets(self) -> tuple[str | None, ...]:
        """Values no error text may contain (the credential, as set now)."""
        return (os.environ.get(self.env_var) if self.env_var else None,)

    def auth_headers(self) -> dict[str, str]:
        """The headers that carry the credential (``Authorization: Bearer`` by default)."""
        return {"Authorization": f"Bearer {self.credential()}"}

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """One attempt (``request_image``); any error text is redacted of the credential."""
        try:
            return self.request_image(request)
        except AdapterError as err:
            clean = redact(err.message, *self.secrets())
            if clean != err.message:
                err.message = clean
                err.args = (clean,)
            raise

    def request_image(self, request: GenerationRequest) -> GenerationResult:
        """Produce one image: one billed request (plus free polls and downloads)."""
        raise NotImplementedError

    # --- HTTP --------------------------------------------------------------------------

    def _check_auth_host(self, url: str) -> None:
        host = urlsplit(url).netloc.lower()
        if host != self.api_host:
            raise CallError(
                f"{self.name}: {_shown(url)} is not on the API host {self.api_host}: "
                "not sending the credential there"
            )

    def send(
        self,
        method: str,
        url: str,
        *,
        auth: bool = False,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """One HTTP exchange (no redirect followed); ``auth`` adds the credential, to the API
        host only. Failures raise the ``vsb.store.calls`` errors (see the module docstring)."""
        resp = self._exchange(method, url, auth=auth, headers=headers, **kwargs)
        if 300 <= resp.status_code < 400:
            raise CallError(
                f"{self.name}: {method} {_shown(url)} answered a redirect "
                f"(HTTP {resp.status_code}); API redirects are not followed"
            )
        return resp

    def _exchange(
        self,
        method: str,
        url: str,
        *,
        auth: bool,
        headers: dict[str, str] | None,
        **kwargs: Any,
    ) -> httpx.Response:
        check_url(url, self.name)
        sent = dict(headers or {})
        if auth:
            self._check_auth_host(url)
            sent.update(self.auth_headers())
        shown = f"{method} {_shown(url)}"
        try:
            req = self.client.build_request(method, url, headers=sent, **kwargs)
            resp = self.client.send(req, stream=True, follow_redirects=False)
        except httpx.TimeoutException as err:
            raise RetryableError(f"{self.name}: {shown} timed out ({err!r})", billed=True) from None
        except httpx.TransportError as err:
            raise RetryableError(f"{self.name}: {shown} failed ({err!r})", billed=True) from None
        except httpx.HTTPError as err:
            raise CallError(f"{self.name}: {shown} failed ({err!r})") from None
        try:
            body = self._read(resp, shown)
        finally:
            resp.close()
        kept = {
            k: v
            for k, v in resp.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        }
        out = httpx.Response(resp.status_code, headers=kept, content=body, request=resp.request)
        if out.status_code >= 400:
            raise self._error(out, shown)
        return out

    def _read(self, resp: httpx.Response, shown: str) -> bytes:
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise AdapterError(
                f"{self.name}: {shown} answered {int(declared)} bytes, over the "
                f"{self.max_bytes}-byte cap"
            )
        chunks: list[bytes] = []
        total = 0
        try:
            for chunk in resp.iter_bytes():
                total += len(chunk)
                if total > self.max_bytes:
                    raise AdapterError(
                        f"{self.name}: {shown} answered over the {self.max_bytes}-byte cap"
                    )
                chunks.append(chunk)
        except httpx.TimeoutException as err:
            raise RetryableError(f"{self.name}: {shown} timed out ({err!r})", billed=True) from None
        except httpx.HTTPError as err:
            raise RetryableError(f"{self.name}: {shown} broke off ({err!r})", billed=True) from None
        return b"".join(chunks)

    def _error(self, resp: httpx.Response, shown: str) -> CallError:
        text = redact(resp.text, *self.secrets())
        status = resp.status_code
        msg = f"{self.name}: {shown} returned HTTP {status}: {excerpt(text)}"
        kind = classify(status, text)
        if kind == "retry":
            wait = parse_retry_after(resp.headers.get("retry-after"))
            return RetryableError(msg, retry_after=wait)
        if kind == "quota":
            return QuotaExceeded(msg)
        if kind == "refused":
            return Refused(msg)
        return CallError(msg)

    def json_of(self, resp: httpx.Response) -> Any:
        """The response body as JSON (``AdapterError`` if it is not)."""
        try:
            return resp.json()
        except (ValueError, RecursionError) as err:  # RecursionError: deeply nested JSON
            raise AdapterError(f"{self.name}: expected JSON, got {excerpt(resp.text)!r}") from err

    def fetch(self, method: str, url: str, *, auth: bool = False, **kwargs: Any) -> Any:
        """A free API request (a poll), retried on transient failures; its JSON."""

        def once() -> Any:
            return self.json_of(self.send(method, url, auth=auth, **kwargs))

        return call_with_retries(once, self.retry, sleep=self.sleep)[0]

    def download(self, url: str, *, auth: bool = False) -> bytes:
        """The bytes at ``url`` (a ``data:`` URI is decoded): https only, size-capped,
        same-host redirects only, the credential only when ``auth`` and on the API host;
        retried on transient failures (a download is not billed)."""
        if url.startswith("data:"):
            return b64decode(url, self.name)

        def once() -> bytes:
            at = url
            for _ in range(MAX_REDIRECTS + 1):
                resp = self._exchange("GET", at, auth=auth and self._on_api_host(at), headers={})
                if not 300 <= resp.status_code < 400:
                    return resp.content
                nxt = urljoin(at, resp.headers.get("location", ""))
                if urlsplit(nxt).netloc.lower() != urlsplit(at).netloc.lower():
                    raise AdapterError(
                        f"{self.name}: download {_shown(at)} redirects to another host "
                        f"({urlsplit(nxt).hostname}): refused"
                    )
                at = nxt
            raise AdapterError(f"{self.name}: download {_shown(url)}: too many redirects")

        return call_with_retries(once, self.retry, sleep=self.sleep)[0]

    def _on_api_host(self, url: str) -> bool:
        return urlsplit(url).netloc.lower() == self.api_host

    def result(self, raw: bytes, started: float, **extra: Any) -> GenerationResult:
        """The PNG result with provider/model/latency metadata (cost: from the price list)."""
        meta: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "pricing_key": self.pricing_key,
            "latency_s": round(time.perf_counter() - started, 6),
            **extra,
        }
        return GenerationResult(png=to_png(raw, self.name), metadata=meta, cost_usd=None)
