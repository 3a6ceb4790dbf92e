"""``evaluate_run`` / ``vsb evaluate`` on run directories in the docs/CONTRACTS.md layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vsb.cli.main import main
from vsb.errors import RunError, UnknownNameError
from vsb.evaluators.evaluate import evaluate_run
from vsb.evaluators.registry import evaluator_info, evaluator_names
from vsb.fsio import sha256_hex
from vsb.generator.generate import write_suite
from vsb.render import render_png
from vsb.scores.inputs import load_requirements, load_signals
from vsb.story.models import Story
from vsb.tables import REQUIREMENT_COLUMNS, iter_rows


def make_run(root: Path, stories: list[Story], *, model: str = "truth") -> Path:
    """A run directory whose images are the true renders (what procedural-oracle makes)."""
    write_suite(stories, root / "suite")
    records = []
    for story in stories:
        for scene in story.scenes:
            rel = f"images/{model}/independent/{story.id}/scene_{scene.index:02d}.png"
            png = render_png(scene.state, seed=scene.index)
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(png)
            records.append({
                "model": model, "condition": "independent", "story_id": story.id,
                "scene": scene.index, "key": rel, "path": rel, "sha256": sha256_hex(png),
                "cache_hit": False, "latency_s": 0.0, "cost_usd": 0.0, "error": None,
            })  # fmt: skip
    (root / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest = {"version": "1.0", "suite": "suite", "models": [model],
                "conditions": ["independent"], "seed": 0, "images": len(records)}  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


@pytest.fixture
def small_run(tmp_path: Path, default_suite: list[Story]) -> tuple[Path, list[Story]]:
    stories = [s for s in default_suite if s.difficulty != "hard"][:3]
    return make_run(tmp_path / "run", stories), stories


def test_evaluate_run_writes_the_contract_tables(small_run: tuple[Path, list[Story]]) -> None:
    run, stories = small_run
    seen: list[tuple[int, int]] = []
    result = evaluate_run(run, progress=lambda d, t: seen.append((d, t)))
    n_req = sum(len(sc.requirements) for s in stories for sc in s.scenes)
    n_img = sum(len(s.scenes) for s in stories)
    assert result.requirements == result.passed == n_req
    assert result.images == n_img
    assert seen[-1] == (n_img, n_img)
    ev = run / "evaluations"
    rows = [r for _, r in iter_rows(ev / "requirements.parquet")]
    assert len(rows) == n_req and all(r["passed"] for r in rows)
    assert list(rows[0]) == list(REQUIREMENT_COLUMNS)
    assert sorted(p.name for p in ev.iterdir()) == [
        "manifest.json",
        "requirements.parquet",
        "signals.parquet",
    ]  # each table once: no JSON lines, no CSV
    signals = [r for _, r in iter_rows(ev / "signals.parquet")]
    assert {s["signal"] for s in signals} == {"pairwise_global", "pairwise_band"}
    assert len(signals) == 2 * (n_img - len(stories))
    assert all(0.0 <= s["value"] <= 1.0 for s in signals)
    assert json.loads((ev / "manifest.json").read_text())["version"] == "2.0"
    # the scores layer reads what we wrote
    assert len(load_requirements(run)) == n_req and len(load_signals(run)) == len(signals)


def test_workers_give_identical_files(small_run: tuple[Path, list[Story]]) -> None:
    run, _ = small_run
    evaluate_run(run)
    one = {p.name: p.read_bytes() for p in (run / "evaluations").iterdir()}
    evaluate_run(run, workers=2)
    two = {p.name: p.read_bytes() for p in (run / "evaluations").iterdir()}
    assert one == two


def test_cli_evaluate(
    small_run: tuple[Path, list[Story]], capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = small_run
    assert main(["evaluate", str(run), "--workers", "1"]) == 0
    assert "100.0% of applicable passed" in capsys.readouterr().out
    assert main(["evaluate", str(run / "nope")]) == 1
    assert "run directory not found" in capsys.readouterr().err


def test_missing_pieces_raise_run_error(small_run: tuple[Path, list[Story]]) -> None:
    run, _ = small_run
    with pytest.raises(RunError, match="not found"):
        evaluate_run(run / "absent")
    image = next((run / "images").rglob("scene_02.png"))
    image.unlink()
    with pytest.raises(RunError, match="missing") as err:
        evaluate_run(run)
    assert err.value.file == str(image)
    (run / "records.jsonl").write_text("")
    with pytest.raises(RunError, match="no records") as err:
        evaluate_run(run)
    assert err.value.file == str(run / "records.jsonl")
    (run / "records.jsonl").unlink()
    with pytest.raises(RunError, match="no records"):
        evaluate_run(run)


def test_failed_generations_fail_every_requirement(small_run: tuple[Path, list[Story]]) -> None:
    """Issue #11 item 6 (regression: a failed image had no rows, so failing cost nothing)."""
    run, stories = small_run
    lines = (run / "records.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["error"] = "provider said no"
    (run / "records.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    result = evaluate_run(run)
    first = stories[0].scenes[0]
    n_req = sum(len(sc.requirements) for s in stories for sc in s.scenes)
    assert result.requirements == n_req  # one row per (image, requirement, evaluator)
    rows = [r for _, r in iter_rows(run / "evaluations/requirements.parquet")]
    where = (rec["model"], rec["condition"], rec["story_id"], rec["scene"])
    mine = [r for r in rows if (r["model"], r["condition"], r["story_id"], r["scene"]) == where]
    assert sorted(r["req_id"] for r in mine) == sorted(q.id for q in first.requirements)
    assert {(r["verdict"], r["failure"], r["evaluator"], r["passed"]) for r in mine} == {
        ("failed", "generation_failed", "rules", False)
    }


def test_evaluators_register_by_name() -> None:
    assert {"rules", "pairwise", "vlm"} <= set(evaluator_names())
    with pytest.raises(UnknownNameError, match="did you mean 'rules'"):
        evaluator_info("rulez")


def test_a_simulated_run_is_evaluated(tmp_path: Path, default_suite: list[Story]) -> None:
    from vsb.run.runner import RunConfig, run

    stories = [s for s in default_suite if s.difficulty == "medium"][:2]
    write_suite(stories, tmp_path / "suite")
    out = tmp_path / "run"
    run(RunConfig(suite_dir=tmp_path / "suite", models=["procedural-oracle", "procedural-amnesiac"],
                  conditions=["independent"], out=out, cache_dir=tmp_path / "cache"))  # fmt: skip
    evaluate_run(out)
    rows = [r for _, r in iter_rows(out / "evaluations/requirements.parquet")]
    oracle = [r for r in rows if r["model"] == "procedural-oracle"]
    amnesiac = [r for r in rows if r["model"] == "procedural-amnesiac"]
    assert oracle and all(r["passed"] for r in oracle)
    faults = [json.loads(x) for x in (out / "oracle/faults.jsonl").read_text().splitlines()]
    failed = {(r["story_id"], r["scene"]) for r in amnesiac if not r["passed"]}
    visual = {(f["story_id"], f["scene"]) for f in faults if f["visual"]}
    assert visual and visual <= failed


def test_manifest_counts_the_images_of_every_evaluation(
    tmp_path: Path, default_suite: list[Story]
) -> None:
    """Regression: after evaluating one model, then another, the manifest's ``images`` said
    only the second model's count while its ``requirements`` counted both."""
    stories = [s for s in default_suite if s.difficulty == "easy"][:2]
    run = make_run(tmp_path / "run", stories, model="a")
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    for r in list(records):
        rel = r["path"].replace("images/a/", "images/b/")
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_bytes((run / r["path"]).read_bytes())
        records.append({**r, "model": "b", "key": rel, "path": rel})
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "models": ["a", "b"]}))
    n_img = sum(len(s.scenes) for s in stories)
    evaluate_run(run, models=["a"])
    evaluate_run(run, models=["b"])
    m = json.loads((run / "evaluations" / "manifest.json").read_text())
    assert m["last"]["models"] == ["b"] and m["last"]["images"] == n_img
    assert m["images"] == 2 * n_img
    assert m["requirements"] == 2 * sum(len(sc.requirements) for s in stories for sc in s.scenes)


def test_a_table_that_fails_to_convert_leaves_the_earlier_evaluation_whole(
    small_run: tuple[Path, list[Story]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both tables are converted before any file is written: when the signals fail, the
    earlier evaluation's requirements, signals and manifest are all still there, unchanged
    (a new requirements file beside the old signals was written before)."""
    from vsb.tables import io

    run, _ = small_run
    evaluate_run(run, evaluators=["pairwise"])  # signals only: the rules would add requirements
    before = {p.name: p.read_bytes() for p in (run / "evaluations").iterdir()}
    real = io.to_arrow

    def failing(rows: Any, columns: tuple[str, ...], path: Path) -> Any:
        if path.name == "signals.parquet":
            raise OSError("disk full while converting")
        return real(rows, columns, path)

    monkeypatch.setattr(io, "to_arrow", failing)
    with pytest.raises(OSError, match="disk full"):
        evaluate_run(run, evaluators=["rules", "pairwise"])
    assert {p.name: p.read_bytes() for p in (run / "evaluations").iterdir()} == before
