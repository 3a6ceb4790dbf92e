"""A literal reader reaches the bound at any suite seed, on every drifting simulator (issue 45).

At suite seed 31337 the literal reader of what was drawn (``literal-drawn``: each question
as worded, the picture as the simulator drew it, never a fault's label) fell to order_swap
recall 0.91, pose_mismatch 0.92 and wrong_holder 0.95 on procedural-amnesiac under
independent; at seed 2 character_missing precision 0.91 and order_swap 0.92. Three causes: a
person whose every locating cue drifted is seen by no question (their clothing and pose
faults were counted missed); a fallback cue lands on another person drifted into it; an
order or holder locator fits two people (UNSURE was scored as ``order_swap``). The credit
rules now file an UNSURE order or holder check as the drift of its locators
(``questions.unsure_label``), and strict matching credits what no question can see as a
knock-on of the faults that hid it (``vsb.validation.hidden``).

The whole default suite at five suite seeds, the four drifting simulators under independent
(where drift shows; ``scripts/literal_judge_family.py`` adds structured memory and more
seeds), asked through the real pipeline: strict recall and precision >= 0.95 on every label
with at least 20 faults.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vsb.cli.main import main
from vsb.scores.inputs import load_requirements
from vsb.validation.hidden import hidden_checks
from vsb.validation.matching import detections, frames_of, load_faults, taxonomy_metrics
from vsb.validation.models import TaxonomyMetrics
from vsb.validation.reference import judge_folder
from vsb.validation.reference_judges import REFERENCE_JUDGES

pytestmark = pytest.mark.slow

DRIFTING = ["procedural-drift-low", "procedural-drift-mid", "procedural-amnesiac",
            "procedural-sloppy"]  # fmt: skip
#: 31337 and 2 are the seeds the issue names (amnesiac fell short there), 0 the default.
SEEDS = [0, 1, 2, 9011, 31337]
MIN_FAULTS = 20


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def judged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default suite at one suite seed, every drifting simulator under independent,
    judged by the literal reader of what was drawn."""
    seed = int(request.param)
    root = tmp_path_factory.mktemp(f"seed-{seed}")
    suite, run = root / "suite", root / "run"
    assert main(["suite", "generate", "--out", str(suite), "--seed", str(seed)]) == 0
    argv = ["run", "--suite", str(suite), "--model", ",".join(DRIFTING),
            "--condition", "independent", "--seed", str(seed), "--out", str(run),
            "--cache", str(root / "cache")]  # fmt: skip
    assert main(argv) == 0
    judge_folder(run, "literal-drawn", REFERENCE_JUDGES["literal-drawn"](run), served=False)
    return run


def _labels(run: Path, model: str) -> dict[str, TaxonomyMetrics]:
    rows = load_requirements(run)
    rows = rows.view([e == "vlm" and v != "not_applicable"
                      for e, v in zip(rows.evaluator, rows.verdict, strict=True)])  # fmt: skip
    frames = {fr for fr in frames_of(rows) if fr[0] == model}
    units = [u for u in detections(rows) if u.frame in frames]
    faults = [f for f in load_faults(run) if f.frame in frames]
    metrics = taxonomy_metrics(faults, units, frames, hidden_checks(run))
    return {t.taxonomy: t for t in metrics}


@pytest.mark.parametrize("model", DRIFTING)
def test_a_literal_reader_reaches_the_bound_at_any_seed(judged: Path, model: str) -> None:
    labels = _labels(judged, model)
    held = {t: m for t, m in labels.items() if t != "all" and m.n_faults >= MIN_FAULTS}
    assert held, labels["all"]  # every simulator has labels to hold
    low = {
        t: (m.n_faults, m.recall, m.n_detections, m.precision)
        for t, m in held.items()
        if (m.recall or 0.0) < 0.95 or (m.precision or 0.0) < 0.95
    }
    assert not low, low
