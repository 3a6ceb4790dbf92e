"""Transports of the VLM judge: one image and one prompt in, the model's raw reply out.

Every transport has a ``judge_model`` name (what rows, the cache key and the price list call
it) and ``ask(JudgeRequest) -> JudgeReply``:

- ``OpenAICompatibleVlm`` (``openai-compatible:MODEL``): ``POST {base_url}/chat/completions``
  with the image as a data URI; OpenAI, vLLM, Ollama, LM Studio, OpenRouter… The key comes
  from ``OPENAI_API_KEY`` and may be absent for a loopback base URL (a local server).
- ``AnthropicVlm`` (``anthropic:MODEL``): ``POST {base_url}/v1/messages`` with a base64 image
  block; key from ``ANTHROPIC_API_KEY``. The base URL may end in ``/v1`` or not (both
  ``http://HOST:PORT`` and ``http://HOST:PORT/v1`` reach ``/v1/messages``).
- ``ReplayVlm`` (``replay:DIR``): answers recorded in ``judge_calls.jsonl`` files
  (``vsb evaluate`` writes one beside its evaluations), looked up by image and prompt.
- ``MockVlm`` (``mock[:ERROR_RATE]``): answers every question with its expected answer,
  flipped YES<->NO with probability ERROR_RATE (seeded by the image and prompt), for
  pipelines and tests; it is not a judge of anything.

HTTP transports take an injected ``httpx.Client`` (never following redirects) and send
through ``vsb.evaluators.vlm.wire``, which reads the key at call time and never puts it in an
error: 408/409/429/5xx and dropped connections raise ``RetryableError`` (with the server's
Retry-After), a connection no server accepted (refused, unresolvable host, connect timeout)
``Unreachable`` (a ``RetryableError`` the judge counts to fail fast on a dead endpoint), other
failures ``AdapterError``.

Each HTTP transport has an ``endpoint``: its normalised base URL (``normalise_endpoint``),
part of every cache key, so the same model name served elsewhere is asked again. Transports
without a server (mock, replay) have ``endpoint`` None.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from vsb.errors import AdapterError, InputError
from vsb.evaluators.vlm.wire import (
    api_key,
    default_client,
    int_or_none,
    normalise_endpoint,
    post_json,
)
from vsb.fsio import iter_jsonl
from vsb.store.calls import is_loopback

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True)
class JudgeRequest:
    """One call: an image (its original bytes), the system prompt and the user prompt.
    ``expected`` holds the questions' satisfying answers; only ``MockVlm`` reads it."""

    image: bytes
    media_type: str
    system: str
    prompt: str
    max_tokens: int
    expected: tuple[str, ...] = ()
    #: Further images after the first (cross-frame questions compare two frames).
    extra_images: tuple[bytes, ...] = ()

    def images(self) -> tuple[bytes, ...]:
        """Every image of the request, in order (none for a text-only request, whose
        ``image`` is empty: the narrative importer's extraction calls)."""
        return (self.image, *self.extra_images) if self.image else self.extra_images

    def images_sha256(self) -> str:
        """sha256 of the image, or of each image joined by ':'."""
        return ":".join(hashlib.sha256(x).hexdigest() for x in self.images())


@dataclass(frozen=True)
class JudgeReply:
    """The reply text and the token usage the service reported (None if it did not)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


class VlmTransport(Protocol):
    """Asks a vision-language model about one image."""

    judge_model: str
    #: Whether answers cost money (and are worth caching): HTTP judges yes, mock/replay no.
    paid: bool

    def ask(self, request: JudgeRequest) -> JudgeReply:
        """The model's raw reply."""
        ...


def endpoint_of(transport: object) -> str | None:
    """A transport's normalised base URL (its optional ``endpoint`` attribute; None: it has
    no server, e.g. mock or replay)."""
    value = getattr(transport, "endpoint", None)
    return value if isinstance(value, str) else None


Headers = dict[str, str]
Body = dict[str, Any]


