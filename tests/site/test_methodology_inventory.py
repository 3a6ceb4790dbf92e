"""The methodology page covers every registered evaluator and every statistic vsb computes,
with parameters read from the code, and says for each whether the release holds it (and if
not, the command that adds it); it states the release's coverage sentence and both globals."""

from __future__ import annotations

import html as htmlmod
import re
from pathlib import Path

import pytest

from vsb.evaluators import registry
from vsb.human.report import MIN_CONTROL_ACCURACY, MIN_MEDIAN_TIME_S
from vsb.release.manifest import COVERAGE
from vsb.site.data import load_site_data
from vsb.site.inventory import SIGNAL_DEFINITIONS, STATISTICS
from vsb.site.methodology import methodology_text, release_facts, render_methodology


def _rows(text: str) -> dict[str, list[str]]:
    """First cell -> cells, of every table row of the rendered page."""
    _, body, _ = render_methodology(text)
    out: dict[str, list[str]] = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", str(body)):
        cells = [htmlmod.unescape(c) for c in re.findall(r"<td>(.*?)</td>", tr)]
        if cells:
            out[cells[0]] = cells
    return out


@pytest.fixture(scope="module")
def page(synth_release: Path) -> str:
    return methodology_text(release_facts(load_site_data(synth_release)))


def test_every_registered_evaluator_and_statistic_has_a_row(page: str) -> None:
    rows = _rows(page)
    for name in registry.evaluator_names():
        assert name in rows, f"evaluator {name} missing from the methodology page"
        state = rows[name][-1]
        assert state == "yes" or (state.startswith("no — ") and "vsb" in state), (name, state)
    for stat in STATISTICS:
        assert stat.name in rows, f"statistic {stat.name} missing from the methodology page"
    for signal in SIGNAL_DEFINITIONS:
        assert f"• {signal}: " in page or f"{signal}: " in page


def test_parameters_come_from_the_code(page: str) -> None:
    rows = _rows(page)
    assert f"{MIN_CONTROL_ACCURACY:.0%}" in rows["rater exclusion"][2]
    assert f"{MIN_MEDIAN_TIME_S:g} s" in rows["rater exclusion"][2]
    assert "6 dimensions" in rows["Likert ratings"][2]
    assert "openai/clip-vit-base-patch32" in rows["clip"][2]
    assert "facebook/dinov2-small" in rows["dino"][2]
    assert "rating ~ model + (1|story) + (1|rater)" in rows["mixed model"][2]
    # what the synthetic release lacks is said, with the command that adds it
    assert rows["Likert ratings"][-1].startswith("no — vsb human import")
    assert rows["clip_image_rr"][-1].startswith("no — python3 scripts/embed_release.py")
    assert (
        rows["vlm"][-1] == "no — vsb evaluate RUN --evaluator vlm --judge openai-compatible:MODEL"
    )
    assert rows["rules"][-1] == "yes"


def test_a_plug_in_evaluator_appears_on_the_page(synth_release: Path) -> None:
    info = registry.EvaluatorInfo("probe_eval", "signals", "any", False, "x:Y", description="p")
    registry.add(info)
    try:
        text = methodology_text(release_facts(load_site_data(synth_release)))
        assert _rows(text)["probe_eval"][-1] == "no — vsb evaluate RUN --evaluator probe_eval"
    finally:
        registry._INFO.pop("probe_eval")


def test_coverage_sentence_and_both_globals(page: str) -> None:
    assert COVERAGE in page
    assert "per-story global" in page and "mean of a model's per-story globals is not" in page


def test_every_page_showing_a_global_says_which(synth_site: Path) -> None:
    """The per-story global (story pages, story list, model card) and the published global
    (leaderboard) are different figures; each page that shows one says which it is."""
    per_story = "the mean of its pass rates over the dimensions it tests"
    pages = [
        "stories/index.html", "models/alpha.html",
        "stories/cause_effect-hard/structured_memory.html",
    ]  # fmt: skip
    for rel in pages:
        text = " ".join((synth_site / rel).read_text().split())
        assert per_story in text, rel
        assert "is not the model's global score" in text, rel
    index = " ".join((synth_site / "index.html").read_text().split())
    assert "each a mean over the stories that test that dimension" in index


#: Report fields that describe a report rather than hold a statistic.
METADATA = {
    "ScoresReport": {"version", "run", "seed", "n_resamples", "confidence", "primary_condition",
                     "evaluators", "primary_evaluator", "judge_models", "dimensions", "models",
                     "conditions"},
    "JudgeReport": {"version", "run", "n_frames", "n_faulty_frames", "n_faults",
                    "n_visual_faults", "n_frames_without_oracle", "models_without_oracle",
                    "evaluators"},
    "EvaluatorValidation": {"evaluator", "judge_model", "n_frames", "n_faulty_frames"},
    "HumanReport": {"version", "synthetic", "notice", "releases", "seed", "n_resamples",
                    "confidence", "min_control_accuracy", "min_median_time_s", "sources"},
}  # fmt: skip


def test_every_statistic_a_report_holds_is_on_the_page(page: str) -> None:
    """A result field added to a report (scores, judge validation, human) fails this test
    until a statistic of the inventory names it, and so appears on the methodology page."""
    from vsb.human.results import HumanReport
    from vsb.scores.models import ScoresReport
    from vsb.validation.models import EvaluatorValidation, JudgeReport

    covered = {f for s in STATISTICS for f in s.fields}
    rows = _rows(page)
    for model in (ScoresReport, JudgeReport, EvaluatorValidation, HumanReport):
        for field in model.model_fields:
            name = f"{model.__name__}.{field}"
            if field in METADATA[model.__name__]:
                continue
            assert name in covered, f"{name} is a statistic the methodology page omits"
    for stat in STATISTICS:
        assert stat.name in rows
        for f in stat.fields:
            model, field = f.split(".")
            assert field in {
                "ScoresReport": ScoresReport, "JudgeReport": JudgeReport,
                "EvaluatorValidation": EvaluatorValidation, "HumanReport": HumanReport,
            }[model].model_fields, f  # fmt: skip


def test_clip_rankings_are_defined_as_the_code_computes_them() -> None:
    """clip_rr is vsb's text-side measure; clip_image_rr ranks the frame among the reference
    pool of oracle renders nearest the text (any story's), as vsb/evaluators/embed/signals.py
    does."""
    from vsb.evaluators.embed.signals import EmbedOptions

    opts = EmbedOptions()
    text_side, image_side = SIGNAL_DEFINITIONS["clip_rr"], SIGNAL_DEFINITIONS["clip_image_rr"]
    assert "not VinaBench's" in text_side and f"up to {opts.pool_size} texts" in text_side
    assert f"{opts.reference_pool} {opts.reference_model} renders nearest" in image_side
    assert "other scenes of the story" not in image_side
    assert "openai/clip-vit-large-patch14" in image_side
