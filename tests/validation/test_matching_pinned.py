"""Fault matching, pinned rule by rule: attribute aliases, the detection unit's defaults, the
root-cause view on a hand-made table, strict folding, the faults file, and the counts of
``taxonomy_metrics`` (non-visual faults and other images left out)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vsb.errors import InputError, RunError
from vsb.scores.inputs import RequirementRows
from vsb.story.models import TAXONOMY
from vsb.validation.matching import (
    Detection,
    Fault,
    Frame,
    detections,
    frames_of,
    load_faults,
    norm_attribute,
    strict_units,
    taxonomy_metrics,
)
from vsb.validation.models import TaxonomyMetrics

F1: Frame = ("m", "c", "s1", 1)
F2: Frame = ("m", "c", "s1", 2)

Check = tuple[str, str, str, str, str]
"""(subject, attribute, own taxonomy, verdict, failure label)."""


def _rows(checks: list[Check], frame: Frame = F1) -> RequirementRows:
    rows = RequirementRows()
    for subject, attribute, taxonomy, verdict, failure in checks:
        row: dict[str, Any] = {
            "model": frame[0], "condition": frame[1], "story_id": frame[2], "scene": frame[3],
            "dimension": "clothing", "source": "memory", "subject": subject,
            "attribute": attribute, "taxonomy": taxonomy, "passed": verdict == "passed",
            "failure": failure, "verdict": verdict,
        }  # fmt: skip
        rows.append(row)
    return rows


def _fault(subject: str, attribute: str, taxonomy: str, frame: Frame = F1, visual: bool = True):
    return Fault(frame, subject, attribute, taxonomy, visual)


def _table(faults: list[Fault], units: list[Detection], frames: set[Frame] | None = None):
    rows = taxonomy_metrics(faults, units, frames if frames is not None else {F1, F2})
    return {t.taxonomy: t for t in rows}


# --- aliases and keys -----------------------------------------------------------------------


def test_oracle_attributes_are_checked_under_the_requirement_attribute() -> None:
    assert norm_attribute("hair_color") == "hair"
    assert norm_attribute("hair_style") == "hair"
    assert norm_attribute("color") == "present"
    for same in ("top", "skin", "present", "holder", "order", "state"):
        assert norm_attribute(same) == same


def test_keys_are_image_subject_and_label() -> None:
    assert _fault("Ana", "top", "clothing_change").key == (F1, "Ana", "clothing_change")
    assert Detection(F2, "vase", "wrong_state").key == (F2, "vase", "wrong_state")


def test_a_new_detection_unit_is_neither_knock_on_nor_direct_and_holds_no_attribute() -> None:
    a, b = Detection(F1, "Ana", "clothing_change"), Detection(F1, "Bo", "clothing_change")
    assert (a.knock_on, a.direct, a.attributes) == (False, False, set())
    a.attributes.add("top")
    assert b.attributes == set()  # not shared between units


# --- the root-cause view on a hand-made table -----------------------------------------------

# (unit subject, unit label, unit attributes, knock-on, fault subject, attribute, taxonomy,
#  whether the unit detects the fault in the root-cause view)
ROOT_CAUSE_TABLE = [
    # same subject: the fault's attribute was checked, under another label
    ("Ana", "identity_drift", {"top"}, False, "Ana", "top", "clothing_change", True),
    # same subject: the label is the fault's taxonomy, on another attribute
    ("Ana", "clothing_change", {"trousers"}, False, "Ana", "top", "clothing_change", True),
    # same subject, neither the attribute nor the label
    ("Ana", "pose_mismatch", {"pose"}, False, "Ana", "top", "clothing_change", False),
    ("Ana", "pose_mismatch", {"pose"}, True, "Ana", "top", "clothing_change", False),
    # another subject: only a knock-on unit with the fault's taxonomy
    ("Ana", "character_missing", {"top"}, True, "Bo", "present", "character_missing", True),
    ("Ana", "character_missing", {"top"}, False, "Bo", "present", "character_missing", False),
    ("Ana", "clothing_change", {"present"}, True, "Bo", "present", "character_missing", False),
    # another subject: a checked attribute of the same name is not enough
    ("Ana", "identity_drift", {"top"}, False, "Bo", "top", "clothing_change", False),
    ("Ana", "identity_drift", {"top"}, True, "Bo", "top", "clothing_change", False),
]


@pytest.mark.parametrize(
    ("u_subject", "u_label", "u_attrs", "knock_on", "f_subject", "f_attr", "f_tax", "match"),
    ROOT_CAUSE_TABLE,
)
def test_root_cause_view_on_a_hand_made_table(
    u_subject: str,
    u_label: str,
    u_attrs: set[str],
    knock_on: bool,
    f_subject: str,
    f_attr: str,
    f_tax: str,
    match: bool,
) -> None:
    unit = Detection(F1, u_subject, u_label, set(u_attrs), knock_on=knock_on)
    assert unit.matches_root_cause(_fault(f_subject, f_attr, f_tax)) is match


def test_root_cause_counts_leave_out_non_visual_faults_and_other_images() -> None:
    # Ana's top repainted (visual), a non-visual fault on Bo, a fault on an image not scored
    faults = [
        _fault("Ana", "top", "clothing_change"),
        _fault("Bo", "top", "clothing_change", visual=False),
        _fault("Cy", "top", "clothing_change", frame=F2),
    ]
    units = detections(
        _rows([("Ana", "top", "clothing_change", "failed", "identity_drift"),
               ("Bo", "top", "clothing_change", "failed", "")])
    )  # fmt: skip
    t = _table(faults, units, {F1})
    cc, idd = t["clothing_change"], t["identity_drift"]
    assert (cc.n_faults, cc.n_detected, cc.n_detected_root_cause) == (1, 0, 1)
    # Bo's detection is false: the only fault on Bo is not visual
    assert (cc.n_detections, cc.n_true_detections) == (1, 0)
    assert (cc.n_detections_root_cause, cc.n_true_detections_root_cause) == (1, 0)
    assert (idd.n_detections_root_cause, idd.n_true_detections_root_cause) == (1, 1)
    assert idd.n_label_agree == 0 and cc.n_label_agree == 0
    a = t["all"]
    assert (a.n_faults, a.n_detected_root_cause, a.recall_root_cause) == (1, 1, 1.0)
    assert (a.n_detections_root_cause, a.precision_root_cause) == (2, 0.5)


def test_label_agreement_counts_units_whose_label_is_a_matched_fault_taxonomy() -> None:
    faults = [_fault("Ana", "top", "clothing_change"), _fault("Ana", "pose", "pose_mismatch")]
    units = detections(
        _rows([("Ana", "top", "clothing_change", "failed", ""),
               ("Ana", "pose", "pose_mismatch", "failed", "identity_drift")])
    )  # fmt: skip
    t = _table(faults, units)
    assert t["clothing_change"].n_label_agree == 1
    assert t["identity_drift"].n_label_agree == 0
    assert t["identity_drift"].n_true_detections_root_cause == 1
    assert t["all"].n_label_agree == 1


def test_label_agreement_counts_every_agreeing_unit() -> None:
    faults = [_fault("Ana", "top", "clothing_change"), _fault("Bo", "top", "clothing_change")]
    units = detections(
        _rows([("Ana", "top", "clothing_change", "failed", ""),
               ("Bo", "top", "clothing_change", "failed", "")])
    )  # fmt: skip
    assert _table(faults, units)["clothing_change"].n_label_agree == 2


def test_a_label_outside_the_taxonomy_gets_a_row_from_a_fault_alone() -> None:
    t = _table([_fault("Ana", "top", "zz_fault_only")], [])
    assert (t["zz_fault_only"].n_faults, t["zz_fault_only"].recall) == (1, 0.0)
    assert t["all"].n_faults == 1


def test_a_knock_on_unit_credits_a_fault_on_another_subject_in_the_same_image_only() -> None:
    faults = [_fault("Bo", "present", "character_missing", frame=F2)]
    units = detections(_rows([("Ana", "top", "clothing_change", "failed", "character_missing")]))
    cm = _table(faults, units)["character_missing"]
    assert (cm.n_detected_root_cause, cm.n_true_detections_root_cause) == (0, 0)


# --- detection units ------------------------------------------------------------------------


def test_detection_units_group_by_subject_and_label_in_row_order() -> None:
    rows = _rows(
        [("Bo", "top", "clothing_change", "failed", ""),  # blank failure: own taxonomy
         ("Ana", "hair", "identity_drift", "unsure", "clothing_change"),  # unsure: its label
         ("Bo", "trousers", "clothing_change", "failed", "clothing_change"),
         ("Bo", "pose", "pose_mismatch", "failed", "character_missing"),
         ("Bo", "present", "character_missing", "failed", "character_missing"),
         ("Ana", "skin", "identity_drift", "passed", ""),
         ("Cy", "top", "clothing_change", "not_applicable", "hidden"),
         ("Cy", "pose", "pose_mismatch", "parse_failure", "gibberish")]
    )  # fmt: skip
    units = detections(rows)
    got = [(u.subject, u.label, sorted(u.attributes), u.direct, u.knock_on) for u in units]
    assert got == [
        ("Bo", "clothing_change", ["top", "trousers"], True, False),
        ("Ana", "clothing_change", ["hair"], False, True),  # a knock-on, like failed
        ("Bo", "character_missing", ["pose", "present"], True, True),
        ("Cy", "pose_mismatch", ["pose"], True, False),
    ]


def test_frames_of_gives_each_row_its_image() -> None:
    rows = _rows([("Ana", "top", "clothing_change", "passed", "")], F1)
    for ch in _rows([("Bo", "top", "clothing_change", "failed", "")], F2).__dict__.items():
        getattr(rows, ch[0]).extend(ch[1])
    assert frames_of(rows) == [F1, F2]


def test_a_ragged_table_is_an_error_not_a_shorter_one() -> None:
    rows = _rows([("Ana", "top", "clothing_change", "failed", "")] * 2)
    rows.scene.pop()
    with pytest.raises(ValueError):
        frames_of(rows)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    subject=st.sampled_from(["Ana", "Bo", "vase", "scene"]),
    attribute=st.sampled_from(["top", "hair", "present", "order", "state"]),
    label=st.sampled_from([t for t in TAXONOMY if t != "generation_failed"]),
    own=st.booleans(),
    extra=st.lists(
        st.tuples(st.sampled_from(["Ana", "Bo", "lamp", "scene"]), st.sampled_from(TAXONOMY)),
        max_size=4,
    ),
)
def test_an_injected_fault_found_on_its_image_subject_and_label_is_a_strict_true_positive(
    subject: str, attribute: str, label: str, own: bool, extra: list[tuple[str, str]]
) -> None:
    """Whatever else the image holds, a failed check on the fault's subject carrying the
    fault's label detects it strictly, and is a true detection. (On a character or object
    the check may be a knock-on, its own taxonomy another; a fault on the scene carries its
    check's own label, since a scene-level knock-on names no subject: see strict_units.)"""
    taxonomy = label if own or subject == "scene" else "clothing_change"
    checks: list[Check] = [(subject, attribute, taxonomy, "failed", label)]
    checks += [(s, "pose", t, "failed", t) for s, t in extra]
    units = detections(_rows(checks))
    t = _table([_fault(subject, attribute, label)], units)
    assert t[label].n_faults == 1 and t[label].n_detected == 1 and t[label].recall == 1.0
    assert t[label].n_true_detections == 1
    assert t[label].n_detected_root_cause == 1 and t[label].n_true_detections_root_cause == 1


