"""The command line a researcher expects (issue 14, item 7 and item 8's generator):
`vsb models`, `vsb conditions`, validated options, `vsb suite index` and the hint to it,
`vsb suite generate --per-cell`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vsb.adapters.registry import PATTERNS, model_names, resolve_models
from vsb.cli.main import main
from vsb.conditions import CONDITIONS
from vsb.generator.generate import DEFAULT_VARIANTS, generate_suite, write_suite
from vsb.story.models import CATEGORIES, DIFFICULTIES


def _one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 1) -> str:
    assert main(argv) == code
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    lines = [ln for ln in cap.err.strip().splitlines() if ln.strip()]
    return lines[-1] if code == 2 else _single(lines)


def _single(lines: list[str]) -> str:
    assert len(lines) == 1, lines
    return lines[0]


def test_models_lists_every_registered_adapter(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-never-print-me"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.delenv("REPLICATE_API_TOKEN", raising=False)
    assert main(["models", "--json"]) == 0
    out = capsys.readouterr().out
    assert secret not in out
    doc = json.loads(out)
    rows = {r["name"]: r for r in doc["models"]}
    assert list(rows) == model_names()  # data-driven: every registered model, in order
    prefixes = {p["pattern"].split(":", 1)[0] for p in doc["patterns"]}
    assert prefixes == set(PATTERNS)  # and every PREFIX:ARGUMENT family
    gpt = rows["openai:gpt-image-1"]
    assert gpt["env_var"] == "OPENAI_API_KEY" and gpt["credential_present"] is True
    assert gpt["accepts_reference_image"] is True and gpt["ready"] is True
    assert gpt["usd_per_image"] == pytest.approx(0.042) and gpt["price_as_of"] == "2025-06-01"
    flux = rows["replicate:black-forest-labs/flux-schnell"]
    assert flux["credential_present"] is False and flux["ready"] is False
    assert flux["usd_per_image"] == pytest.approx(0.003)
    oracle = rows["procedural-oracle"]
    assert oracle["kind"] == "simulator" and oracle["env_var"] is None
    assert oracle["simulator_parameters"]["p_memory"] == 0.0
    assert rows["procedural-amnesiac"]["simulator_parameters"]["p_memory"] == pytest.approx(0.35)
    assert rows["stored"]["kind"] == "stored" and rows["stored"]["usd_per_image"] is None
    assert main(["models"]) == 0
    text = capsys.readouterr().out
    assert secret not in text
    assert "OPENAI_API_KEY set" in text and "REPLICATE_API_TOKEN NOT set" in text
    assert "unknown" in text  # the stored adapter's price is unknown, never 0
    assert "pip install 'vsb[diffusers]'" in " ".join(text.split())  # not eaten as markup


def test_models_unknown_price_stays_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pricing = tmp_path / "pricing.json"
    pricing.write_text(json.dumps({"version": "1.0", "as_of": "2030-01-01", "models": {}}))
    assert main(["models", "--json", "--pricing", str(pricing)]) == 0
    rows = json.loads(capsys.readouterr().out)["models"]
    assert all(r["usd_per_image"] is None and r["price_as_of"] is None for r in rows)


def test_conditions_lists_every_condition(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conditions", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert list(rows) == CONDITIONS.names()
    assert rows["structured_memory"]["primary"] is True
    assert rows["structured_memory"]["context"] == "JSON"
    assert rows["independent"]["context"] == "none"
    assert rows["previous_image"]["context"] == "reference image"
    assert rows["previous_text"]["context"] == "text"
    assert main(["conditions"]) == 0
    out = capsys.readouterr().out
    for name in CONDITIONS.names():
        assert name in out


def test_resolve_models_all_any_case() -> None:
    sims = resolve_models("all")
    assert sims and all(n.startswith("procedural-") for n in sims)
    assert resolve_models("All") == resolve_models("ALL") == sims


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two hand-written stories (copied from the generator) and no suite.json."""
    root = tmp_path_factory.mktemp("hand")
    gen = root / "gen"
    stories = [s for s in generate_suite(0) if s.id in ("counting-easy", "wardrobe-easy")]
    write_suite(stories, gen)
    hand = root / "hand"
    hand.mkdir()
    shutil.copy(gen / "counting-easy.json", hand / "my story.json")
    shutil.copy(gen / "wardrobe-easy.json", hand / "wardrobe-easy.json")
    return hand


