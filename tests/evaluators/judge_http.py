"""A scripted VLM judge server on 127.0.0.1 for transport tests: it speaks both the OpenAI
chat-completions (``POST …/chat/completions``) and the Anthropic Messages (``POST
…/v1/messages``) protocols, and answers every question the way its ``answer`` function says
(it does not know the scene: it fakes what a judge's server does, not what the judge sees).

``answer(questions) -> str`` gets the numbered questions of the prompt (or the one question
of a ``--judge-batch 1`` call) and returns the reply text; ``status`` (``fail_first`` and
``status_code``) makes the server answer errors; ``latency_s`` delays every answer. It counts
``requests`` (answered 200) and ``attempts`` (every POST), and records every ``paths``.
It keeps connections alive (HTTP/1.1), so a client left open shows as an unclosed socket.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from vsb.validation.sim_judge import serve_json

Answerer = Callable[[list[str]], str]


def say(word: str) -> Answerer:
    """Answers every question with ``word`` in the asked format."""

    def answer(questions: list[str]) -> str:
        if len(questions) == 1 and not questions[0].startswith("1. "):
            return word
        return "\n".join(f"{i}: {word}" for i in range(1, len(questions) + 1))

    return answer


def _questions(text: str) -> list[str]:
    numbered = re.findall(r"^\d+\. .*$", text, flags=re.M)
    return numbered or [text.strip()]


class JudgeHttpServer:
    """A judge server in a daemon thread; use as a context manager."""

    def __init__(
        self,
        answer: Answerer,
        *,
        latency_s: float = 0.0,
        fail_first: int = 0,
        status_code: int = 503,
        usage: tuple[int, int] = (400, 6),
    ) -> None:
        self.answer = answer
        self.latency_s = latency_s
        self.fail_first = fail_first
        self.status_code = status_code
        self.usage = usage
        self.requests = 0
        self.attempts = 0
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self.httpd = serve_json(self.handle, keep_alive=True)

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def url(self) -> str:
        """The base URL for ``--base-url`` (``…/v1``)."""
        return f"{self.root}/v1"

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        due = time.monotonic() + self.latency_s
        with self._lock:
            self.attempts += 1
            self.paths.append(path)
            failing = self.attempts <= self.fail_first
        if failing:
            return self.status_code, {"error": {"message": "try again later"}}
        anthropic = path == "/v1/messages"
        if not anthropic and not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        content = body["messages"][-1]["content"]
        text = next(p["text"] for p in content if p.get("type") == "text")
        reply = self.answer(_questions(text))
        with self._lock:
            self.requests += 1
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        t_in, t_out = self.usage
        if anthropic:
            return 200, {
                "type": "message",
                "content": [{"type": "text", "text": reply}],
                "usage": {"input_tokens": t_in, "output_tokens": t_out},
            }
        return 200, {
            "choices": [{"message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": t_in, "completion_tokens": t_out},
        }

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> JudgeHttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