def test_a_scene_knock_on_is_no_strict_detection_of_a_scene_fault_beside_a_named_one() -> None:
    # the case the property above leaves out: a scene check failing under a knock-on label
    # is folded into the named unit with that label, so it detects nothing on the scene
    checks: list[Check] = [
        ("scene", "order", "order_swap", "failed", "character_missing"),
        ("Ana", "present", "character_missing", "failed", "character_missing"),
    ]
    t = _table([_fault("scene", "order", "character_missing")], detections(_rows(checks)))
    assert (t["character_missing"].n_detected, t["character_missing"].n_detections) == (0, 1)


# --- strict folding -------------------------------------------------------------------------


def test_scene_knock_on_is_folded_only_into_a_named_unit_of_the_same_image_and_label() -> None:
    scene_ko = Detection(F1, "scene", "character_missing", {"order"}, knock_on=True)
    named_same = Detection(F1, "Ana", "character_missing", {"present"}, direct=True)
    named_other_frame = Detection(F2, "Ana", "character_missing", {"present"}, direct=True)
    named_other_label = Detection(F1, "Ana", "clothing_change", {"top"}, direct=True)
    scene_direct = Detection(F1, "scene", "character_missing", {"order"}, True, True)
    assert strict_units([scene_ko, named_same]) == [named_same]
    assert strict_units([scene_ko, named_other_frame]) == [scene_ko, named_other_frame]
    assert strict_units([scene_ko, named_other_label]) == [scene_ko, named_other_label]
    assert strict_units([scene_direct, named_same]) == [scene_direct, named_same]
    # a character's knock-on unit is never folded
    char_ko = Detection(F1, "Bo", "character_missing", {"top"}, knock_on=True)
    assert strict_units([char_ko, named_same]) == [char_ko, named_same]


