"""Issue #23 item 7: every reader of a run's evaluations refuses a second row with the key
of an earlier one — (model, condition, story, scene, requirement, evaluator[, judge model])
for verdicts, (model, condition, story, scene, signal, evaluator) for signals — naming the
file and the row, with a one-line error and a non-zero exit."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from vsb.cli.main import main
from vsb.errors import InputError
from vsb.evaluators.evaluate import evaluate_run
from vsb.generator.generate import write_suite
from vsb.scores.inputs import load_requirements, load_signals
from vsb.story.models import Story
from vsb.tables import iter_rows, write_requirements, write_signals


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    """A real run of two stories (a simulator, two conditions), evaluated."""
    root = tmp_path_factory.mktemp("dup")
    write_suite([s for s in default_suite if s.difficulty == "easy"][:2], root / "suite")
    run = root / "run"
    argv = ["run", "--suite", str(root / "suite"), "--model", "procedural-drift-mid"]
    argv += ["--condition", "independent,structured_memory", "--out", str(run)]
    assert main([*argv, "--cache", str(root / "cache"), "--workers", "1"]) == 0
    evaluate_run(run)
    return run


@pytest.fixture
def run(evaluated: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(evaluated, out)
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in iter_rows(path)]


def _save(path: Path, rows: list[dict[str, Any]]) -> None:
    write = write_requirements if path.name.startswith("requirements") else write_signals
    write(path, rows)


def _rewrite(path: Path, **update: object) -> list[dict[str, Any]]:
    rows = [{**r, **update} for r in _rows(path)]
    _save(path, rows)
    return rows


def test_every_row_relabelled_to_one_condition_is_refused_by_score_and_compare(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported case: every row rewritten to condition=structured_memory."""
    other = tmp_path / "other"
    shutil.copytree(run, other)
    path = run / "evaluations/requirements.parquet"
    rows = _rewrite(path, condition="structured_memory")
    with pytest.raises(InputError, match="duplicate requirement row") as err:
        load_requirements(run)
    first = rows[0]
    n = 1 + next(
        i for i, r in enumerate(rows[1:], 1)
        if (r["story_id"], r["scene"], r["req_id"], r["evaluator"])
        == (first["story_id"], first["scene"], first["req_id"], first["evaluator"])
    )  # fmt: skip
    assert err.value.file == str(path) and err.value.location == f"row {n}"
    assert repr(first["req_id"]) in err.value.message and "row 1" in err.value.message
    capsys.readouterr()
    assert main(["score", str(run)]) == 1
    msg = capsys.readouterr().err.strip()
    assert "\n" not in msg and "duplicate requirement row" in msg and str(path) in msg
    assert "Traceback" not in msg
    assert main(["compare-runs", str(other), str(run), "--out", str(tmp_path / "cmp")]) != 0
    msg = capsys.readouterr().err.strip()
    assert "duplicate requirement row" in msg and "Traceback" not in msg


def test_a_single_repeated_row_is_refused(run: Path) -> None:
    path = run / "evaluations/requirements.parquet"
    rows = _rows(path)
    _save(path, [*rows, rows[5]])
    with pytest.raises(InputError, match="duplicate") as err:
        load_requirements(run)
    assert err.value.location == f"row {len(rows) + 1}" and "row 6" in err.value.message


def test_a_repeated_signal_row_is_refused(run: Path) -> None:
    path = run / "evaluations/signals.parquet"
    rows = _rows(path)
    _save(path, [rows[0], *rows])
    with pytest.raises(InputError, match="duplicate signal row") as err:
        load_signals(run)
    assert err.value.file == str(path) and err.value.location == "row 2"


def test_the_same_requirement_under_two_judge_models_is_not_a_duplicate(run: Path) -> None:
    path = run / "evaluations/requirements.parquet"
    rows = _rows(path)
    a = [{**r, "evaluator": "vlm", "judge_model": "judge-a"} for r in rows]
    b = [{**r, "evaluator": "vlm", "judge_model": "judge-b"} for r in rows]
    _save(path, [*rows, *a, *b])
    assert len(load_requirements(run)) == 3 * len(rows)


def test_evaluate_never_carries_a_duplicate_forward(run: Path) -> None:
    """Re-evaluating one evaluator keeps the others' rows: a duplicate among them is
    refused; re-evaluating the evaluator that holds it replaces it."""
    path = run / "evaluations/signals.parquet"
    rows = _rows(path)
    _save(path, [*rows, rows[0]])
    with pytest.raises(InputError, match="duplicate row") as err:
        evaluate_run(run, evaluators=["rules"])
    assert err.value.file == str(path) and err.value.location == f"row {len(rows) + 1}"
    evaluate_run(run, evaluators=["pairwise"])
    assert len(load_signals(run)) == len(rows) - sum(r["value"] is None for r in rows)


def test_the_site_refuses_duplicate_checks(run: Path) -> None:
    from vsb.site.data import _load_checks

    path = run / "evaluations/requirements.parquet"
    _rewrite(path, condition="independent")
    with pytest.raises(InputError, match="duplicate"):
        _load_checks(path, "rules")


def test_the_site_takes_one_requirement_under_two_judge_models(run: Path) -> None:
    """The site's fast path sees the same (image, requirement, model) twice here; only the
    walk that follows says whether it is a duplicate, and the judge model tells them apart."""
    from vsb.site.data import _load_checks

    path = run / "evaluations/requirements.parquet"
    rows = [r for r in _rows(path) if r["verdict"] != "not_applicable"]
    a = [{**r, "evaluator": "vlm", "judge_model": "judge-a"} for r in rows]
    b = [{**r, "evaluator": "vlm", "judge_model": "judge-b"} for r in rows]
    _save(path, [*rows, *a, *b])
    checks, _ = _load_checks(path, "vlm")
    assert sum(len(m) for reqs in checks.values() for m in reqs.values()) == len(rows)
    _save(path, [*rows, *a, *b, a[3]])
    with pytest.raises(InputError, match="duplicate") as err:
        _load_checks(path, "vlm")
    assert err.value.location == f"row {3 * len(rows) + 1}"
