"""VinaBench's metrics against the sealed oracle (issue 47, item 5): the literal judge reads
VinaBench's questions from the picture (true renders: every answer yes, every count right),
and the validity table counts each metric's units against the faults injected in them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.evaluators.render.detected import DetectedObject, DetectedPerson, DetectedState
from vsb.generator.generate import write_suite
from vsb.release import stages as st
from vsb.story.models import Story
from vsb.validation.matching import Fault, load_faults
from vsb.validation.vina.ask import ask_vinabench
from vsb.validation.vina.judge import answer_many, answer_one, profile_cues
from vsb.validation.vina.validity import (
    VALIDITY_CSV,
    VALIDITY_JSON,
    VinaValidityReport,
    spearman,
    validity,
)

MODELS = ("procedural-oracle", "procedural-sloppy", "procedural-drift-mid")
CONDITION = "structured_memory"
YN = "Only answer yes or no."


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    """Four stories (objects, counts, several people) of three simulators under
    structured_memory, evaluated by the default evaluators (the rule checker's memory
    coherence)."""
    root = tmp_path_factory.mktemp("vinavalid")
    picked = [s for s in default_suite if s.id in
              ("counting-hard", "wardrobe-hard", "location_transitions-medium-a",
               "temporal_progression-medium-a")]  # fmt: skip
    assert len(picked) == 4
    write_suite(picked, root / "suite")
    run = root / "run"
    argv = ["run", "--suite", str(root / "suite"), "--model", ",".join(MODELS),
            "--condition", CONDITION, "--out", str(run), "--cache", str(root / "cache"),
            "--workers", "1"]  # fmt: skip
    assert main(argv) == 0
    assert main(["evaluate", str(run), "--workers", "1"]) == 0
    return run


@pytest.fixture(scope="module")
def answers(small_run: Path) -> list[dict]:
    return ask_vinabench(small_run, models=MODELS)


def test_the_literal_judge_answers_yes_to_every_question_about_true_renders(
    answers: list[dict],
) -> None:
    oracle = [a for a in answers if a["model"] == "procedural-oracle"]
    assert {a["metric"] for a in oracle} == {
        "entity_align", "char_num_align", "char_attr_align", "time_align", "location_align",
        "style_consist", "char_consist", "location_consist",
    }  # fmt: skip
    assert all(a["value"] == 1.0 for a in oracle), [a for a in oracle if a["value"] < 1][:3]
    for a in oracle:
        if a["metric"] == "char_num_align":  # the count, read from the picture, is right
            assert a["answer"].isdigit() and a["answer"] != ""
        else:
            assert a["answer"] == "YES"
    assert len(answers) == 3 * len(oracle)  # every simulator asked the same questions


def test_served_over_http_and_in_process_give_the_same_answers(
    small_run: Path, answers: list[dict]
) -> None:
    served = ask_vinabench(small_run, models=MODELS[:1], served=True)
    assert served == [a for a in answers if a["model"] == MODELS[0]]


def test_each_question_is_read_literally_from_what_is_decoded() -> None:
    ana = DetectedPerson(0.0, "tone-5", "black", "short", "red", "blue", "hat", "standing")
    bo = DetectedPerson(1.0, "tone-2", "blond", "bun", "green", "navy", "none", "sitting")
    d = DetectedState(
        (ana, bo),
        (DetectedObject("umbrella", "red", "open", None, 0, False, 0.0),
         DetectedObject("apple", "green", "whole", 3, None, True, 1.5)),
        "park", "night", "clear",
    )  # fmt: skip
    ent = "Does this image contain or imply '{}'? " + YN
    assert answer_one(d, ent.format("open red umbrella")) == "YES"
    assert answer_one(d, ent.format("closed red umbrella")) == "NO"
    assert answer_one(d, ent.format("open blue umbrella")) == "NO"
    assert answer_one(d, ent.format("three green apples")) == "YES"
    assert answer_one(d, ent.format("two green apples")) == "NO"
    assert answer_one(d, ent.format("lit red lantern")) == "NO"
    assert (
        answer_one(d, "How many characters are in this image? Only answer an Arabic number.") == "2"
    )
    lines = ("Character descriptions:\nAna: dark skin, short black hair, a red top, blue "
             "trousers, a hat\nBo: light skin, blond hair in a bun, no accessory\n")  # fmt: skip
    ask = "Do characters in this image fit into their descriptions? " + YN
    assert answer_one(d, lines + ask) == "YES"
    assert answer_one(d, lines.replace("a red top", "a green top") + ask) == "NO"
    # two descriptions one person fits: each must be a different person
    both = "Character descriptions:\nA: light skin\nB: light skin\n"
    assert answer_one(d, both + ask) == "NO"
    assert answer_one(d, f"Is this image taken at night? {YN}") == "YES"
    assert answer_one(d, f"Is this image taken in the morning? {YN}") == "NO"
    assert answer_one(d, f"Is this image taken at a park? {YN}") == "YES"
    assert answer_one(d, f"Is this image taken at a beach? {YN}") == "NO"
    assert answer_one(d, "Is there a red umbrella in the picture?") is None  # vsb's own
    same = f"Do all these images contain the same charcater Ana: dark skin, a red top? {YN}"
    other = DetectedState((bo,), (), "beach", "noon", "clear")
    assert answer_many([d, d], same) == "YES"
    assert answer_many([d, other], same) == "NO"
    assert answer_many([d, d], f"Are all these images taken at the same park? {YN}") == "YES"
    assert answer_many([d, other], f"Are all these images taken at the same park? {YN}") == "NO"
    assert answer_many([d, other], f"Are all these images in the same style? {YN}") == "YES"
    assert answer_many([d, None], f"Are all these images in the same style? {YN}") == "NO"
    assert profile_cues("very light skin, long grey hair") == (
        ("skin", "tone-1"), ("hair_color", "grey"), ("hair_style", "long"),
    )  # fmt: skip


def _a(model: str, story: str, metric: str, scenes: tuple[int, ...], value: float,
       subject: str = "") -> dict:  # fmt: skip
    unit = 0 if metric in ("style_consist", "char_consist", "location_consist") else scenes[0]
    return {"model": model, "condition": CONDITION, "story_id": story, "metric": metric,
            "unit": unit, "scenes": list(scenes), "subject": subject, "value": value}  # fmt: skip


def _f(model: str, story: str, scene: int, label: str, visual: bool = True) -> Fault:
    return Fault((model, CONDITION, story, scene), "Ana", "x", label, visual)


def test_recall_precision_and_recall_alone_as_documented() -> None:
    m = "sim"
    answers = [
        # location_align, one unit per scene: s1 fails (wrong_location), s2 fails (both
        # labels), s3 passes (wrong_weather only), s4 clean and passes, s5 clean but fails
        _a(m, "a", "location_align", (1,), 0.0), _a(m, "a", "location_align", (2,), 0.0),
        _a(m, "a", "location_align", (3,), 1.0), _a(m, "a", "location_align", (4,), 1.0),
        _a(m, "a", "location_align", (5,), 0.0),
        # entities share a scene: two entities, one no -> the unit (scene 1) fails
        _a(m, "a", "entity_align", (1,), 1.0, "box"), _a(m, "a", "entity_align", (1,), 0.0),
        # a consistency question carries the labels of every image it shows
        _a(m, "a", "location_consist", (1, 3), 1.0, "park"),
    ]  # fmt: skip
    faults = [_f(m, "a", 1, "wrong_location"), _f(m, "a", 2, "wrong_location"),
              _f(m, "a", 2, "wrong_weather"), _f(m, "a", 3, "wrong_weather"),
              _f(m, "a", 4, "identity_drift", visual=False)]  # fmt: skip
    rep = validity(answers, faults, {})
    loc = {r.label: r for r in rep.labels if r.metric == "location_align"}
    assert (loc["wrong_location"].units, loc["wrong_location"].caught) == (2, 2)
    assert loc["wrong_location"].recall == 1.0
    assert loc["wrong_location"].precision == pytest.approx(2 / 3)  # s5's failure is clean
    assert (loc["wrong_location"].alone, loc["wrong_location"].recall_alone) == (1, 1.0)
    assert (loc["wrong_weather"].units, loc["wrong_weather"].caught) == (2, 1)
    assert (loc["wrong_weather"].alone, loc["wrong_weather"].caught_alone) == (1, 0)
    assert loc["any"].units == 3 and loc["any"].precision == pytest.approx(2 / 3)
    assert "identity_drift" not in loc  # not visual: carried by no unit
    s = rep.metric(m, "location_align")
    assert s is not None and (s.units, s.failed, s.clean, s.false_alarms) == (5, 3, 2, 1)
    ent = rep.label(m, "entity_align", "wrong_location")
    assert ent is not None and (ent.units, ent.caught) == (1, 1)
    cons = {r.label: r for r in rep.labels if r.metric == "location_consist"}
    assert set(cons) == {"wrong_location", "wrong_weather", "any"}
    assert cons["wrong_location"].caught == 0 and cons["wrong_location"].alone == 0
    assert rep.pools() == [m]  # one simulator: no pooled row


def test_spearman_matches_scipy() -> None:
    from scipy.stats import spearmanr

    x, y = [0.1, 0.5, 0.5, 0.9, 0.2, 0.7], [1.0, 0.2, 0.4, 0.3, 0.9, 0.3]
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert spearman([1, 1, 1], [1, 2, 3]) is None and spearman([1, 2], [2, 1]) is None


def test_the_table_on_a_small_run_with_known_faults(small_run: Path, answers: list[dict]) -> None:
    """The release's step: answers in, validation/vinabench_validity.{json,csv} out."""
    written = st.write_references(small_run, {st.VINABENCH: answers})
    assert written == [VALIDITY_JSON, VALIDITY_CSV]
    rep = VinaValidityReport.model_validate_json((small_run / VALIDITY_JSON).read_text())
    assert rep.models == sorted(MODELS) and rep.pools()[-1] == "all"
    assert rep.questions == len(answers) and rep.conditions == [CONDITION]
    faults = [f for f in load_faults(small_run) if f.visual]
    assert faults and all(f.frame[0] != "procedural-oracle" for f in faults)
    for s in rep.metrics:  # the literal judge never fails a clean unit here
        assert s.false_alarms == 0, s
        if s.model == "procedural-oracle":
            assert s.failed == 0 and s.spearman is None  # coherence is 1 everywhere
    for r in rep.labels:
        assert 0 <= r.caught <= r.units and r.caught <= r.failed
        if r.label == "any":
            assert r.precision in (None, 1.0)
    # what the questions ask about is caught wherever it was injected
    for metric, label in (("location_align", "wrong_location"),
                          ("time_align", "time_regression"),
                          ("char_num_align", "character_missing"),
                          ("char_attr_align", "identity_drift"),
                          ("entity_align", "object_disappeared")):  # fmt: skip
        row = rep.label("all", metric, label)
        if row is not None and row.alone:
            assert row.recall_alone == 1.0, row
    assert any(r.caught for r in rep.labels)
    header = (small_run / VALIDITY_CSV).read_text().splitlines()[0]
    assert header.startswith("model,metric,label,units,caught,recall,failed,precision")
    coh = [s for s in rep.metrics if s.model == "all" and s.spearman is not None]
    assert coh and all(-1.0 <= s.spearman <= 1.0 for s in coh)
    json.loads((small_run / VALIDITY_JSON).read_text())  # plain JSON