# --- metrics rows ---------------------------------------------------------------------------


def test_rows_come_in_taxonomy_order_then_unknown_labels_then_all() -> None:
    units = detections(
        _rows([("Ana", "top", "clothing_change", "failed", "zz_label"),
               ("Ana", "pose", "pose_mismatch", "failed", "aa_label")])
    )  # fmt: skip
    labels = [t.taxonomy for t in taxonomy_metrics([], units, {F1})]
    assert labels == [*TAXONOMY, "aa_label", "zz_label", "all"]


def test_empty_counts_give_no_ratio() -> None:
    t = _table([], [])
    for row in t.values():
        assert isinstance(row, TaxonomyMetrics)
        assert (row.recall, row.precision) == (None, None)
        assert (row.recall_root_cause, row.precision_root_cause) == (None, None)
        assert (row.recall_ci_low, row.precision_ci_low) == (None, None)


def test_metrics_ratios_and_intervals() -> None:
    faults = [_fault(n, "top", "clothing_change") for n in ("Ana", "Bo", "Cy", "Di")]
    units = detections(
        _rows([("Ana", "top", "clothing_change", "failed", ""),
               ("Bo", "top", "clothing_change", "failed", ""),
               ("Ed", "top", "clothing_change", "failed", "")])
    )  # fmt: skip
    cc = _table(faults, units)["clothing_change"]
    assert (cc.n_faults, cc.n_detected, cc.recall) == (4, 2, 0.5)
    assert (cc.n_detections, cc.n_true_detections) == (3, 2)
    assert cc.precision == pytest.approx(2 / 3)
    assert cc.recall_ci_low is not None and cc.recall_ci_high is not None
    assert cc.precision_ci_low is not None and cc.precision_ci_high is not None
    assert cc.recall_ci_low < 0.5 < cc.recall_ci_high
    assert cc.precision_ci_low < 2 / 3 < cc.precision_ci_high
    assert cc.recall_ci_high != cc.precision_ci_high
    assert (cc.n_detected_root_cause, cc.n_true_detections_root_cause) == (2, 2)
    assert (cc.recall_root_cause, cc.precision_root_cause) == (0.5, pytest.approx(2 / 3))


