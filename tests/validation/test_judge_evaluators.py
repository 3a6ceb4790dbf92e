"""A synthetic VLM judge beside a perfect rule checker: requirement rows with evaluator "vlm"
built from the oracle with a known error rate (seeded flips), plus unsure, parse-failure and
not-applicable rows. Validation must recover the error rate within its interval, report the
verdict rates exactly, and keep one section per evaluator (library, files and CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vsb.cli.main import main
from vsb.validation.judge import validate_run, write_judge
from vsb.validation.models import JudgeReport

#: One check per (subject, label), so every failed check is its own detection unit.
CHECKS = [("Ana", "top", "clothing_change"), ("Ana", "pose", "pose_mismatch"),
          ("Bo", "hair", "identity_drift"), ("lamp", "state", "wrong_state"),
          ("scene", "time", "time_regression"), ("scene", "weather", "wrong_weather")]  # fmt: skip
P_FLIP, Q_UNSURE, Q_PARSE = 0.1, 0.05, 0.02
JUDGE = "openai-compatible:gpt-4o"


def _write(root: Path, name: str, items: list[dict[str, Any]]) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text("".join(json.dumps(x) + "\n" for x in items))


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The run, and what went into it (counts the validation must reproduce)."""
    rng = np.random.default_rng(7)
    rows: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    signals: list[dict[str, Any]] = []
    truth: dict[str, int] = dict.fromkeys(("faults", "found", "false", "unsure", "parse", "na"), 0)
    for model in ("m1", "m2"):
        for story in range(30):
            for scene in range(1, 7):
                frame = {"model": model, "condition": "c", "story_id": f"s{story}", "scene": scene}
                passed_vlm, checks_vlm = 0, 0
                for subject, attribute, tax in CHECKS:
                    fault = scene > 1 and rng.random() < 0.25
                    common = {**frame, "subject": subject, "attribute": attribute,
                              "taxonomy": tax}  # fmt: skip
                    req = {**common, "dimension": "clothing",
                           "source": "prompt" if scene == 1 else "memory"}  # fmt: skip
                    rows.append({**req, "passed": not fault, "failure": tax if fault else "",
                                 "evaluator": "rules"})  # fmt: skip
                    if fault:
                        faults.append({**common, "visual": True})
                        truth["faults"] += 1
                    r = rng.random()
                    if r < Q_UNSURE:
                        verdict = "unsure"
                        truth["unsure"] += 1
                    elif r < Q_UNSURE + Q_PARSE:
                        verdict = "parse_failure"
                        truth["parse"] += 1
                    else:
                        says_pass = (not fault) != (rng.random() < P_FLIP)
                        verdict = "passed" if says_pass else "failed"
                    if verdict != "passed":
                        truth["found" if fault else "false"] += 1
                    passed_vlm += verdict == "passed"
                    checks_vlm += 1
                    rows.append({**req, "passed": verdict == "passed", "verdict": verdict,
                                 "failure": tax if verdict == "failed" else "",
                                 "evaluator": "vlm", "judge_model": JUDGE})  # fmt: skip
                # a requirement the judge could not apply (excluded everywhere)
                rows.append({**frame, "dimension": "clothing", "source": "memory",
                             "subject": "Ana", "attribute": "accessory",
                             "taxonomy": "clothing_change", "passed": False,
                             "verdict": "not_applicable", "failure": "accessory hidden",
                             "evaluator": "vlm", "judge_model": JUDGE})  # fmt: skip
                truth["na"] += 1
                signals.append({**frame, "signal": "vlm_pass_rate", "evaluator": "vlm",
                                "value": passed_vlm / checks_vlm})  # fmt: skip
                signals.append({**frame, "signal": "pairwise_global", "evaluator": "pairwise",
                                "value": float(rng.random())})  # fmt: skip
    root = tmp_path_factory.mktemp("judged") / "run"
    _write(root, "evaluations/requirements.jsonl", rows)
    _write(root, "evaluations/signals.jsonl", signals)
    _write(root, "oracle/faults.jsonl", faults)
    truth["checks"] = sum(1 for r in rows if r["evaluator"] == "vlm") - truth["na"]
    return root, truth


@pytest.fixture(scope="module")
def report(judged: tuple[Path, dict[str, Any]]) -> JudgeReport:
    return validate_run(judged[0])


def test_one_section_per_evaluator(report: JudgeReport) -> None:
    assert [s.evaluator for s in report.evaluators] == ["rules", "vlm"]
    assert report.section("vlm").judge_model == JUDGE
    assert report.section("rules").judge_model == ""
    rules = report.section("rules")
    for t in rules.taxonomy:
        assert t.recall in (None, 1.0) and t.precision in (None, 1.0)
    assert rules.verdicts.unsure_rate == 0.0 and rules.verdicts.n_not_applicable == 0
    assert report.n_frames == 360


