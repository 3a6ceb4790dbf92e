"""Every JSON file vsb reads answers 100,000 nested brackets with one ``VsbError`` line
(issue #10 item 1): release manifest, assembled records, the site's reports and rows, run
manifests, pricing, provider and judge responses. Before the shared reader each of these
ended in a ``RecursionError`` traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from vsb.cli.main import main
from vsb.errors import AdapterError, InputError, ReleaseError, VsbError
from vsb.evaluators.vlm.wire import post_json as _post
from vsb.release.build import _Stages, assemble
from vsb.release.manifest import load_manifest
from vsb.scores.models import ScoresReport
from vsb.site.data import _jsonl, _load_checks, _read_model
from vsb.store.ledger import Pricing

DEEP = "[" * 100_000
DEEP_LINE = DEEP + "\n"


def _one_line(err: VsbError, path: Path) -> None:
    text = str(err)
    assert "\n" not in text and str(path) in text and "nested deeper than 64" in text, text


CASES: list[tuple[str, str, Callable[[Path], object]]] = [
    ("MANIFEST.json", DEEP, lambda p: load_manifest(p.parent)),
    ("records.jsonl", DEEP_LINE, lambda p: assemble(p.parent, p.parent / "release")),
    ("scores.json", DEEP, lambda p: _read_model(p, ScoresReport)),
    ("records.jsonl", DEEP_LINE, _jsonl),
    ("requirements.jsonl", DEEP_LINE, lambda p: _load_checks(p, "rules")),
    ("pricing.json", DEEP, Pricing.load),
]


@pytest.mark.parametrize(("name", "text", "read"), CASES)
def test_deep_file_is_one_error(
    tmp_path: Path, name: str, text: str, read: Callable[[Path], object]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(VsbError) as exc:
        read(path)
    _one_line(exc.value, path)


def test_run_manifest_and_release_name(tmp_path: Path) -> None:
    from vsb.scores.inputs import read_manifest, release_name

    (tmp_path / "manifest.json").write_text(DEEP)
    with pytest.raises(InputError) as exc:
        read_manifest(tmp_path)
    _one_line(exc.value, tmp_path / "manifest.json")
    (tmp_path / "MANIFEST.json").write_text(DEEP)
    assert release_name(tmp_path) is None  # unreadable: no release name, as for bad JSON


def test_release_verify_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "MANIFEST.json").write_text(DEEP)
    assert main(["release", "verify", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: {tmp_path / 'MANIFEST.json'}: line 1 column 65: "
        "manifest is not valid JSON: JSON nested deeper than 64 levels"
    ]


def test_manifest_error_keeps_its_class(tmp_path: Path) -> None:
    (tmp_path / "MANIFEST.json").write_text(DEEP)
    with pytest.raises(ReleaseError, match="manifest is not valid JSON: JSON nested deeper"):
        load_manifest(tmp_path)


def test_release_stages_treat_deep_bookkeeping_as_empty(tmp_path: Path) -> None:
    (tmp_path / "stages.json").write_text(DEEP)
    assert _Stages(tmp_path / "stages.json").data == {}
    (tmp_path / "stages.json").write_text("[1, 2]")  # valid JSON, wrong shape
    assert _Stages(tmp_path / "stages.json").data == {}


def _deep_client() -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=DEEP.encode(), headers={"content-type": "json"})

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_deep_judge_response_is_an_adapter_error() -> None:
    with pytest.raises(AdapterError, match="is not JSON"):
        _post(_deep_client(), "http://judge.test/v1", {}, {}, None)


def test_deep_provider_response_is_an_adapter_error() -> None:
    from vsb.adapters.providers.openai import OpenAIImages

    adapter = OpenAIImages("dall-e-3", client=_deep_client())
    resp = adapter.client.get("http://provider.test/")
    with pytest.raises(AdapterError, match="expected JSON") as exc:
        adapter.json_of(resp)
    assert "\n" not in str(exc.value)


def test_judge_pricing(tmp_path: Path) -> None:
    from vsb.errors import ConfigError
    from vsb.evaluators.vlm.store import JudgePricing

    (tmp_path / "pricing.json").write_text(DEEP)
    with pytest.raises(ConfigError) as exc:
        JudgePricing.load(tmp_path / "pricing.json")
    _one_line(exc.value, tmp_path / "pricing.json")


def test_tampered_cache_metadata(tmp_path: Path) -> None:
    import sqlite3

    from vsb.adapters.base import GenerationResult
    from vsb.store.cache import INDEX_NAME, GenerationCache

    cache = GenerationCache(tmp_path)
    cache.open()
    cache.get("k", lambda: GenerationResult(png=b"\x89PNG fake", metadata={"a": 1}))
    cache.close()
    with sqlite3.connect(tmp_path / INDEX_NAME) as db:
        # seal NULL and no migration recorded: an entry written before seals, sealed when the
        # index opens, whose metadata is then parsed as it stands (a sealed one fails its
        # check and is regenerated: tests/evaluators/test_cache_checks)
        db.execute("UPDATE entries SET metadata = ?, seal = NULL", (DEEP,))
        db.execute("DELETE FROM meta")
    db.close()
    cache = GenerationCache(tmp_path)
    cache.open()
    with pytest.raises(InputError) as exc:
        cache.get("k", lambda: GenerationResult(png=b"unused"))
    cache.close()
    _one_line(exc.value, tmp_path / INDEX_NAME)
