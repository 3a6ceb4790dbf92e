"""Strict matching (same image, subject and label) against the root-cause view, on
hand-built rows: a fault found under another label or on another subject is detected in the
root-cause view only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vsb.scores.inputs import RequirementRows
from vsb.validation.judge import validate_run
from vsb.validation.matching import Fault, detections, strict_units, taxonomy_metrics
from vsb.validation.models import TaxonomyMetrics

FRAME = ("m", "c", "s1", 2)


def _rows(checks: list[tuple[str, str, str, str, str]]) -> RequirementRows:
    """(subject, attribute, own taxonomy, verdict, failure label) per check of FRAME."""
    rows = RequirementRows()
    for subject, attribute, taxonomy, verdict, failure in checks:
        row: dict[str, Any] = {
            "model": FRAME[0], "condition": FRAME[1], "story_id": FRAME[2], "scene": FRAME[3],
            "dimension": "clothing", "source": "memory", "subject": subject,
            "attribute": attribute, "taxonomy": taxonomy, "passed": verdict == "passed",
            "failure": failure, "verdict": verdict,
        }  # fmt: skip
        rows.append(row)
    return rows


def _fault(subject: str, attribute: str, taxonomy: str) -> Fault:
    return Fault(FRAME, subject, attribute, taxonomy, visual=True)


def _table(
    checks: list[tuple[str, str, str, str, str]], faults: list[Fault]
) -> dict[str, TaxonomyMetrics]:
    return {t.taxonomy: t for t in taxonomy_metrics(faults, detections(_rows(checks)), {FRAME})}


def test_fault_found_under_another_label_is_not_a_strict_detection() -> None:
    # Ana's top was repainted (clothing_change); the checker fails the top check but calls it
    # identity_drift: the same subject and attribute, another label.
    t = _table(
        [("Ana", "top", "clothing_change", "failed", "identity_drift"),
         ("Ana", "hair", "identity_drift", "passed", "")],
        [_fault("Ana", "top", "clothing_change")],
    )  # fmt: skip
    cc, idd = t["clothing_change"], t["identity_drift"]
    assert (cc.n_faults, cc.n_detected, cc.recall) == (1, 0, 0.0)
    assert (cc.n_detected_root_cause, cc.recall_root_cause) == (1, 1.0)
    assert (idd.n_detections, idd.n_true_detections, idd.precision) == (1, 0, 0.0)
    assert (idd.n_true_detections_root_cause, idd.precision_root_cause) == (1, 1.0)
    assert idd.n_label_agree == 0


def test_fault_found_on_another_subject_is_not_a_strict_detection() -> None:
    # Bo is missing; the checker finds Bo (as someone else) and instead loses Ana, failing
    # Ana's checks as character_missing knock-ons: right label, wrong subject.
    t = _table(
        [("Ana", "top", "clothing_change", "failed", "character_missing"),
         ("Ana", "hair", "identity_drift", "failed", "character_missing"),
         ("Bo", "present", "character_missing", "passed", "")],
        [_fault("Bo", "present", "character_missing")],
    )  # fmt: skip
    cm = t["character_missing"]
    assert (cm.n_faults, cm.n_detected, cm.recall) == (1, 0, 0.0)
    assert (cm.n_detections, cm.n_true_detections, cm.precision) == (1, 0, 0.0)
    assert (cm.recall_root_cause, cm.precision_root_cause) == (1.0, 1.0)
    a = t["all"]
    assert (a.recall, a.precision, a.recall_root_cause, a.precision_root_cause) == (
        0.0, 0.0, 1.0, 1.0,
    )  # fmt: skip


def test_scene_knock_on_is_folded_into_the_missing_character() -> None:
    checks = [
        ("Ana", "present", "character_missing", "failed", "character_missing"),
        ("Ana", "top", "clothing_change", "failed", "character_missing"),
        ("scene", "order", "order_swap", "failed", "character_missing"),
    ]
    faults = [_fault("Ana", "present", "character_missing")]
    units = detections(_rows(checks))
    assert len(units) == 2 and len(strict_units(units)) == 1
    cm = _table(checks, faults)["character_missing"]
    assert (cm.n_detections, cm.n_true_detections, cm.precision, cm.recall) == (1, 1, 1.0, 1.0)
    assert (cm.n_detections_root_cause, cm.n_true_detections_root_cause) == (2, 2)
    # alone (no character carries the label), the scene knock-on names no faulty subject
    alone = _table([checks[2]], faults)["character_missing"]
    assert (alone.n_detections, alone.n_true_detections, alone.recall) == (1, 0, 0.0)


def test_scene_level_own_label_is_a_detection_of_the_scene() -> None:
    t = _table(
        [("scene", "order", "order_swap", "failed", "order_swap")],
        [_fault("scene", "order", "order_swap")],
    )
    assert (t["order_swap"].recall, t["order_swap"].precision) == (1.0, 1.0)


def test_unsure_and_parse_failure_are_detections_not_applicable_is_not() -> None:
    # a judge: unsure about a true fact (false violation), parse failure on a fault (found),
    # not applicable on another fault (missed, and no detection)
    t = _table(
        [("Ana", "top", "clothing_change", "unsure", ""),
         ("Ana", "pose", "pose_mismatch", "parse_failure", ""),
         ("lamp", "state", "wrong_state", "not_applicable", "object hidden")],
        [_fault("Ana", "pose", "pose_mismatch"), _fault("lamp", "state", "wrong_state")],
    )  # fmt: skip
    assert (t["clothing_change"].n_detections, t["clothing_change"].precision) == (1, 0.0)
    assert (t["pose_mismatch"].recall, t["pose_mismatch"].precision) == (1.0, 1.0)
    ws = t["wrong_state"]
    assert (ws.n_faults, ws.n_detected, ws.n_detections, ws.n_detections_root_cause) == (
        1, 0, 0, 0,
    )  # fmt: skip
    # a failure text on a not_applicable row is a reason, never a label
    assert "object hidden" not in t


def test_wilson_intervals_cover_the_estimate() -> None:
    t = _table(
        [("Ana", "top", "clothing_change", "failed", "clothing_change"),
         ("Bo", "top", "clothing_change", "passed", "")],
        [_fault("Ana", "top", "clothing_change"), _fault("Bo", "top", "clothing_change")],
    )  # fmt: skip
    cc = t["clothing_change"]
    assert cc.recall == 0.5
    assert cc.recall_ci_low is not None and cc.recall_ci_high is not None
    assert 0.0 < cc.recall_ci_low < 0.5 < cc.recall_ci_high < 1.0
    assert t["wrong_state"].recall_ci_low is None and t["wrong_state"].precision_ci_high is None


def test_validate_run_counts_strictly(tmp_path: Path) -> None:
    """End to end through validate_run (run-directory files): the two misattributed faults
    are missed, and their detections are false, in the headline (strict) table."""
    checks = [
        ("Ana", "top", "clothing_change", "failed", "identity_drift"),
        ("Bo", "top", "clothing_change", "failed", "character_missing"),
        ("Cy", "present", "character_missing", "passed", ""),
    ]
    faults = [("Ana", "top", "clothing_change"), ("Cy", "present", "character_missing")]
    base = {"model": FRAME[0], "condition": FRAME[1], "story_id": FRAME[2], "scene": FRAME[3]}
    reqs = [
        {**base, "dimension": "clothing", "source": "memory", "subject": s, "attribute": a,
         "taxonomy": tax, "passed": v == "passed", "failure": f}
        for s, a, tax, v, f in checks
    ]  # fmt: skip
    oracle = [{**base, "subject": s, "attribute": a, "taxonomy": t} for s, a, t in faults]
    (tmp_path / "evaluations").mkdir()
    (tmp_path / "oracle").mkdir()
    for name, items in (("evaluations/requirements.jsonl", reqs), ("oracle/faults.jsonl", oracle)):
        (tmp_path / name).write_text("".join(json.dumps(x) + "\n" for x in items))
    t = {x.taxonomy: x for x in validate_run(tmp_path).taxonomy}
    for label in ("clothing_change", "character_missing"):
        assert (t[label].n_faults, t[label].recall) == (1, 0.0), label
    assert t["identity_drift"].precision == 0.0 and t["character_missing"].precision == 0.0
    assert (t["all"].recall, t["all"].precision) == (0.0, 0.0)
    # the root-cause view credits both
    assert (t["all"].recall_root_cause, t["all"].precision_root_cause) == (1.0, 1.0)