class _HttpVlm:
    """What the HTTP transports share: the injected client, the model and the base URL (its
    normalised ``endpoint`` in every cache key), and the key, read at call time from
    ``api_key_env``. A subclass names its family and defaults, builds the request
    (``_request``) and reads the answer (``_reply``)."""

    paid = True
    family = ""
    default_base_url = ""
    default_key_env = ""
    #: A suffix of the base URL that the request paths add themselves (dropped if given).
    api_suffix = ""
    #: Whether a loopback base URL (a local server) may go without a key.
    loopback_needs_no_key = False

    def __init__(
        self,
        client: httpx.Client,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
    ) -> None:
        self.client = client
        self.model = model
        base = (base_url or self.default_base_url).rstrip("/")
        if self.api_suffix and base.endswith(self.api_suffix):
            base = base[: -len(self.api_suffix)]
        self.base_url = base
        self.api_key_env = api_key_env or self.default_key_env
        self.judge_model = f"{self.family}:{model}"
        self.endpoint: str | None = normalise_endpoint(self.base_url)
        self.key_optional = self.loopback_needs_no_key and is_loopback(self.base_url)

    def check_credentials(self) -> None:
        """``CredentialMissing`` now rather than at the first call."""
        api_key(self.api_key_env, optional=self.key_optional)

    def ask(self, request: JudgeRequest) -> JudgeReply:
        key = api_key(self.api_key_env, optional=self.key_optional)
        url, headers, body = self._request(request, key)
        return self._reply(
            post_json(self.client, url, headers, body, key, self.endpoint or self.base_url), url
        )

    def _request(self, request: JudgeRequest, key: str | None) -> tuple[str, Headers, Body]:
        """The URL, headers and JSON body of one call."""
        raise NotImplementedError

    def _reply(self, data: Any, url: str) -> JudgeReply:
        """The reply text and token usage of a JSON answer."""
        raise NotImplementedError


class OpenAICompatibleVlm(_HttpVlm):
    """An OpenAI-compatible chat-completions endpoint (a loopback one needs no key)."""

    family = "openai-compatible"
    default_base_url = "https://api.openai.com/v1"
    default_key_env = "OPENAI_API_KEY"
    loopback_needs_no_key = True

    def _request(self, request: JudgeRequest, key: str | None) -> tuple[str, Headers, Body]:
        parts: list[dict[str, Any]] = [
            {
                "type": "image_url",
                "image_url": {
                    "url": f"data:{request.media_type};base64,{base64.b64encode(x).decode()}"
                },
            }
            for x in request.images()
        ]
        body = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": request.max_tokens,
            "messages": [
                # no system message when there is none to give (VinaBench's questions)
                *([{"role": "system", "content": request.system}] if request.system else []),
                {"role": "user", "content": [*parts, {"type": "text", "text": request.prompt}]},
            ],
        }
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return f"{self.base_url}/chat/completions", headers, body

    def _reply(self, data: Any, url: str) -> JudgeReply:
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise AdapterError(f"VLM response from {url} has no message content") from None
        if isinstance(content, list):  # content parts
            text = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        else:
            text = "" if content is None else str(content)
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return JudgeReply(
            text,
            int_or_none(usage.get("prompt_tokens")),
            int_or_none(usage.get("completion_tokens")),
        )


class AnthropicVlm(_HttpVlm):
    """The Anthropic Messages API."""

    family = "anthropic"
    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"
    # The base URL may end in the API version or not (as the OpenAI transport's ``…/v1``):
    # the request goes to ``{root}/v1/messages`` either way.
    api_suffix = "/v1"
    #: The ``anthropic-version`` header.
    version = "2023-06-01"

    def _request(self, request: JudgeRequest, key: str | None) -> tuple[str, Headers, Body]:
        assert key is not None  # never optional
        body = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": 0,
            **({"system": request.system} if request.system else {}),
            "messages": [
                {
                    "role": "user",
                    "content": [
                        *(
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": request.media_type,
                                    "data": base64.b64encode(x).decode(),
                                },
                            }
                            for x in request.images()
                        ),
                        {"type": "text", "text": request.prompt},
                    ],
                }
            ],
        }
        headers = {"x-api-key": key, "anthropic-version": self.version}
        return f"{self.base_url}/v1/messages", headers, body

    def _reply(self, data: Any, url: str) -> JudgeReply:
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise AdapterError(f"VLM response from {url} has no content blocks")
        text = "".join(
            str(b.get("text", ""))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"
        )
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return JudgeReply(
            text, int_or_none(usage.get("input_tokens")), int_or_none(usage.get("output_tokens"))
        )


