"""Every HTTP provider through the runner on ``httpx.MockTransport`` (issue #11): success,
image conditioning, retries (exact request counts), a spent quota, a refusal, timeouts in
the ledger, malformed and hostile answers, redirects and foreign hosts — no paid API is
ever called."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from vsb.adapters.providers._http import HttpAdapter
from vsb.adapters.providers.imagen import ImagenModel
from vsb.adapters.providers.openai import OpenAIImages
from vsb.adapters.providers.replicate import ReplicateModel
from vsb.adapters.providers.stability import StabilityImage
from vsb.generator.generate import generate_story, write_suite
from vsb.run.runner import RunConfig, RunResult, image_path, run
from vsb.store.calls import RetryPolicy

CAP = 50_000  # the adapters' answer-size cap in these tests
EVIL = "evil.example"


def _png(seed: bytes) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), tuple(hashlib.sha256(seed).digest()[:3])).save(buf, "PNG")
    return buf.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass
class Provider:
    """How one provider's API answers; ``billed`` tells its billed requests apart."""

    name: str
    env: str
    build: Callable[..., HttpAdapter]
    billed: Callable[[httpx.Request], bool]
    ok: Callable[[httpx.Request], httpx.Response]
    quota: httpx.Response
    refusal: Callable[[httpx.Request], httpx.Response]
    bad_json: httpx.Response
    not_image: Callable[[httpx.Request], httpx.Response]
    oversized: Callable[[httpx.Request], httpx.Response]
    extra: Callable[[httpx.Request], httpx.Response | None] = lambda r: None


def _replicate_extra(r: httpx.Request) -> httpx.Response | None:
    if r.url.host == "replicate.delivery":
        if r.url.path.endswith("/junk.png"):
            return httpx.Response(200, content=b"<html>not an image</html>")
        if r.url.path.endswith("/huge.png"):
            return httpx.Response(200, content=b"\0" * (CAP + 1))
        return httpx.Response(200, content=_png(r.url.path.encode()))
    return None


def _pred(output: str, status: str = "succeeded", **kw: Any) -> httpx.Response:
    return httpx.Response(201, json={"id": "p1", "status": status, "output": output, **kw})


