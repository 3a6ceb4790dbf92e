"""A simulated VLM judge: an OpenAI chat-completions server on 127.0.0.1 that answers from the
sealed oracle of a simulator run, wrong on purpose at a known rate.

It exists to validate the judging pipeline end to end (``vsb evaluate --evaluator vlm
--judge openai-compatible:sim --base-url URL`` then ``vsb validate-judge``) and to measure
judge throughput (``benchmarks/bench_judge.py``): the pipeline must recover the injected
error rate, send one request per scene, and pay nothing on a rerun.

How it answers one request: the image's sha256 names the frame (model, condition, story,
scene) through ``records.jsonl``; each numbered question is matched to the requirement (or
object probe) it asks about. A requirement's truth is ``vsb.validation.truth``'s (the same
that validation measures error rates against). Each answer is flipped with probability
``error_rate``, drawn from ``numpy.random.default_rng([seed, hash of frame and question])``.
Only vsb.validation reads the oracle; this module belongs here for that reason.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol, Self, TypedDict, Unpack
from urllib.parse import urlsplit

import httpx
import numpy as np

from vsb.evaluators.vlm.questions import order_probe, pair_questions, question_for
from vsb.evaluators.vlm_judge import (
    colour_probe_question,
    held_objects,
    order_pairs,
    people_count,
    people_question,
)
from vsb.fsio import iter_jsonl
from vsb.story.io import load_suite
from vsb.validation.truth import PairTruth, requirement_true

FrameKey = tuple[str, str, str, int]
_ALIASES = {"hair_color": "hair", "hair_style": "hair"}  # "color": a recolour (truth.py)
_PROBE = re.compile(r"^Is there an? (\w+) of any colour in the picture\?$")
_DATA_URI = re.compile(r"^data:[^;]+;base64,(.*)$", re.S)


def _yes(ok: bool) -> str:
    return "YES" if ok else "NO"


class SimJudge:
    """The answering logic (no HTTP): frames, questions, truth and seeded errors."""

    def __init__(self, run_dir: str | Path, *, error_rate: float = 0.0, seed: int = 0) -> None:
        root = Path(run_dir)
        self.error_rate = error_rate
        self.seed = seed
        stories = {s.id: s for s in load_suite(root / "suite")}
        self.frames: dict[str, FrameKey] = {}
        self.all_frames: dict[str, list[FrameKey]] = defaultdict(list)
        self.sha_of: dict[FrameKey, str] = {}
        for _, rec in iter_jsonl(root / "records.jsonl"):
            if rec.get("error") is None:
                sha = hashlib.sha256((root / rec["path"]).read_bytes()).hexdigest()
                frame = (rec["model"], rec["condition"], rec["story_id"], int(rec["scene"]))
                self.frames.setdefault(sha, frame)
                self.all_frames[sha].append(frame)
                self.sha_of[frame] = sha
        self.faults: dict[FrameKey, set[tuple[str, str]]] = defaultdict(set)
        self.gone: dict[FrameKey, set[str]] = defaultdict(set)  # objects not drawn at all
        oracle = root / "oracle" / "faults.jsonl"
        if oracle.is_file():
            for _, f in iter_jsonl(oracle):
                if f.get("visual", True):
                    key = (f["model"], f["condition"], f["story_id"], int(f["scene"]))
                    attr = _ALIASES.get(str(f["attribute"]), str(f["attribute"]))
                    self.faults[key].add((str(f["subject"]), attr))
                    if f["attribute"] == "present" and f.get("rendered_value") is False:
                        self.gone[key].add(str(f["subject"]))
        self.stories = stories
        raw = [f for _, f in iter_jsonl(oracle)] if oracle.is_file() else []
        self.pairs = PairTruth(stories.values(), raw)

    def _flip(self, answer: str, frame: FrameKey, ident: str) -> str:
        model, cond, sid, k = frame
        digest = hashlib.sha256(f"{model}|{cond}|{sid}|{k}|{ident}".encode()).digest()
        rng = np.random.default_rng([self.seed, int.from_bytes(digest[:8], "big")])
        if rng.random() < self.error_rate:
            return "NO" if answer == "YES" else "YES"
        return answer

    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[str]:
        """Answers to cross-frame questions about two consecutive frames."""
        a = hashlib.sha256(first).hexdigest()
        b = hashlib.sha256(second).hexdigest()
        frame = next(
            (f for f in self.all_frames.get(b, []) if self.sha_of.get((*f[:3], f[3] - 1)) == a),
            None,
        )
        if frame is None:
            return ["UNSURE"] * len(questions)
        scenes = self.stories[frame[2]].scenes
        asked = {
            q.text: (r, q) for r, q in pair_questions(scenes[frame[3] - 2], scenes[frame[3] - 1])
        }
        out = []
        for text in questions:
            if text not in asked:
                out.append("UNSURE")
                continue
            req, _ = asked[text]
            alike = self.pairs.alike(frame, req.subject, req.attribute)
            answer = "YES" if alike else "NO"
            out.append(self._flip(answer, frame, req.id))
        return out

    def answers(self, image: bytes, questions: list[str]) -> list[str]:
        """YES/NO answers to the questions (texts as asked) about the image's scene; each text
        is matched to the first requirement of the scene whose question it is."""
        frame = self.frames.get(hashlib.sha256(image).hexdigest())
        if frame is None:
            return ["UNSURE"] * len(questions)
        model, cond, sid, k = frame
        scene = self.stories[sid].scenes[k - 1]
        asked = [(r, question_for(r, scene.state)) for r in scene.requirements]
        faults = self.faults.get(frame, set())
        st = scene.state
        coloured = {  # held objects in the story's colour: gone or recoloured -> NO
            colour_probe_question(k, st.objects[k].color).text: k for k in held_objects(scene)
        }
        shown = self.pairs.rendered(frame, "scene", "order")
        shown = [n for n in shown if self.pairs.rendered(frame, n, "present")]
        pairs = {order_probe(st, a, b).text: (a, b) for a, b in order_pairs(scene)}
        n = people_count(scene)
        people = {people_question(n + j).text: n + j for j in range(n and len(st.characters) + 1)}
        out = []
        for text in questions:
            probe = _PROBE.match(text)
            i = next((j for j, (_, q) in enumerate(asked) if q.text == text), None)
            if probe is not None:  # "is there an umbrella of any colour?"
                answer, ident = ("NO" if probe.group(1) in self.gone[frame] else "YES"), text
            elif i is None and text in coloured:
                kind = coloured[text]
                bad = kind in self.gone[frame] or (kind, "color") in faults
                answer, ident = ("NO" if bad else "YES"), text
            elif i is None and text in people:
                drawn = [c for c in st.characters if self.pairs.rendered(frame, c, "present")]
                answer, ident = _yes(len(drawn) == people[text]), text
            elif i is None and text in pairs:
                a, b = pairs[text]
                ok = a in shown and b in shown and shown.index(a) < shown.index(b)
                answer, ident = ("YES" if ok else "NO"), text
            elif i is None:
                out.append("UNSURE")
                continue
            else:
                req, q = asked.pop(i)
                ok = requirement_true(req.subject, req.attribute, req.expected, faults)
                answer, ident = (q.expect if ok else ("NO" if q.expect == "YES" else "YES")), req.id
            digest = hashlib.sha256(f"{model}|{cond}|{sid}|{k}|{ident}".encode()).digest()
            rng = np.random.default_rng([self.seed, int.from_bytes(digest[:8], "big")])
            if rng.random() < self.error_rate:
                answer = "NO" if answer == "YES" else "YES"
            out.append(answer)
        return out


class Answerer(Protocol):
    """What a served judge does: answers to the numbered questions of one or two images. It
    may also answer about more than two in one request (VinaBench's consistency questions)
    with ``many_answers(images, questions)``; without it, the first image is asked about."""

    def answers(self, image: bytes, questions: list[str]) -> list[str]: ...
    def pair_answers(self, first: bytes, second: bytes, questions: list[str]) -> list[str]: ...


def json_reply(status: int, reply: dict[str, Any]) -> tuple[dict[str, str], bytes]:
    """The headers and body ``serve_json`` sends for ``(status, reply)`` (a 429 carries
    ``Retry-After: 0``); the in-process transport answers the same bytes."""
    data = json.dumps(reply).encode()
    headers = {"content-type": "application/json", "content-length": str(len(data))}
    if status == 429:
        headers["retry-after"] = "0"
    return headers, data


class JsonTransport(httpx.BaseTransport):
    """``handle(path, body)`` answered in this process: each request's JSON body goes to
    ``handle`` and its ``(status, reply)`` comes back as the bytes and headers ``serve_json``
    would send, with no socket and no server thread (``httpx.MockTransport``'s idea)."""

    def __init__(self, handle: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]):
        self.handle = handle

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read() or b"{}")
        status, reply = self.handle(request.url.raw_path.decode("ascii"), body)
        headers, data = json_reply(status, reply)
        return httpx.Response(status, headers=headers, content=data, request=request)


