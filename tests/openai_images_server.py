"""A local OpenAI-compatible images server for tests and benchmarks (run as a script).

``python tests/openai_images_server.py --log FILE [--latency S] [--p429 P] [--seed N]
[--echo-every K]`` listens on 127.0.0.1 (a free port, printed as ``PORT <n>`` on stdout)
and answers ``POST /v1/images/generations`` like OpenAI: ``{"data": [{"b64_json": PNG}]}``
after ``--latency`` seconds, the PNG a pure function of the request body (so a request sent
twice gets the same image; its pixels spell the body's sha256, ``body_sha``). With
probability ``--p429`` (a seeded numpy Generator) it answers ``429`` with
``Retry-After: 0.05`` instead; every ``--echo-every``-th request gets a ``500`` whose body
echoes the request line and every header, credential included (a hostile server, for
canary tests). Every request is logged to ``--log`` as JSON lines when
it has arrived whole (``recv``; one cut off while the client sent it is ``partial``,
unanswered) and when its answer has been written (``done``, with the status).

It also bills the two other paid paths of vsb (issue 35): ``POST /v1/chat/completions`` is
answered as the VLM judge's server (every numbered question ``YES``) or, for the narrative
importer's system prompt, as a careful LLM (vsb's own reading of the narrative,
``vsb.narrative.reader``), with token usage. ``--fail-first 1`` answers ``500`` to the first
request of each distinct body (a server that fails each first attempt); ``--hang-first S``
holds the first request of each distinct body ``S`` seconds before answering (a hanging
server: the client's ``--timeout`` gives up first); ``--p500 P`` answers ``500`` to any
request with probability P (seeded), on every route.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image


def png_for(body: bytes) -> bytes:
    """An 8×8 PNG whose RGB bytes are sha256(``body``) over and over (``body_sha`` reads it
    back: a stored image names the request that made it)."""
    buf = io.BytesIO()
    Image.frombytes("RGB", (8, 8), hashlib.sha256(body).digest() * 6).save(buf, "PNG")
    return buf.getvalue()


def body_sha(png: bytes) -> str:
    """The sha256 (hex) of the request body an image of ``png_for`` was made for."""
    with Image.open(io.BytesIO(png)) as im:
        return im.convert("RGB").tobytes()[:32].hex()


def chat_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions answer: the importer's extraction (vsb's reading of the narrative)
    or the judge's (``YES`` to every numbered question)."""
    from vsb.narrative.answer import SYSTEM_PROMPT, scenes_of_prompt
    from vsb.narrative.reader import read_story

    messages = body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    content = messages[-1]["content"]
    prompt = (
        content
        if isinstance(content, str)
        else "".join(p.get("text", "") for p in content if isinstance(p, dict))
    )
    if system == SYSTEM_PROMPT:
        text = json.dumps(read_story(scenes_of_prompt(prompt)))
    else:
        numbered = [line for line in prompt.splitlines() if line[:1].isdigit() and ". " in line]
        text = "\n".join(f"{i}: YES" for i in range(1, len(numbered) + 1)) if numbered else "YES"
    return {
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 400, "completion_tokens": 6},
    }


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = np.random.default_rng(args.seed)
        self.lock = threading.Lock()
        self.n = 0
        self.seen: set[str] = set()
        self.log = Path(args.log).open("a", encoding="utf-8")  # noqa: SIM115 - for the server's life

    def write(self, event: dict[str, Any]) -> None:
        with self.lock:
            self.log.write(json.dumps(event) + "\n")
            self.log.flush()


def make_handler(state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # small writes go out at once (no 40 ms stalls)

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            if len(body) < length:  # the client died while sending: no request to answer
                state.write({"ev": "partial", "got": len(body), "t": time.time()})
                self.close_connection = True
                return
            a = state.args
            with state.lock:
                n = state.n
                state.n += 1
                busy = bool(state.rng.random() < a.p429)
                broken = bool(a.p500 > 0 and state.rng.random() < a.p500)
            echo = a.echo_every > 0 and n % a.echo_every == a.echo_every - 1
            sha = hashlib.sha256(body).hexdigest()
            with state.lock:
                first = sha not in state.seen
                state.seen.add(sha)
            state.write({
                "ev": "recv", "n": n, "sha": sha, "t": time.time(), "path": self.path,
                "auth": self.headers.get("authorization", ""),
            })  # fmt: skip
            time.sleep(a.latency + (a.hang_first if first else 0.0))
            headers: dict[str, str] = {"content-type": "application/json"}
            if (a.fail_first and first) or broken:
                status, out = 500, b'{"error": {"message": "internal error, try again"}}'
            elif self.path == "/v1/chat/completions":
                status, out = 200, json.dumps(chat_answer(json.loads(body))).encode()
            elif self.path != "/v1/images/generations":
                status, out = 404, b'{"error": {"message": "no such endpoint"}}'
            elif echo:
                dump = {
                    "authorization": self.headers.get("authorization", ""),
                    "request": self.requestline,
                    "headers": dict(self.headers.items()),
                }
                status, out = 500, json.dumps({"error": {"message": json.dumps(dump)}}).encode()
            elif busy:
                status, out = 429, b'{"error": {"message": "Rate limit reached, try again"}}'
                headers["retry-after"] = "0.05"
            else:
                image = base64.b64encode(png_for(body)).decode()
                status = 200
                doc = {"created": int(time.time()), "data": [{"b64_json": image}]}
                out = json.dumps(doc).encode()
            try:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
                self.wfile.flush()
            except OSError:  # the client is gone (killed): the answer never left
                self.close_connection = True
                return
            state.write({"ev": "done", "n": n, "sha": sha, "status": status, "t": time.time()})

    return Handler


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--p429", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--echo-every", type=int, default=0)
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--p500", type=float, default=0.0)
    ap.add_argument("--hang-first", type=float, default=0.0)
    args = ap.parse_args(argv)
    state = State(args)
    ThreadingHTTPServer.request_queue_size = 128  # many clients connect at once
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    httpd.daemon_threads = True
    sys.stdout.write(f"PORT {httpd.server_address[1]}\n")
    sys.stdout.flush()
    httpd.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()
