"""Provider adapters through ``httpx.MockTransport`` only: no paid API is ever called."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from PIL import Image

from vsb.adapters.base import PNG_SIGNATURE, GenerationRequest, Privileged
from vsb.adapters.providers.imagen import ImagenModel
from vsb.adapters.providers.openai import OpenAIImageEdits, OpenAIImages
from vsb.adapters.providers.replicate import ReplicateKontext, ReplicateModel
from vsb.adapters.providers.stability import StabilityImage
from vsb.adapters.registry import get_adapter, model_names
from vsb.cli.main import main
from vsb.conditions import ConditionContext
from vsb.errors import AdapterError, CredentialMissing
from vsb.generator.generate import generate_story, write_suite

Handler = Callable[[httpx.Request], httpx.Response]
KEYS = ("OPENAI_API_KEY", "REPLICATE_API_TOKEN", "STABILITY_API_KEY", "GOOGLE_API_KEY")


def _image(fmt: str = "PNG", color: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format=fmt, lossless=True)
    return buf.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _client(handler: Handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def _req(adapter: object, refs: tuple[bytes, ...] = (), **kw: object) -> GenerationRequest:
    params = adapter.parameters()  # type: ignore[attr-defined]
    return GenerationRequest(
        "m",
        "1",
        "a red kite",
        7,
        ConditionContext("independent"),
        params,
        refs,
        **kw,  # type: ignore[arg-type]
    )


def _is_png(data: bytes, color: tuple[int, int, int] = (255, 0, 0)) -> bool:
    with Image.open(io.BytesIO(data)) as im:
        return data.startswith(PNG_SIGNATURE) and im.convert("RGB").getpixel((0, 0)) == color


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in KEYS:
        monkeypatch.setenv(k, f"test-{k.lower()}")


def test_registered_names() -> None:
    names = model_names()
    for n in (
        "openai:gpt-image-1", "openai:dall-e-3", "replicate:black-forest-labs/flux-schnell",
        "replicate:black-forest-labs/flux-kontext-pro", "stability:core", "stability:sd3",
        "imagen:imagen-3.0-generate-002", "stored",
    ):  # fmt: skip
        assert n in names
        assert get_adapter(n).name == n or n == "stored"
    assert get_adapter("openai:gpt-image-1").accepts_reference_image
    assert not get_adapter("openai:dall-e-3").accepts_reference_image
    pricing = json.loads((Path(__file__).parents[2] / "config/pricing.json").read_text())
    for n in names:
        key = getattr(get_adapter(n), "pricing_key", None)
        assert key is None or key in pricing["models"], n


def test_openai_generations_b64_jpeg_to_png() -> None:
    seen: list[httpx.Request] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        return httpx.Response(200, json={"data": [{"b64_json": _b64(_image("JPEG", "blue"))}]})

    a = OpenAIImages("dall-e-3", client=_client(handler))
    res = a.generate(_req(a))
    (r,) = seen
    assert (r.method, str(r.url)) == ("POST", "https://api.openai.com/v1/images/generations")
    assert r.headers["authorization"] == "Bearer test-openai_api_key"
    body = json.loads(r.content)
    assert body["model"] == "dall-e-3" and body["prompt"] == "a red kite"
    assert body["response_format"] == "b64_json" and body["n"] == 1
    with Image.open(io.BytesIO(res.png)) as im:
        assert im.format == "PNG" and im.size == (8, 8)
    assert res.metadata["provider"] == "openai" and res.metadata["model"] == "dall-e-3"
    assert res.metadata["latency_s"] >= 0 and res.cost_usd is None


def test_openai_edits_with_reference_image_and_url_download() -> None:
    seen: list[httpx.Request] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        if r.method == "GET":
            return httpx.Response(200, content=_image())
        return httpx.Response(200, json={"data": [{"url": "https://files.example/x.png"}]})

    a = OpenAIImageEdits("gpt-image-1", client=_client(handler))
    ref = _image(color="green")
    res = a.generate(_req(a, (ref,)))
    post, get = seen
    assert str(post.url) == "https://api.openai.com/v1/images/edits"
    assert post.headers["content-type"].startswith("multipart/form-data")
    assert b'name="model"' in post.content and b"gpt-image-1" in post.content
    assert b'name="image[]"' in post.content and ref in post.content
    assert str(get.url) == "https://files.example/x.png"
    assert _is_png(res.png) and res.metadata["endpoint"] == "edits"


def test_replicate_prefer_wait_then_polls() -> None:
    seen: list[httpx.Request] = []
    states = iter(["processing", "succeeded"])
    naps: list[float] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        if r.url.host == "replicate.delivery":
            return httpx.Response(200, content=_image("WEBP"))
        get = {"get": "https://api.replicate.com/v1/predictions/p1"}
        pred: dict[str, object] = {"id": "p1", "status": "starting", "urls": get}
        if r.method == "GET":
            pred["status"] = next(states)
            pred["output"] = ["https://replicate.delivery/out.webp"]
        return httpx.Response(201, json=pred)

    a = ReplicateModel("black-forest-labs/flux-schnell", client=_client(handler), sleep=naps.append)
    res = a.generate(_req(a))
    post = seen[0]
    assert str(post.url) == (
        "https://api.replicate.com/v1/models/black-forest-labs/flux-schnell/predictions"
    )
    assert post.headers["prefer"] == "wait"
    assert post.headers["authorization"] == "Bearer test-replicate_api_token"
    inp = json.loads(post.content)["input"]
    assert inp["prompt"] == "a red kite" and inp["seed"] == 7 and "input_image" not in inp
    assert [r.method for r in seen] == ["POST", "GET", "GET", "GET"]
    assert "authorization" not in seen[-1].headers and len(naps) == 2
    assert _is_png(res.png) and res.metadata["polls"] == 2


def test_replicate_kontext_input_image_and_bounded_polls() -> None:
    bodies: list[dict[str, object]] = []

    def handler(r: httpx.Request) -> httpx.Response:
        if r.method == "POST":
            bodies.append(json.loads(r.content))
        return httpx.Response(
            200,
            json={
                "id": "p",
                "status": "processing",
                "urls": {"get": "https://api.replicate.com/v1/predictions/p"},
            },
        )

    a = ReplicateKontext(
        "black-forest-labs/flux-kontext-pro", client=_client(handler), sleep=lambda s: None,
        max_polls=3,
    )  # fmt: skip
    ref = _image()
    with pytest.raises(AdapterError, match="after 3 polls"):
        a.generate(_req(a, (ref,)))
    inp = bodies[0]["input"]
    assert isinstance(inp, dict) and inp["input_image"] == "data:image/png;base64," + _b64(ref)


def test_replicate_failed_prediction() -> None:
    def handler(r: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "p", "status": "failed", "error": "NSFW"})

    a = ReplicateModel("black-forest-labs/flux-schnell", client=_client(handler))
    with pytest.raises(AdapterError, match="failed: NSFW"):
        a.generate(_req(a))


def test_stability_multipart_binary_image() -> None:
    seen: list[httpx.Request] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        jpeg = _image("JPEG", "white")
        return httpx.Response(200, content=jpeg, headers={"content-type": "image/jpeg"})

    a = StabilityImage("sd3", client=_client(handler))
    res = a.generate(_req(a))
    (r,) = seen
    assert str(r.url) == "https://api.stability.ai/v2beta/stable-image/generate/sd3"
    assert r.headers["accept"] == "image/*"
    assert r.headers["authorization"] == "Bearer test-stability_api_key"
    assert r.headers["content-type"].startswith("multipart/form-data")
    for part in (b'name="prompt"', b"a red kite", b'name="model"', b"sd3-large", b'name="seed"'):
        assert part in r.content
    assert _is_png(res.png, (255, 255, 255)) and a.pricing_key == "stability/sd3-large"


def test_imagen_predict() -> None:
    seen: list[httpx.Request] = []

    def handler(r: httpx.Request) -> httpx.Response:
        seen.append(r)
        return httpx.Response(200, json={"predictions": [{"bytesBase64Encoded": _b64(_image())}]})

    a = ImagenModel("imagen-3.0-generate-002", client=_client(handler))
    res = a.generate(_req(a))
    (r,) = seen
    assert r.url.path == "/v1beta/models/imagen-3.0-generate-002:predict"
    assert r.url.host == "generativelanguage.googleapis.com"
    # the key travels in a header, never in the URL (which errors and log lines quote)
    assert r.headers["x-goog-api-key"] == "test-google_api_key" and not r.url.query
    body = json.loads(r.content)
    assert body["instances"] == [{"prompt": "a red kite"}]
    assert body["parameters"]["sampleCount"] == 1
    assert _is_png(res.png)


FACTORIES: list[Callable[[httpx.Client], object]] = [
    lambda c: OpenAIImages("dall-e-3", client=c),
    lambda c: ReplicateModel("black-forest-labs/flux-schnell", client=c),
    lambda c: StabilityImage("core", client=c),
    lambda c: ImagenModel("imagen-3.0-generate-002", client=c),
]


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("status", [429, 500])
def test_http_errors_carry_status_and_excerpt(
    factory: Callable[[httpx.Client], object], status: int
) -> None:
    a = factory(_client(lambda r: httpx.Response(status, text="slow  down\nplease")))
    with pytest.raises(AdapterError, match=f"HTTP {status}: slow down please") as info:
        a.generate(_req(a))  # type: ignore[attr-defined]
    assert "test-" not in str(info.value)  # the key is never echoed


@pytest.mark.parametrize("factory", FACTORIES)
def test_timeout_is_adapter_error(factory: Callable[[httpx.Client], object]) -> None:
    def handler(r: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("too slow", request=r)

    a = factory(_client(handler))
    with pytest.raises(AdapterError, match="timed out"):
        a.generate(_req(a))  # type: ignore[attr-defined]


@pytest.mark.parametrize(("factory", "var"), list(zip(FACTORIES, KEYS, strict=True)))
def test_missing_credential(
    factory: Callable[[httpx.Client], object], var: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(var)
    a = factory(_client(lambda r: pytest.fail("no request without a key")))
    with pytest.raises(CredentialMissing, match=var):
        a.preflight()  # type: ignore[attr-defined]
    with pytest.raises(CredentialMissing, match=var):
        a.generate(_req(a))  # type: ignore[attr-defined]


def test_not_an_image_is_adapter_error() -> None:
    a = ImagenModel("imagen-3.0-generate-002", client=_client(
        lambda r: httpx.Response(200, json={"predictions": [{"bytesBase64Encoded": _b64(b"nope")}]})
    ))  # fmt: skip
    with pytest.raises(AdapterError, match="not a readable image"):
        a.generate(_req(a))


def test_stored_serves_fixture_and_names_missing(tmp_path: Path) -> None:
    story = generate_story("counting", "easy", "c1", seed=0)
    d = tmp_path / "samples" / "some-model" / "independent" / "c1"
    d.mkdir(parents=True)
    (d / "scene_01.png").write_bytes(_image("JPEG", "black"))
    a = get_adapter("stored", root=tmp_path / "samples", source="some-model")
    assert a.privileged and not a.accepts_reference_image
    a.preflight()
    res = a.generate(_req(a, privileged=Privileged(story, "sha", 1, "independent")))
    assert _is_png(res.png, (0, 0, 0)) and res.metadata["model"] == "some-model"
    with pytest.raises(AdapterError, match=r"scene_02\.png"):
        a.generate(_req(a, privileged=Privileged(story, "sha", 2, "independent")))
    with pytest.raises(CredentialMissing):
        get_adapter("stored").preflight()


def test_run_skips_model_without_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    suite = tmp_path / "suite"
    write_suite([generate_story("counting", "easy", "c1", seed=0)], suite, seed=0)
    args = ["run", "--suite", str(suite), "--out", str(tmp_path / "run"), "--condition",
            "independent", "--cache", str(tmp_path / "cache"),
            "--model", "openai:gpt-image-1,procedural-oracle"]  # fmt: skip
    assert main(args) == 3  # regression: a skipped model (no key) exited 0
    err = capsys.readouterr().err
    assert "skipped openai:gpt-image-1" in err and "OPENAI_API_KEY" in err
    assert "Traceback" not in err
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert "openai:gpt-image-1" not in json.dumps(man.get("models"))
