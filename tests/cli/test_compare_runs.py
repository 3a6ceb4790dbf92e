"""``vsb compare-runs`` (prompt sensitivity) and ``vsb analysis``: paired differences with
known answers on synthetic evaluations of the real plain and paraphrased default suites."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vsb.cli.main import main
from vsb.generator.generate import generate_suite, write_suite
from vsb.scores.sensitivity import SensitivityReport, check_same_stories, compare_runs
from vsb.scores.stats.bootstrap import Resampling
from vsb.story.models import Story

#: Per run, per model: the probability that a memory check fails.
P_FAIL = {
    "a": {"wordy": 0.10, "steady": 0.20},
    "b": {"wordy": 0.40, "steady": 0.20},
}


@pytest.fixture(scope="module")
def paraphrased() -> list[Story]:
    return generate_suite(0, paraphrase=True)


def _write_run(
    root: Path, stories: list[Story], p_fail: dict[str, float], conditions: list[str]
) -> Path:
    """A run directory: the suite, a manifest and rule-checker rows drawn with a seed per
    (model, condition) (equal probabilities in two runs give equal rows)."""
    write_suite(stories, root / "suite")
    lines: list[str] = []
    for model, p in p_fail.items():
        for cond in conditions:
            rng = np.random.default_rng([ord(ch) for ch in model + cond])
            for story in stories:
                for scene in story.scenes:
                    for r in scene.requirements:
                        u = rng.random()
                        passed = bool(u >= (p if r.source == "memory" else p / 4))
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
        "conditions": conditions, "seed": 0, "prompt_style": stories[0].prompt_style,
        "images": 0,
    }  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
    default_suite: list[Story],
    paraphrased: list[Story],
) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    a = _write_run(root / "plain", default_suite, P_FAIL["a"], ["structured_memory", "independent"])
    b = _write_run(root / "para", paraphrased, P_FAIL["b"], ["structured_memory"])
    return a, b


def test_plain_and_paraphrase_suites_are_the_same_stories(runs: tuple[Path, Path]) -> None:
    check_same_stories(*runs)  # no error: only the wording differs
    texts = [
        json.loads(p.read_text())["scenes"][1]["text"]
        for p in (
            runs[0] / "suite" / "wardrobe-hard.json",
            runs[1] / "suite" / "wardrobe-hard.json",
        )
    ]
    assert texts[0] != texts[1]


def test_sensitivity_recovers_the_injected_difference(runs: tuple[Path, Path]) -> None:
    report = compare_runs(*runs, settings=Resampling(n_resamples=1000))
    assert report.cells == ["wordy@structured_memory", "steady@structured_memory"]
    assert report.only_a == ["wordy@independent", "steady@independent"] and not report.only_b
    assert report.run_a.prompt_style == "plain" and report.run_b.prompt_style == "paraphrase"
    by = {(r.model, r.metric_kind, r.metric): r for r in report.rows}
    wordy = by["wordy", "summary", "coherence"]
    assert wordy.n_stories == 40
    assert wordy.ci_low is not None and wordy.ci_high is not None
    assert 0 < wordy.ci_low < 0.30 < wordy.ci_high  # true difference 0.40 − 0.10
    assert wordy.diff == pytest.approx(wordy.a_score - wordy.b_score)
    steady = by["steady", "summary", "coherence"]
    assert steady.diff == 0.0 and (steady.ci_low, steady.ci_high) == (0.0, 0.0)
    assert {r.metric for r in report.rows if r.model == "wordy"} >= {
        "identity", "clothing", "adherence", "coherence", "conditional_coherence", "global",
    }  # fmt: skip


def test_compare_runs_cli(runs: tuple[Path, Path], tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "sens"
    argv = ["compare-runs", str(runs[0]), str(runs[1]), "--out", str(out), "--resamples", "300"]
    assert main([*argv, "--model", "wordy", "--metric", "coherence,identity"]) == 0
    text = capsys.readouterr().out
    assert "wordy" in text and "steady" not in text.split("only in run")[0]
    assert "coherence" in text and "identity" in text and "global" not in text
    assert "only in run A (not compared): wordy@independent" in text
    report = SensitivityReport.model_validate_json((out / "prompt_sensitivity.json").read_text())
    assert report.cells == ["wordy@structured_memory"] and report.n_resamples == 300
    csv = (out / "prompt_sensitivity.csv").read_text().splitlines()
    assert csv[0].startswith("evaluator,model,condition,metric_kind,metric,a_score")
    assert len(csv) == 1 + len(report.rows)
    assert main(["compare-runs", str(runs[0]), str(runs[1]), "--resamples", "50"]) == 0
    assert (runs[0] / "sensitivity" / "prompt_sensitivity.json").is_file()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "nope"], "no model 'nope' in either run"),
        (["--condition", "independent"], "no (model, condition) evaluated in both"),
        (["--metric", "colour"], "unknown metric 'colour'"),
        (["--evaluator", "vlm"], "no rows of evaluator 'vlm'"),
    ],
)
def test_compare_runs_errors_are_one_line(
    runs: tuple[Path, Path], extra: list[str], message: str, capsys: Any
) -> None:
    assert main(["compare-runs", str(runs[0]), str(runs[1]), *extra]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_runs_of_other_stories_are_refused(
    runs: tuple[Path, Path], tmp_path: Path, default_suite: list[Story], capsys: Any
) -> None:
    assert main(["compare-runs", str(runs[0]), str(runs[0])]) == 1
    assert "same directory" in capsys.readouterr().err
    fewer = _write_run(tmp_path / "fewer", default_suite[:30], P_FAIL["b"], ["structured_memory"])
    assert main(["compare-runs", str(runs[0]), str(fewer)]) == 1
    assert "not of the same stories: 10 story id(s) in one run only" in capsys.readouterr().err
    moved = tmp_path / "moved"
    shutil.copytree(runs[1], moved)
    path = moved / "suite" / "counting-hard.json"
    doc = json.loads(path.read_text())
    req = doc["scenes"][2]["requirements"][1]
    req["expected"] = "somewhere else"
    path.write_text(json.dumps(doc))
    assert main(["compare-runs", str(runs[0]), str(moved)]) == 1
    err = capsys.readouterr().err
    assert f"story 'counting-hard' differs in requirement {req['id']}" in err
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "evaluations").mkdir()
    (bare / "evaluations" / "requirements.jsonl").write_text(
        (runs[1] / "evaluations" / "requirements.jsonl").read_text()
    )
    assert main(["compare-runs", str(runs[0]), str(bare)]) == 1
    assert "no suite/ directory" in capsys.readouterr().err


def test_analysis_cli(runs: tuple[Path, Path], capsys: Any) -> None:
    """``vsb analysis`` on the plain run: the memory gain of both models is printed and
    written; a run without the conditions it compares is one clear line."""
    assert main(["analysis", str(runs[0]), "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "memory gain" in text and "wordy" in text and "steady" in text
    assert (runs[0] / "analysis" / "analysis.json").is_file()
    assert (runs[0] / "analysis" / "effects.csv").is_file()
    out = runs[0].parent / "elsewhere"
    assert main(["analysis", str(runs[0]), "--resamples", "50", "--out", str(out)]) == 0
    assert f"wrote 3 files to {out}" in capsys.readouterr().out
    assert (out / "fact_groups.csv").is_file()
    assert main(["analysis", str(runs[1])]) == 1
    err = capsys.readouterr().err
    assert "no pair of conditions to analyse" in err and len(err.strip().splitlines()) == 1
    assert main(["analysis", str(runs[0]), "--metric", "colour"]) == 1
    assert "unknown metric" in capsys.readouterr().err