# --- the faults file ------------------------------------------------------------------------


def _write_faults(run: Path, lines: list[dict[str, Any]]) -> None:
    (run / "oracle").mkdir(parents=True, exist_ok=True)
    (run / "oracle" / "faults.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_load_faults_reads_normalises_and_defaults_visual(tmp_path: Path) -> None:
    base = {"model": "m", "condition": "c", "story_id": "s1", "scene": "2"}
    _write_faults(
        tmp_path,
        [{**base, "subject": "Ana", "attribute": "hair_color", "taxonomy": "identity_drift"},
         {**base, "subject": "vase", "attribute": "color", "taxonomy": "object_color_change",
          "visual": False}],
    )  # fmt: skip
    faults = load_faults(tmp_path)
    assert faults == [
        Fault(("m", "c", "s1", 2), "Ana", "hair", "identity_drift", True, recolour=False),
        Fault(("m", "c", "s1", 2), "vase", "present", "object_color_change", False, recolour=True),
    ]


def test_a_run_without_an_oracle_is_a_run_error(tmp_path: Path) -> None:
    with pytest.raises(RunError) as err:
        load_faults(tmp_path)
    assert err.value.message == "run has no oracle (only simulator runs have one)"
    assert err.value.file == str(tmp_path / "oracle" / "faults.jsonl")


def test_a_fault_missing_fields_names_them_and_the_line(tmp_path: Path) -> None:
    good = {"model": "m", "condition": "c", "story_id": "s", "scene": 1, "subject": "Ana",
            "attribute": "top", "taxonomy": "clothing_change"}  # fmt: skip
    bad = {k: v for k, v in good.items() if k not in ("scene", "taxonomy")}
    _write_faults(tmp_path, [good, bad])
    with pytest.raises(InputError) as err:
        load_faults(tmp_path)
    assert err.value.message == "missing field(s) scene, taxonomy"
    assert err.value.location == "line 2"
    assert err.value.file == str(tmp_path / "oracle" / "faults.jsonl")