def test_verdict_rates_are_exact(report: JudgeReport, judged: tuple[Path, dict]) -> None:
    truth = judged[1]
    v = report.section("vlm").verdicts
    assert (v.n_unsure, v.n_parse_failure, v.n_not_applicable) == (
        truth["unsure"], truth["parse"], truth["na"],
    )  # fmt: skip
    assert v.n_checks == truth["checks"] == 360 * len(CHECKS)
    assert v.n_rows == v.n_checks + truth["na"]
    assert v.unsure_rate == truth["unsure"] / truth["checks"]
    assert v.parse_failure_rate == truth["parse"] / truth["checks"]
    per_model = report.section("vlm").verdicts_by_model
    assert sum(m.n_unsure for m in per_model.values()) == truth["unsure"]


def test_error_rate_recovered_within_interval(report: JudgeReport, judged: tuple) -> None:
    truth = judged[1]
    a = report.section("vlm").taxonomy[-1]
    # exact counts: unsure and parse failures are detections, not_applicable rows are not
    assert (a.n_faults, a.n_detected) == (truth["faults"], truth["found"])
    assert (a.n_true_detections, a.n_detections) == (
        truth["found"], truth["found"] + truth["false"],
    )  # fmt: skip
    assert a.n_faults > 300
    # a fault is missed only when the judge gave a verdict and flipped it
    expected_recall = 1.0 - (1.0 - Q_UNSURE - Q_PARSE) * P_FLIP
    assert a.recall_ci_low is not None and a.recall_ci_high is not None
    assert a.recall_ci_low <= expected_recall <= a.recall_ci_high
    lo = (1.0 - a.recall_ci_high) / (1.0 - Q_UNSURE - Q_PARSE)
    hi = (1.0 - a.recall_ci_low) / (1.0 - Q_UNSURE - Q_PARSE)
    assert lo <= P_FLIP <= hi and hi - lo < 0.08
    # one check per (subject, label): strict and root cause agree here
    assert (a.recall_root_cause, a.precision_root_cause) == (a.recall, a.precision)


def test_pass_rate_signal_and_coherence(report: JudgeReport, judged: tuple) -> None:
    vlm = report.section("vlm")
    assert (vlm.pass_rate.evaluator, vlm.pass_rate.signal) == ("vlm", "vlm_pass_rate")
    assert vlm.pass_rate.auroc is not None and 0.7 < vlm.pass_rate.auroc < 1.0
    assert report.section("rules").pass_rate.auroc == 1.0
    assert [(a.evaluator, a.signal) for a in report.auroc] == [
        ("rules", "rules_pass_rate"), ("vlm", "vlm_pass_rate"), ("pairwise", "pairwise_global"),
    ]  # fmt: skip
    assert vlm.coherence.signal == "vlm_coherence" and vlm.coherence.n_units == 60
    assert vlm.coherence.spearman is not None and vlm.coherence.spearman > 0.3
    signals = {c.signal for c in report.correlations}
    assert signals == {"rules_coherence", "vlm_coherence", "rules_pass_rate", "vlm_pass_rate",
                       "pairwise_global"}  # fmt: skip


def test_files_carry_every_evaluator(report: JudgeReport, judged: tuple, tmp_path: Path) -> None:
    import pandas as pd

    paths = write_judge(tmp_path, report)
    tax = pd.read_csv(paths[1])
    assert list(dict.fromkeys(tax.evaluator)) == ["rules", "vlm"]
    verdicts = pd.read_csv(paths[5])
    row = verdicts[(verdicts.evaluator == "vlm") & (verdicts.model == "all")].iloc[0]
    assert row.n_unsure == judged[1]["unsure"] and row.judge_model == JUDGE
    assert JudgeReport.model_validate(json.loads(paths[0].read_text())) == report


def test_cli_sections_and_filter(judged: tuple, capsys: pytest.CaptureFixture) -> None:
    run = str(judged[0])
    assert main(["validate-judge", run]) == 0
    out = capsys.readouterr().out
    assert "evaluator rules" in out and f"evaluator vlm ({JUDGE})" in out
    assert "vlm_pass_rate" in out and "pairwise_global" in out
    assert main(["validate-judge", run, "--evaluator", "vlm"]) == 0
    out = capsys.readouterr().out
    assert "evaluator vlm" in out and "evaluator rules" not in out
    assert "pairwise_global" not in out
    written = json.loads((judged[0] / "validation" / "judge.json").read_text())
    assert [s["evaluator"] for s in written["evaluators"]] == ["vlm"]


def test_unknown_evaluator_is_one_line(judged: tuple, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate-judge", str(judged[0]), "--evaluator", "vlm,clip"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "'clip'" in err[0] and "rules, vlm, pairwise" in err[0]
    assert main(["validate-judge", str(judged[0]), "--evaluator", ","]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at least one name" in err[0]