_dumps, _loads = json.dumps, json.loads  # DirectClient.post's ``json`` is its body


class DirectClient(httpx.Client):
    """An ``httpx.Client`` whose JSON POSTs ``handle(path, body)`` answers directly: the
    request body goes through JSON text and back (as on the wire) and the reply is the
    bytes and headers ``serve_json`` would send, without httpx's request machinery (URL
    merging, cookies, auth, redirects: ~0.2 ms a call, 2.5 s of the main job's ~13,000
    reference-judge calls). Any other request goes through ``JsonTransport``."""

    def __init__(self, handle: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]):
        super().__init__(transport=JsonTransport(handle), follow_redirects=False)
        self._handle = handle

    def post(self, url: Any, *, json: Any = None, **kwargs: Any) -> httpx.Response:
        if json is None or set(kwargs) - {"headers"}:
            return super().post(url, json=json, **kwargs)
        body = _loads(_dumps(json))  # what a server would read
        status, reply = self._handle(urlsplit(str(url)).path or "/", body)
        headers, data = json_reply(status, reply)
        return httpx.Response(status, headers=headers, content=data)


def serve_json(
    handle: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]],
    *,
    keep_alive: bool = False,
) -> ThreadingHTTPServer:
    """A JSON-over-HTTP server on 127.0.0.1 (a free port) in a daemon thread: each POST's
    body goes to ``handle(path, body)``, whose ``(status, reply)`` is sent back as JSON (a 429
    with ``Retry-After: 0``). ``keep_alive``: HTTP/1.1, so clients must close their
    connections, as with real servers. Stop it with ``shutdown()`` and ``server_close()``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, reply = handle(self.path, body)
            headers, data = json_reply(status, reply)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


#: The base URL of an in-process endpoint (loopback: no API key needed; nothing listens).
IN_PROCESS_URL = "http://127.0.0.1/v1"


class EndpointOptions(TypedDict, total=False):
    """``JudgeEndpoint``'s keywords, as a subclass passes them on."""

    latency_s: float
    fail_first: int
    keep_bodies: bool