@pytest.mark.parametrize("cmd", ["run", "release"])
def test_workers_must_be_at_least_one(
    cmd: str, tmp_path: Path, tiny_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    if cmd == "run":
        argv = ["run", "--suite", str(tiny_suite), "--model", "procedural-oracle"]
        argv += ["--condition", "independent", "--out", str(out), "--workers", "0"]
    else:
        argv = ["release", "build", "vtest", "--out", str(out), "--workers", "0"]
    line = _one_line_error(argv, capsys, code=2)
    assert "--workers" in line and "0 is not in the range x>=1" in line
    assert not out.exists()


def test_missing_index_hints_suite_index_then_runs(
    tmp_path: Path, tiny_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hand = tmp_path / "hand"
    shutil.copytree(tiny_suite, hand)
    out = tmp_path / "run"
    argv = ["run", "--suite", str(hand), "--model", "procedural-oracle"]
    argv += ["--condition", "independent", "--out", str(out), "--workers", "1"]
    line = _one_line_error(argv, capsys)
    assert "suite index not found" in line and f"vsb suite index {hand}" in line
    assert main(["suite", "index", str(hand)]) == 0
    assert "indexed 2 stories" in capsys.readouterr().out
    index = json.loads((hand / "suite.json").read_text())
    assert sorted(e["file"] for e in index["stories"]) == ["my story.json", "wardrobe-easy.json"]
    assert main(["suite", "validate", str(hand)]) == 0
    assert "2 of 2 story files valid" in capsys.readouterr().out
    assert main(argv) == 0
    assert len((out / "records.jsonl").read_text().splitlines()) == 6


def test_suite_index_refuses_bad_stories(
    tmp_path: Path, tiny_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hand = tmp_path / "dup"
    shutil.copytree(tiny_suite, hand)
    shutil.copy(hand / "wardrobe-easy.json", hand / "copy.json")
    line = _one_line_error(["suite", "index", str(hand)], capsys)
    assert "duplicate story id 'wardrobe-easy'" in line
    assert not (hand / "suite.json").exists()
    (hand / "copy.json").write_text("{not json")
    line = _one_line_error(["suite", "index", str(hand)], capsys)
    assert "copy.json" in line and "invalid JSON" in line
    assert not (hand / "suite.json").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no story files" in _one_line_error(["suite", "index", str(empty)], capsys)


def test_generate_per_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    default = {s.id: s for s in generate_suite(0)}
    assert len(default) == len(CATEGORIES) * len(DEFAULT_VARIANTS) == 40
    two = generate_suite(0, per_cell=2)
    assert len(two) == len(CATEGORIES) * len(DIFFICULTIES) * 2
    cells: dict[tuple[str, str], int] = {}
    for s in two:
        cells[(s.category, s.difficulty)] = cells.get((s.category, s.difficulty), 0) + 1
    assert set(cells.values()) == {2} and len(cells) == 30
    # the medium stories of --per-cell 2 are the default suite's (same ids, same seeds)
    for s in two:
        if s.difficulty == "medium":
            assert s == default[s.id]
    assert main(["suite", "generate", "--out", str(tmp_path / "s"), "--per-cell", "1"]) == 0
    assert "wrote 30 stories" in capsys.readouterr().out
    line = _one_line_error(
        ["suite", "generate", "--out", str(tmp_path / "z"), "--per-cell", "0"], capsys, code=2
    )
    assert "--per-cell" in line


def test_evaluate_and_validate_judge_say_did_you_mean(
    tmp_path: Path, tiny_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hand = tmp_path / "hand"
    shutil.copytree(tiny_suite, hand)
    assert main(["suite", "index", str(hand)]) == 0
    run = tmp_path / "run"
    argv = ["run", "--suite", str(hand), "--model", "procedural-oracle"]
    assert main([*argv, "--condition", "independent", "--out", str(run), "--workers", "1"]) == 0
    capsys.readouterr()
    line = _one_line_error(["evaluate", str(run), "--condition", "indepndent"], capsys)
    assert "did you mean 'independent'?" in line and "(it has: independent)" in line
    line = _one_line_error(["evaluate", str(run), "--model", "procedural-oracl"], capsys)
    assert "did you mean 'procedural-oracle'?" in line
    assert main(["evaluate", str(run), "--workers", "1"]) == 0
    capsys.readouterr()
    line = _one_line_error(["validate-judge", str(run), "--evaluator", "rulez"], capsys)
    assert "did you mean 'rules'?" in line and "present in this run" in line