PROVIDERS = {
    "openai": Provider(
        "openai:dall-e-3", "OPENAI_API_KEY",
        lambda **kw: OpenAIImages("dall-e-3", **kw),
        lambda r: r.method == "POST" and r.url.host == "api.openai.com",
        lambda r: httpx.Response(200, json={"data": [{"b64_json": _b64(_png(r.content))}]}),
        httpx.Response(429, json={"error": {
            "code": "insufficient_quota", "type": "insufficient_quota",
            "message": "You exceeded your current quota, please check your plan and billing "
            "details."}}),
        lambda r: httpx.Response(400, json={"error": {
            "code": "content_policy_violation",
            "message": "Your request was rejected as a result of our safety system."}}),
        httpx.Response(200, text="{not json", headers={"content-type": "application/json"}),
        lambda r: httpx.Response(200, json={"data": [{"b64_json": _b64(b"GIF89a nope")}]}),
        lambda r: httpx.Response(200, json={"data": [{"b64_json": "A" * CAP}]}),
    ),
    "replicate": Provider(
        "replicate:black-forest-labs/flux-schnell", "REPLICATE_API_TOKEN",
        lambda **kw: ReplicateModel("black-forest-labs/flux-schnell", **kw),
        lambda r: r.method == "POST" and r.url.host == "api.replicate.com",
        lambda r: _pred(f"https://replicate.delivery/{hashlib.md5(r.content).hexdigest()}.png"),
        httpx.Response(402, json={"detail": "You have insufficient credit to run this model."}),
        lambda r: _pred(None, "failed", error="NSFW content detected."),  # type: ignore[arg-type]
        httpx.Response(201, text="{not json", headers={"content-type": "application/json"}),
        lambda r: _pred("https://replicate.delivery/junk.png"),
        lambda r: _pred("https://replicate.delivery/huge.png"),
        _replicate_extra,
    ),
    "stability": Provider(
        "stability:core", "STABILITY_API_KEY",
        lambda **kw: StabilityImage("core", **kw),
        lambda r: r.method == "POST" and r.url.host == "api.stability.ai",
        lambda r: httpx.Response(200, content=_png(r.content),
                                 headers={"content-type": "image/png"}),
        httpx.Response(402, json={"name": "payment_required",
                                  "errors": ["You lack sufficient credits."]}),
        lambda r: httpx.Response(200, content=_png(b"blurred"), headers={
            "content-type": "image/png", "finish-reason": "CONTENT_FILTERED"}),
        httpx.Response(200, text="{not json", headers={"content-type": "application/json"}),
        lambda r: httpx.Response(200, content=b"junk", headers={"content-type": "image/png"}),
        lambda r: httpx.Response(200, content=b"\0" * (CAP + 1),
                                 headers={"content-type": "image/png"}),
    ),
    "imagen": Provider(
        "imagen:imagen-3.0-generate-002", "GOOGLE_API_KEY",
        lambda **kw: ImagenModel("imagen-3.0-generate-002", **kw),
        lambda r: r.method == "POST" and r.url.host == "generativelanguage.googleapis.com",
        lambda r: httpx.Response(200, json={
            "predictions": [{"bytesBase64Encoded": _b64(_png(r.content))}]}),
        httpx.Response(429, json={"error": {
            "code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "Quota exceeded: billing account has no credit left."}}),
        lambda r: httpx.Response(200, json={"predictions": []}),
        httpx.Response(200, text="{not json", headers={"content-type": "application/json"}),
        lambda r: httpx.Response(200, json={
            "predictions": [{"bytesBase64Encoded": _b64(b"junk")}]}),
        lambda r: httpx.Response(200, content=b" " * (CAP + 1),
                                 headers={"content-type": "application/json"}),
    ),
}  # fmt: skip
NAMES = list(PROVIDERS)


@dataclass
class Api:
    """A provider API on a mock transport: billed requests answer from ``script`` first
    (``ok``, ``429``, ``500``, ``quota``, ``refused``, ``timeout``, ``bad_json``,
    ``not_image``, ``oversized``, ``redirect``, ``echo``), then successfully."""

    p: Provider
    script: list[str] = field(default_factory=list)
    seen: list[httpx.Request] = field(default_factory=list)

    def __call__(self, r: httpx.Request) -> httpx.Response:
        self.seen.append(r)
        if r.url.host == EVIL:
            return httpx.Response(200, content=_png(b"evil"))
        extra = self.p.extra(r)
        if extra is not None:
            return extra
        if not self.p.billed(r):
            return self.p.ok(r)
        step = self.script.pop(0) if self.script else "ok"
        if step == "429":
            return httpx.Response(429, text="slow down", headers={"retry-after": "0"})
        if step == "500":
            return httpx.Response(500, text="upstream hiccup")
        if step == "timeout":
            raise httpx.ReadTimeout("no answer", request=r)
        if step == "redirect":
            return httpx.Response(307, headers={"location": f"https://{EVIL}/v1/steal"})
        if step == "echo":  # a hostile server: the request, key and all, in the error
            dump = json.dumps({"url": str(r.url), "headers": dict(r.headers)})
            return httpx.Response(400, text=f"bad request: {dump}")
        if step in ("quota", "bad_json"):
            ans: httpx.Response = getattr(self.p, step)
            return httpx.Response(ans.status_code, content=ans.content, headers=ans.headers)
        if step in ("refused", "not_image", "oversized"):
            fn = {"refused": self.p.refusal, "not_image": self.p.not_image,
                  "oversized": self.p.oversized}[step]  # fmt: skip
            return fn(r)
        return self.p.ok(r)

    def billed(self) -> list[httpx.Request]:
        return [r for r in self.seen if self.p.billed(r)]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for p in PROVIDERS.values():
        monkeypatch.setenv(p.env, f"canary-{p.env.lower()}-kZq7Wx")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suite")
    write_suite([generate_story("wardrobe", "easy", "w", seed=1)], out, seed=0)  # 3 scenes
    return out


def _run(
    suite: Path,
    tmp: Path,
    api: Api,
    *,
    conditions: tuple[str, ...] = ("independent",),
    attempts: int = 3,
    model: str | None = None,
    build: Callable[..., HttpAdapter] | None = None,
    **kw: Any,
) -> tuple[RunResult, list[dict[str, Any]]]:
    # the client would follow redirects: the adapters must not let it
    client = httpx.Client(transport=httpx.MockTransport(api), follow_redirects=True)
    name = model or api.p.name
    adapter = (build or api.p.build)(client=client, max_bytes=CAP, sleep=lambda s: None, **kw)
    config = RunConfig(
        suite_dir=suite, models=[name], conditions=list(conditions), out=tmp / "run",
        cache_dir=tmp / "cache", concurrency=1,
        retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.0),
    )  # fmt: skip
    res = run(config, adapters={name: adapter})
    lines = (tmp / "run" / "records.jsonl").read_text().splitlines()
    return res, [json.loads(x) for x in lines]


def _attempts(tmp: Path) -> list[tuple[str, int, str | None, float | None]]:
    with sqlite3.connect(tmp / "run" / "ledger.sqlite") as db:
        rows = db.execute(
            "SELECT status, success, error, cost_usd FROM requests WHERE cache_hit = 0 "
            "ORDER BY rowid"
        ).fetchall()
    return [(str(s), int(ok), e, c) for s, ok, e, c in rows]


def _no_canary_in(tmp: Path) -> None:
    for path in tmp.rglob("*"):
        if path.is_file():
            assert b"kZq7Wx" not in path.read_bytes(), path


@pytest.mark.parametrize("name", NAMES)
def test_success_then_a_rerun_sends_nothing(name: str, suite: Path, tmp_path: Path) -> None:
    api = Api(PROVIDERS[name])
    res, recs = _run(suite, tmp_path, api)
    assert (res.images, res.failures, len(api.billed())) == (3, 0, 3)
    for r in recs:
        assert r["error"] is None and r["refused"] is False
        png = (tmp_path / "run" / r["path"]).read_bytes()
        assert png.startswith(b"\x89PNG") and hashlib.sha256(png).hexdigest() == r["sha256"]
    assert [a[:3] for a in _attempts(tmp_path)] == [("done", 1, None)] * 3
    again, _ = _run(suite, tmp_path, api)
    assert (again.calls, again.hits, len(api.billed())) == (0, 3, 3)
    _no_canary_in(tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_429_then_success_exact_count(name: str, suite: Path, tmp_path: Path) -> None:
    api = Api(PROVIDERS[name], ["429"])
    res, _ = _run(suite, tmp_path, api)
    assert res.images == 3 and len(api.billed()) == 4  # one retry, nothing more
    att = _attempts(tmp_path)
    assert len(att) == 4 and att[0][:2] == ("done", 0) and "HTTP 429" in str(att[0][2])
    assert att[0][3] == 0.0  # an error answer is not billed
    assert all(a[:3] == ("done", 1, None) for a in att[1:])


@pytest.mark.parametrize("name", NAMES)
def test_500s_then_success(name: str, suite: Path, tmp_path: Path) -> None:
    api = Api(PROVIDERS[name], ["500", "500", "500"])
    res, _ = _run(suite, tmp_path, api, attempts=4)
    assert res.images == 3 and len(api.billed()) == 6
    assert [a[1] for a in _attempts(tmp_path)] == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("name", NAMES)
def test_a_spent_quota_stops_the_model_after_one_request(
    name: str, suite: Path, tmp_path: Path
) -> None:
    api = Api(PROVIDERS[name], ["quota"])
    res, recs = _run(suite, tmp_path, api)
    assert len(api.billed()) == 1  # never retried, nothing else sent
    assert "quota exhausted" in res.skipped[api.p.name] and not recs
    assert res.problems()
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["models"] == []
    assert _attempts(tmp_path)[0][:2] == ("done", 0)


@pytest.mark.parametrize("name", NAMES)
def test_a_refusal_is_a_recorded_result_not_retried_nor_resent(
    name: str, suite: Path, tmp_path: Path
) -> None:
    api = Api(PROVIDERS[name], ["refused"])
    res, recs = _run(suite, tmp_path, api)
    assert len(api.billed()) == 3  # the refusal was not retried
    (bad,) = [r for r in recs if r["error"]]
    assert bad["refused"] is True and bad["path"] is None
    assert (res.refused, res.failures, res.images) == (1, 1, 2)
    again, recs2 = _run(suite, tmp_path, api)
    assert len(api.billed()) == 3 and again.refused == 1  # the rerun did not ask again
    assert [r["refused"] for r in recs2] == [r["refused"] for r in recs]


@pytest.mark.parametrize("name", NAMES)
def test_timeouts_are_attempts_in_the_ledger(name: str, suite: Path, tmp_path: Path) -> None:
    api = Api(PROVIDERS[name], ["timeout", "timeout"])
    res, recs = _run(suite, tmp_path, api, attempts=2)
    assert len(api.billed()) == 4 and res.failures == 1
    att = _attempts(tmp_path)
    assert [a[:2] for a in att[:2]] == [("done", 0), ("done", 0)]
    assert all("timed out" in str(a[2]) for a in att[:2])
    assert "gave up after 2 attempts" in next(r["error"] for r in recs if r["error"])
    # a timed-out request may have been billed: counted at the list price, never as free
    assert att[0][3] is not None and att[0][3] > 0


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("bad_json", r"expected JSON|expected an image"),
        ("not_image", "not a readable image"),
        ("oversized", "byte cap"),
        ("redirect", "redirect"),
    ],
)
def test_bad_answers_fail_one_image(
    name: str, step: str, message: str, suite: Path, tmp_path: Path
) -> None:
    api = Api(PROVIDERS[name], [step])
    res, recs = _run(suite, tmp_path, api)
    (bad,) = [r for r in recs if r["error"]]
    assert re.search(message, bad["error"]), bad
    assert res.images == 2 and len(api.billed()) == 3  # not retried
    assert not [r for r in api.seen if r.url.host == EVIL]  # no redirect was followed
    _no_canary_in(tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_an_echoing_server_never_gets_the_key_into_a_file(
    name: str, suite: Path, tmp_path: Path
) -> None:
    api = Api(PROVIDERS[name], ["echo"])
    res, recs = _run(suite, tmp_path, api)
    assert res.failures == 1 and "bad request" in next(r["error"] for r in recs if r["error"])
    _no_canary_in(tmp_path)  # records, ledger, cache: redacted


def test_image_conditioning_openai_edits(suite: Path, tmp_path: Path) -> None:
    api = Api(PROVIDERS["openai"])
    res, _ = _run(
        suite, tmp_path, api, conditions=("independent", "previous_image"),
        model="openai:gpt-image-1", build=lambda **kw: OpenAIImages("gpt-image-1", **kw),
    )  # fmt: skip
    assert res.images == 6 and not res.not_supported
    edits = [r for r in api.seen if r.url.path == "/v1/images/edits"]
    assert len(edits) == 2  # scenes 2 and 3 (scene 1 is the independent request)
    first = tmp_path / "run" / image_path("openai:gpt-image-1", "previous_image", "w", 1)
    assert first.read_bytes() in edits[0].content


def test_image_conditioning_replicate_kontext(suite: Path, tmp_path: Path) -> None:
    api = Api(PROVIDERS["replicate"])
    name = "replicate:black-forest-labs/flux-kontext-pro"
    res, _ = _run(
        suite, tmp_path, api, conditions=("previous_image",), model=name,
        build=lambda **kw: ReplicateModel(name.partition(":")[2], **kw),
    )  # fmt: skip
    assert res.images == 3
    bodies = [json.loads(r.content)["input"] for r in api.billed()]
    assert "input_image" not in bodies[0]
    prev = (tmp_path / "run" / image_path(name, "previous_image", "w", 1)).read_bytes()
    assert bodies[1]["input_image"] == "data:image/png;base64," + _b64(prev)


@pytest.mark.parametrize("name", ["stability", "imagen", "openai"])
def test_no_image_input_means_previous_image_is_not_run(
    name: str, suite: Path, tmp_path: Path
) -> None:
    """Regression: a model without image input was run under previous_image as the
    independent request (a cache hit), with no word to the user."""
    api = Api(PROVIDERS[name])
    res, recs = _run(suite, tmp_path, api, conditions=("independent", "previous_image"))
    assert {r["condition"] for r in recs} == {"independent"}
    assert res.not_supported == {api.p.name: ["previous_image"]}
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["not_supported"] == {api.p.name: ["previous_image"]}


def test_replicate_urls_get_on_another_host_gets_no_token(suite: Path, tmp_path: Path) -> None:
    """Regression: the token went to whatever host a prediction's urls.get named."""

    def pending(r: httpx.Request) -> httpx.Response:
        return _pred(None, "processing", urls={"get": f"https://{EVIL}/v1/predictions/p1"})  # type: ignore[arg-type]

    p = PROVIDERS["replicate"]
    api = Api(Provider(**{**p.__dict__, "ok": pending}))
    res, recs = _run(suite, tmp_path, api)
    assert res.failures == 3 and all("not on the API host" in r["error"] for r in recs)
    assert not [r for r in api.seen if r.url.host == EVIL]  # not even without the token
    _no_canary_in(tmp_path)


def test_downloads_follow_same_host_redirects_only(suite: Path, tmp_path: Path) -> None:
    def delivery(r: httpx.Request) -> httpx.Response | None:
        if r.url.path == "/a.png":  # same host: followed
            return httpx.Response(302, headers={"location": "/b.png"})
        if r.url.path == "/b.png":
            return httpx.Response(200, content=_png(b"b"))
        if r.url.path == "/c.png":  # another host: refused
            return httpx.Response(302, headers={"location": f"https://{EVIL}/c.png"})
        return None

    outputs = iter(["a", "c", "a"])
    p = PROVIDERS["replicate"]
    api = Api(Provider(**{
        **p.__dict__,
        "ok": lambda r: _pred(f"https://replicate.delivery/{next(outputs)}.png"),
        "extra": lambda r: delivery(r) if r.url.host == "replicate.delivery" else None,
    }))  # fmt: skip
    res, recs = _run(suite, tmp_path, api)
    assert res.images == 2 and "redirects to another host" in str(recs[1]["error"])
    assert not [r for r in api.seen if r.url.host == EVIL]
    # and the token never went to the delivery host
    assert all("authorization" not in r.headers for r in api.seen if r.method == "GET")


def test_http_only_to_loopback(suite: Path, tmp_path: Path) -> None:
    api = Api(PROVIDERS["openai"])
    res, recs = _run(suite, tmp_path, api, base_url="http://api.example.com/v1")
    assert res.failures == 3 and "https only" in recs[0]["error"] and not api.seen
    ok = Api(PROVIDERS["openai"])
    ok.p = Provider(**{**ok.p.__dict__, "billed": lambda r: r.method == "POST"})
    res, _ = _run(suite, tmp_path / "b", ok, base_url="http://127.0.0.1:9/v1")
    assert res.images == 3 and str(ok.seen[0].url).startswith("http://127.0.0.1:9/v1/images/")


def test_default_client_follows_no_redirect() -> None:
    """Regression: the real client followed redirects to any host."""
    from vsb.adapters.providers._http import default_client

    assert default_client().follow_redirects is False