class JudgeEndpoint:
    """An ``Answerer`` behind ``POST /v1/chat/completions``: the OpenAI chat-completions
    wire format, one answer per numbered question, answered in this process through
    ``client()`` (``JudgeServer`` serves the same answers over HTTP on 127.0.0.1).

    ``latency_s`` delays every answer (throughput benchmarks); ``fail_first`` answers the
    first N requests with HTTP 429 and ``Retry-After: 0`` (retry tests); ``requests``
    counts the chat requests that got an answer, ``attempts`` every POST; ``bodies`` holds
    each answered request's JSON body, images included (``keep_bodies=False``: none, for a
    long pass whose requests no one reads back)."""

    def __init__(
        self,
        judge: Answerer,
        *,
        latency_s: float = 0.0,
        fail_first: int = 0,
        keep_bodies: bool = True,
    ) -> None:
        self.judge = judge
        self.latency_s = latency_s
        self.fail_first = fail_first
        self.keep_bodies = keep_bodies
        self.requests = 0
        self.attempts = 0
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The base URL to give the judge's transport."""
        return IN_PROCESS_URL

    def client(self) -> httpx.Client:
        """An ``httpx.Client`` whose requests this endpoint answers in process (the caller
        closes it)."""
        return httpx.Client(transport=JsonTransport(self.handle), follow_redirects=False)

    def direct_client(self) -> httpx.Client:
        """``client()`` without httpx's request machinery for its JSON POSTs
        (``DirectClient``): the same bytes back, for the main job's long passes."""
        return DirectClient(self.handle)

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, JSON reply) of one POST, ``latency_s`` after it arrived (the answer's
        computation is part of the latency, as on a real server)."""
        due = time.monotonic() + self.latency_s
        with self._lock:
            self.attempts += 1
            if self.attempts <= self.fail_first:
                return 429, {"error": {"message": "rate limited"}}
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        user = body["messages"][-1]["content"]
        uris = [p["image_url"]["url"] for p in user if p.get("type") == "image_url"]
        text = next(p["text"] for p in user if p.get("type") == "text")
        images = [base64.b64decode(m.group(1)) if (m := _DATA_URI.match(u)) else b"" for u in uris]
        numbered = re.findall(r"^\d+\. (.*)$", text, flags=re.M)
        many = getattr(self.judge, "many_answers", None)  # a judge of several pictures
        if len(images) > 2 and many is not None:
            answers = many(images, numbered or [text.strip()])
        elif len(images) == 2:
            answers = self.judge.pair_answers(images[0], images[1], numbered or [text.strip()])
        else:
            answers = self.judge.answers(images[0], numbered or [text.strip()])
        n = len(answers)
        content = (
            "\n".join(f"{i}: {a}" for i, a in enumerate(answers, start=1))
            if numbered
            else answers[0]
        )
        with self._lock:
            self.requests += 1
            if self.keep_bodies:
                self.bodies.append(body)
        usage = {"prompt_tokens": 300 + len(text) // 4, "completion_tokens": 4 * n}
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        return 200, {
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": usage,
        }

    def close(self) -> None:
        """Nothing to stop in process (``JudgeServer`` stops its server)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JudgeServer(JudgeEndpoint):
    """A ``JudgeEndpoint`` served over HTTP on 127.0.0.1 (a free port, a daemon thread)."""

    def __init__(self, judge: Answerer, **options: Unpack[EndpointOptions]) -> None:
        super().__init__(judge, **options)
        self.httpd = serve_json(self.handle)

    @property
    def url(self) -> str:
        """The base URL to give ``--base-url``."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()


class SimJudgeServer(JudgeServer):
    """``SimJudge`` (answers from the oracle, wrong at ``error_rate``) as a ``JudgeServer``."""

    def __init__(
        self,
        run_dir: str | Path,
        *,
        error_rate: float = 0.0,
        seed: int = 0,
        latency_s: float = 0.0,
        fail_first: int = 0,
    ) -> None:
        super().__init__(
            SimJudge(run_dir, error_rate=error_rate, seed=seed),
            latency_s=latency_s,
            fail_first=fail_first,
        )
