"""What every HTTP provider adapter shares: the injected client, error mapping, PNG decoding.

``HttpAdapter`` holds an ``httpx.Client`` (injected, or a real one made on first use), reads
its credential through ``require_env`` at call time, turns transport failures and non-2xx
answers into ``AdapterError`` (status plus a short body excerpt, never the credential), and
re-encodes whatever image the provider returns as PNG bytes.
"""

from __future__ import annotations

import base64
import binascii
import io
import time
from typing import Any, ClassVar

import httpx

from vsb.adapters.base import PNG_SIGNATURE, GenerationResult, ImageModelAdapter, require_env
from vsb.errors import AdapterError

#: Generous read timeout (image models take tens of seconds), short connect timeout.
DEFAULT_TIMEOUT = httpx.Timeout(180.0, connect=15.0)
_EXCERPT = 200


def default_client() -> httpx.Client:
    """A real client with the default timeout (tests inject one on ``httpx.MockTransport``)."""
    return httpx.Client(timeout=DEFAULT_TIMEOUT, follow_redirects=True)


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``text`` with whitespace collapsed, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def to_png(data: bytes, what: str) -> bytes:
    """``data`` (PNG, JPEG, WebP…) as PNG bytes; ``AdapterError`` if it is not an image."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.format == "PNG" and data.startswith(PNG_SIGNATURE):
                im.verify()
                return data
            im.load()
            img: Image.Image = im
            if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
                img = img.convert("RGBA" if "A" in img.getbands() else "RGB")
            out = io.BytesIO()
            img.save(out, format="PNG")
            return out.getvalue()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as err:
        raise AdapterError(f"{what}: the returned bytes are not a readable image ({err})") from err


def b64decode(text: str, what: str) -> bytes:
    """Strict base64 decoding (a ``data:`` URI prefix is allowed); ``AdapterError`` if bad."""
    if text.startswith("data:"):
        text = text.partition(",")[2]
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        raise AdapterError(f"{what}: invalid base64 image data") from err


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class HttpAdapter(ImageModelAdapter):
    """Base of the HTTP providers: subclasses set ``provider``/``env_var`` and ``generate``."""

    provider: ClassVar[str] = "abstract"
    env_var: ClassVar[str] = ""
    version = "1"

    def __init__(self, model: str, *, client: httpx.Client | None = None) -> None:
        self.model = model
        self.name = f"{self.provider}:{model}"
        self._client = client

    @property
    def client(self) -> httpx.Client:
        """The injected client, or a real one created on first use."""
        if self._client is None:
            self._client = default_client()
        return self._client

    @property
    def pricing_key(self) -> str:
        """This model's entry in ``config/pricing.json`` (``provider/model``)."""
        return f"{self.provider}/{self.model}"

    def preflight(self) -> None:
        self.credential()

    def credential(self) -> str:
        """The API key, read from the environment now (``CredentialMissing`` if unset)."""
        return require_env(self.env_var, self.name)

    def send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One HTTP exchange; timeouts, transport errors and non-2xx raise ``AdapterError``."""
        shown = url.split("?", 1)[0]  # never echo a query-string key
        try:
            resp = self.client.request(method, url, **kwargs)
        except httpx.TimeoutException as err:
            raise AdapterError(f"{self.name}: {method} {shown} timed out ({err!r})") from err
        except httpx.HTTPError as err:
            raise AdapterError(f"{self.name}: {method} {shown} failed ({err!r})") from err
        if not resp.is_success:
            raise AdapterError(
                f"{self.name}: {method} {shown} returned HTTP {resp.status_code}: "
                f"{excerpt(resp.text)}"
            )
        return resp

    def json_of(self, resp: httpx.Response) -> Any:
        """The response body as JSON (``AdapterError`` if it is not)."""
        try:
            return resp.json()
        except (ValueError, RecursionError) as err:  # RecursionError: deeply nested JSON
            raise AdapterError(f"{self.name}: expected JSON, got {excerpt(resp.text)!r}") from err

    def download(self, url: str, **kwargs: Any) -> bytes:
        """The bytes at ``url`` fetched through the same client (a ``data:`` URI is decoded)."""
        if url.startswith("data:"):
            return b64decode(url, self.name)
        return self.send("GET", url, **kwargs).content

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
