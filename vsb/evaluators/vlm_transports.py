"""Transports of the VLM judge: one question about one image in, the model's raw text out.

Every transport offers ``ask(image_png, system, question) -> str``:

- ``OpenAICompatibleVlm``: ``POST {base_url}/chat/completions`` (the image as a data URI);
- ``AnthropicVlm``: ``POST {base_url}/v1/messages`` (a base64 image block);
- ``FixtureVlm``: replays answers stored in a JSONL file, keyed by ``fixture_key``;
- ``MockVlm``: answers from a function (tests, pipelines without a model).

HTTP transports take an injected ``httpx.Client`` and read their API key from the
environment at call time (``CredentialMissing`` when absent). They register by name in
``VLM_TRANSPORTS``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx

from vsb.errors import AdapterError, CredentialMissing, InputError
from vsb.registry import Registry


class VlmTransport(Protocol):
    """Asks a vision-language model one question about one image."""

    def ask(self, image_png: bytes, system: str, question: str) -> str:
        """The model's raw answer text."""
        ...


VLM_TRANSPORTS: Registry[type[Any]] = Registry("VLM transport")


def _credential(env: str) -> str:
    key = os.environ.get(env)
    if not key:
        raise CredentialMissing(f"the VLM judge needs an API key: set {env}")
    return key


def _b64(image_png: bytes) -> str:
    return base64.b64encode(image_png).decode("ascii")


def _post(client: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    try:
        resp = client.post(url, headers=headers, json=body)
    except httpx.HTTPError as err:
        raise AdapterError(f"VLM request to {url} failed: {err}") from err
    if resp.status_code >= 400:
        raise AdapterError(
            f"VLM request to {url} failed: HTTP {resp.status_code}: {resp.text[:200]}"
        )
    try:
        return resp.json()
    except ValueError as err:
        raise AdapterError(f"VLM response from {url} is not JSON") from err


@VLM_TRANSPORTS.register("openai")
class OpenAICompatibleVlm:
    """An OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp, …)."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        max_tokens: int = 16,
    ) -> None:
        self.client = client
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.max_tokens = max_tokens

    def ask(self, image_png: bytes, system: str, question: str) -> str:
        key = _credential(self.api_key_env)
        body = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "messages": [
                {"role": "system", "content": system},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/png;base64,{_b64(image_png)}"},
                        },
                        {"type": "text", "text": question},
                    ],
                },
            ],
        }
        url = f"{self.base_url}/chat/completions"
        data = _post(self.client, url, {"Authorization": f"Bearer {key}"}, body)
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as err:
            raise AdapterError(f"VLM response from {url} has no message content") from err
        if isinstance(content, list):  # content parts
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return "" if content is None else str(content)


@VLM_TRANSPORTS.register("anthropic")
class AnthropicVlm:
    """The Anthropic Messages API."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        model: str,
        base_url: str = "https://api.anthropic.com",
        api_key_env: str = "ANTHROPIC_API_KEY",
        version: str = "2023-06-01",
        max_tokens: int = 16,
    ) -> None:
        self.client = client
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.version = version
        self.max_tokens = max_tokens

    def ask(self, image_png: bytes, system: str, question: str) -> str:
        key = _credential(self.api_key_env)
        body = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "system": system,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": _b64(image_png),
                            },
                        },
                        {"type": "text", "text": question},
                    ],
                }
            ],
        }
        url = f"{self.base_url}/v1/messages"
        headers = {"x-api-key": key, "anthropic-version": self.version}
        data = _post(self.client, url, headers, body)
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise AdapterError(f"VLM response from {url} has no content blocks")
        return "".join(
            str(b.get("text", ""))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"
        )


def fixture_key(image_png: bytes, question: str) -> str:
    """sha256 over canonical JSON of (the image's sha256, the question)."""
    doc = {"image_sha256": hashlib.sha256(image_png).hexdigest(), "question": question}
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def fixture_row(image_png: bytes, question: str, answer: str) -> dict[str, str]:
    """One line of a fixture file (``key`` and ``answer``; the rest is for readers)."""
    return {
        "key": fixture_key(image_png, question),
        "image_sha256": hashlib.sha256(image_png).hexdigest(),
        "question": question,
        "answer": answer,
    }


@VLM_TRANSPORTS.register("fixture")
class FixtureVlm:
    """Replays stored answers: a JSONL file of ``{"key": fixture_key(...), "answer": ...}``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.answers: dict[str, str] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as err:
            raise InputError(f"cannot read VLM fixtures: {err.strerror}", file=self.path) from err
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputError(
                    f"invalid JSON: {err.msg}", file=self.path, location=f"line {n}"
                ) from err
            if not (
                isinstance(row, dict)
                and isinstance(row.get("key"), str)
                and isinstance(row.get("answer"), str)
            ):
                raise InputError(
                    "a fixture line needs string fields 'key' and 'answer'",
                    file=self.path,
                    location=f"line {n}",
                )
            self.answers[row["key"]] = row["answer"]

    def ask(self, image_png: bytes, system: str, question: str) -> str:
        key = fixture_key(image_png, question)
        try:
            return self.answers[key]
        except KeyError:
            sha = hashlib.sha256(image_png).hexdigest()
            raise InputError(
                f"no stored answer for question {question!r} on image sha256 {sha[:12]}… "
                f"(fixture key {key})",
                file=self.path,
            ) from None


@VLM_TRANSPORTS.register("mock")
class MockVlm:
    """Deterministic answers from ``answer(image_png, question)``; records every question."""

    def __init__(self, answer: Callable[[bytes, str], str]) -> None:
        self.answer = answer
        self.questions: list[str] = []

    def ask(self, image_png: bytes, system: str, question: str) -> str:
        self.questions.append(question)
        return self.answer(image_png, question)
