"""A literal reader of what was drawn reaches the bound on every drifting simulator (issue 34).

The ``literal-drawn`` reference judge reads each question as worded and the picture as the
simulator drew it (the oracle's rendered values, never a fault's label). Asked through the
real pipeline (plan -> OpenAI wire format -> parse -> verdicts and knock-on labels) about
the hard stories of the default suite, under independent and structured memory, its
strict recall and precision must be >= 0.95 on every label with enough faults, on each
of the four drifting simulators, not only drift-mid (``scripts/literal_judge_family.py``
measures the full suite at three seeds; docs/validation.md has the table).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.scores.inputs import load_requirements
from vsb.story.models import Story
from vsb.validation.matching import detections, frames_of, load_faults, taxonomy_metrics
from vsb.validation.models import TaxonomyMetrics
from vsb.validation.reference import judge_folder
from vsb.validation.reference_judges import REFERENCE_JUDGES

DRIFTING = ["procedural-drift-low", "procedural-drift-mid", "procedural-amnesiac",
            "procedural-sloppy"]  # fmt: skip
CONDITIONS = ["independent", "structured_memory"]
#: Labels with at least this many faults in a cell are held to the bound (the issue's 20
#: on the full suite; this run is a quarter of it).
MIN_FAULTS = 10


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    """Six hard stories, every drifting simulator under both conditions, judged by the
    literal reader of what was drawn."""
    root = tmp_path_factory.mktemp("family")
    write_suite([s for s in default_suite if s.difficulty == "hard"][:6], root / "suite")
    run = root / "run"
    argv = ["run", "--suite", str(root / "suite"), "--model", ",".join(DRIFTING),
            "--condition", ",".join(CONDITIONS), "--out", str(run),
            "--cache", str(root / "cache")]  # fmt: skip
    assert main(argv) == 0
    shutil.rmtree(run / "evaluations", ignore_errors=True)
    judge_folder(run, "literal-drawn", REFERENCE_JUDGES["literal-drawn"](run), served=False)
    return run


def _cell(run: Path, model: str, condition: str) -> dict[str, TaxonomyMetrics]:
    rows = load_requirements(run)
    rows = rows.view([e == "vlm" for e in rows.evaluator])
    frames = {fr for fr in frames_of(rows) if fr[:2] == (model, condition)}
    units = [u for u in detections(rows) if u.frame in frames]
    faults = [f for f in load_faults(run) if f.frame in frames]
    return {t.taxonomy: t for t in taxonomy_metrics(faults, units, frames)}


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("model", DRIFTING)
def test_a_literal_reader_of_what_was_drawn_reaches_the_bound(
    judged: Path, model: str, condition: str
) -> None:
    labels = _cell(judged, model, condition)
    held = {t: m for t, m in labels.items() if t != "all" and m.n_faults >= MIN_FAULTS}
    assert labels["all"].n_faults >= 20, labels["all"]  # every cell has faults to find
    low = {
        t: (m.n_faults, m.recall, m.n_detections, m.precision)
        for t, m in {**held, "all": labels["all"]}.items()
        if (m.recall or 0.0) < 0.95 or (m.precision or 0.0) < 0.95
    }
    assert not low, low


def test_the_drawn_state_is_what_the_image_shows(judged: Path) -> None:
    """literal-drawn sees what was drawn: each frame's drawn state (the oracle's rendered
    values over the story's state), rendered again, gives the image's bytes."""
    import json

    from vsb.adapters.simulators import jitter_seed
    from vsb.render import render_png
    from vsb.validation.drawn import DrawnFrames

    drawn = DrawnFrames(judged)
    records = [json.loads(x) for x in (judged / "records.jsonl").read_text().splitlines()]
    faulty = {f.frame for f in load_faults(judged)}
    checked = 0
    for rec in records[::7]:  # a sample of every model and condition
        frame = (rec["model"], rec["condition"], rec["story_id"], int(rec["scene"]))
        png = render_png(drawn.state(frame), seed=jitter_seed(frame[2], frame[3], 0))
        assert png == (judged / rec["path"]).read_bytes(), frame
        checked += frame in faulty
    assert checked > 20


def test_an_image_that_is_no_frame_of_the_run_gets_unsure(judged: Path) -> None:
    judge = REFERENCE_JUDGES["literal-drawn"](judged)
    assert judge.answers(b"not a frame", ["Is it raining?", "Is it night?"]) == ["UNSURE"] * 2
    assert judge.pair_answers(b"a", b"b", ["Do the two pictures show the same place?"]) == [
        "UNSURE"
    ]