def replay_key(image_sha256: str, system: str, prompt: str) -> str:
    """sha256 over canonical JSON of (image sha256, system prompt, user prompt)."""
    doc = {"image_sha256": image_sha256, "prompt": prompt, "system": system}
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class ReplayVlm:
    """Replays answers from ``judge_calls.jsonl`` files in a directory."""

    paid = False
    endpoint: str | None = None

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        files = sorted(self.dir.glob("*.jsonl")) if self.dir.is_dir() else []
        if not files:
            raise InputError(
                "no judge_calls.jsonl (or other *.jsonl) to replay here", file=self.dir
            )
        self.answers: dict[str, str] = {}
        models: set[str] = set()
        for path in files:
            for n, row in iter_jsonl(path):
                fields = ("image_sha256", "system", "prompt", "answer")
                if not all(isinstance(row.get(f), str) for f in fields):
                    raise InputError(
                        "a replay line needs string fields " + ", ".join(fields),
                        file=path,
                        location=f"line {n}",
                    )
                key = replay_key(row["image_sha256"], row["system"], row["prompt"])
                self.answers[key] = row["answer"]
                models.add(str(row.get("judge_model") or ""))
        recorded = sorted(m for m in models if m)
        self.judge_model = (
            f"replay:{recorded[0]}" if len(recorded) == 1 else f"replay:{self.dir.name}"
        )

    def ask(self, request: JudgeRequest) -> JudgeReply:
        sha = request.images_sha256()
        try:
            return JudgeReply(self.answers[replay_key(sha, request.system, request.prompt)])
        except KeyError:
            raise InputError(
                f"no recorded answer for image sha256 {sha[:12]}… with this prompt", file=self.dir
            ) from None


class MockVlm:
    """Expected answers flipped with probability ``error_rate`` (seeded per call)."""

    paid = False
    endpoint: str | None = None

    def __init__(self, error_rate: float = 0.0) -> None:
        if not 0.0 <= error_rate <= 1.0:
            raise InputError(f"mock judge error rate must be in [0, 1], got {error_rate}")
        self.error_rate = error_rate
        self.judge_model = f"mock:{error_rate:g}"
        self.calls = 0

    def ask(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        seed = hashlib.sha256(b"".join(request.images()) + request.prompt.encode("utf-8")).digest()
        rng = np.random.default_rng(int.from_bytes(seed[:8], "big"))
        flips = rng.random(len(request.expected)) < self.error_rate
        answers = [
            ("NO" if e == "YES" else "YES") if f else e
            for e, f in zip(request.expected, flips, strict=True)
        ]
        if len(answers) == 1 and not request.prompt.lstrip().startswith("1."):
            return JudgeReply(answers[0])
        return JudgeReply("\n".join(f"{i}: {a}" for i, a in enumerate(answers, start=1)))


#: Judge kinds ``--judge KIND:ARG`` accepts.
JUDGE_KINDS: tuple[str, ...] = ("openai-compatible", "anthropic", "replay", "mock")


def build_transport(
    spec: str, *, base_url: str | None = None, client: httpx.Client | None = None
) -> VlmTransport:
    """A transport from ``--judge`` (``openai-compatible:MODEL``, ``anthropic:MODEL``,
    ``replay:DIR``, ``mock[:ERROR_RATE]``) and ``--base-url``."""
    kind, _, arg = spec.partition(":")
    if kind == "mock":
        try:
            rate = float(arg) if arg else 0.0
        except ValueError:
            raise InputError(f"--judge mock:{arg}: the error rate must be a number") from None
        return MockVlm(rate)
    if kind == "replay":
        if not arg:
            raise InputError("--judge replay:DIR needs a directory")
        return ReplayVlm(arg)
    if kind in ("openai-compatible", "anthropic"):
        if not arg:
            raise InputError(f"--judge {kind}:MODEL needs a model name")
        http = client or default_client()
        if kind == "anthropic":
            return AnthropicVlm(http, model=arg, base_url=base_url)
        return OpenAICompatibleVlm(http, model=arg, base_url=base_url)
    raise InputError(
        f"unknown judge {spec!r}: use one of openai-compatible:MODEL, anthropic:MODEL, "
        "replay:DIR, mock[:ERROR_RATE]"
    )
