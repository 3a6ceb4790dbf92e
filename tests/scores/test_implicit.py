"""Implicit effects (``vsb.scores.implicit``): explicit vs implicit pass rates on the inferred
requirements, with known answers on synthetic rule-checker rows of the real plain and
implicit default suites."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from vsb.errors import InputError
from vsb.generator.generate import generate_suite, write_suite
from vsb.scores.compute import load_scoring_input
from vsb.scores.implicit import (
    IMPLICIT_HEADER,
    ImplicitReport,
    compare_implicit,
    inferred_requirements,
    write_implicit,
)
from vsb.scores.sensitivity import check_same_stories
from vsb.scores.stats.bootstrap import Resampling
from vsb.story.models import Story

#: Per run, per model: the probability that an inferred check fails (others always pass).
P_FAIL = {
    "plain": {"infers": 0.10, "guesses": 0.10},
    "implicit": {"infers": 0.10, "guesses": 0.70},
}
CONDITIONS = ["independent", "structured_memory"]


def _uniform(*parts: object) -> float:
    """One uniform per (model, condition, requirement): both runs draw the same one, so equal
    failure probabilities give equal verdicts."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _write_run(
    root: Path, stories: list[Story], keys: set[tuple], p_fail: dict[str, float]
) -> Path:
    write_suite(stories, root / "suite")
    lines: list[str] = []
    for model, p in p_fail.items():
        for cond in CONDITIONS:
            for story in stories:
                for scene in story.scenes:
                    for r in scene.requirements:
                        key = (story.id, scene.index, r.subject, r.attribute)
                        passed = _uniform(model, cond, *key) >= p if key in keys else True
                        row: dict[str, Any] = {
                            "model": model, "condition": cond, "story_id": story.id,
                            "scene": scene.index, "req_id": r.id, "dimension": r.dimension,
                            "taxonomy": r.taxonomy, "source": r.source, "subject": r.subject,
                            "attribute": r.attribute, "expected": json.dumps(r.expected),
                            "observed": "null", "passed": passed,
                            "failure": "" if passed else r.taxonomy, "evaluator": "rules",
                        }  # fmt: skip
                        lines.append(json.dumps(row))
    (root / "evaluations").mkdir(parents=True)
    (root / "evaluations" / "requirements.jsonl").write_text("\n".join(lines) + "\n")
    manifest = {
        "version": "1.0", "suite": "suite", "suite_sha256": "0" * 64, "models": list(p_fail),
        "conditions": CONDITIONS, "seed": 0, "prompt_style": stories[0].prompt_style,
        "images": 0,
    }  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("implicit")
    implicit = [
        s
        for s in generate_suite(0, text_style="implicit")
        if any(r.inferred for sc in s.scenes for r in sc.requirements)
    ]
    write_suite(implicit, root / "probe")
    keys = inferred_requirements(root / "probe")
    a = _write_run(root / "plain", default_suite, keys, P_FAIL["plain"])
    b = _write_run(root / "implicit", implicit, keys, P_FAIL["implicit"])
    return a, b


def test_inferred_requirements_are_read_from_the_suite(runs: tuple[Path, Path]) -> None:
    plain, implicit = runs
    keys = inferred_requirements(implicit / "suite")
    assert len(keys) == 68 and all(attr == "state" for _, _, _, attr in keys)
    assert inferred_requirements(plain / "suite") == set()
    check_same_stories(plain, implicit, subset=True)  # the implicit stories are plain's
    with pytest.raises(InputError, match="not of the same stories"):
        check_same_stories(plain, implicit)


def test_known_answers_and_ci(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = (load_scoring_input(r) for r in runs)
    report = compare_implicit(a, b, settings=Resampling(n_resamples=500))
    assert report.inferred_requirements == 68 and len(report.stories) == 18
    assert report.run_a.prompt_style == "plain" and report.run_b.prompt_style == "implicit"
    rows = {(r.model, r.condition): r for r in report.rows}
    assert set(rows) == {(m, c) for m in P_FAIL["plain"] for c in CONDITIONS}
    for cond in CONDITIONS:
        guess, infer = rows[("guesses", cond)], rows[("infers", cond)]
        assert guess.n_checks == infer.n_checks == 68 and guess.n_stories == 18
        # 0.9 told vs 0.3 inferred: a large loss whose CI excludes 0
        assert guess.diff == pytest.approx(guess.implicit_pass - guess.explicit_pass)
        assert -0.8 < guess.diff < -0.4
        assert guess.ci_low is not None and guess.ci_high is not None
        assert guess.ci_low <= guess.diff <= guess.ci_high < 0 and guess.p_less == 1.0
        # the same verdicts in both runs: no difference at all
        assert infer.diff == infer.ci_low == infer.ci_high == 0.0 and infer.p_less == 0.0
        assert 0.8 < infer.explicit_pass == infer.implicit_pass < 1.0
    # seeded: the same report twice, another seed moves only the CIs
    assert compare_implicit(a, b, settings=Resampling(n_resamples=500)) == report
    other = compare_implicit(a, b, settings=Resampling(n_resamples=500, seed=1))
    assert [r.diff for r in other.rows] == [r.diff for r in report.rows]
    assert [r.ci_low for r in other.rows] != [r.ci_low for r in report.rows]
    only = compare_implicit(a, b, settings=Resampling(n_resamples=50), conditions=["independent"])
    assert {r.condition for r in only.rows} == {"independent"}
    paths = write_implicit(tmp_path, report)
    assert ImplicitReport.model_validate_json(paths[0].read_text()) == report
    header = paths[1].read_text().splitlines()[0].split(",")
    assert tuple(header) == IMPLICIT_HEADER and len(paths[1].read_text().splitlines()) == 5


def test_a_suite_without_inferred_requirements_is_refused(runs: tuple[Path, Path]) -> None:
    plain, _ = runs
    a = load_scoring_input(plain)
    with pytest.raises(InputError, match="no inferred requirement"):
        compare_implicit(a, a)
