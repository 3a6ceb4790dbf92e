"""Validation ranks judges vsb did not tune (issue 22): the literal judge and four useless
ones (always-YES, always-NO, always-UNSURE, garbage), each served over HTTP on 127.0.0.1 and
asked through ``vsb evaluate --evaluator vlm,vlm_xframe``, then ``validate_run``.

The run is kept small (drift-mid, one condition, the default suite); the full figures (drift
-mid, all six conditions, suite seeds 7001 and 7002) come from
``benchmarks/bench_reference_judges.py``.
"""

from __future__ import annotations

import io
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vsb.cli.main import main
from vsb.validation.judge import validate_run
from vsb.validation.matching import load_faults
from vsb.validation.models import EvaluatorValidation, JudgeReport
from vsb.validation.reference_judges import REFERENCE_JUDGES
from vsb.validation.sim_judge import JudgeServer

pytestmark = pytest.mark.slow
MODEL = "procedural-drift-mid"


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory, suite_dir: Path) -> Path:
    run = tmp_path_factory.mktemp("refjudges") / "run"
    argv = ["run", "--suite", str(suite_dir), "--model", MODEL, "--condition", "independent",
            "--out", str(run), "--cache", str(run.parent / "gen")]  # fmt: skip
    assert main(argv) == 0
    assert main(["evaluate", str(run)]) == 0
    return run


def _judge(run: Path, name: str) -> Path:
    """``run`` judged by reference judge ``name`` over HTTP (through the CLI)."""
    with JudgeServer(REFERENCE_JUDGES[name](run)) as server:
        argv = ["evaluate", str(run), "--evaluator", "vlm,vlm_xframe", "--judge",
                f"openai-compatible:{name}", "--base-url", server.url,
                "--cache", str(run.parent / f"cache-{run.name}-{name}")]  # fmt: skip
        main(argv)  # unsure / garbage answers are rows, not errors
        assert server.requests > 0
    return run


@pytest.fixture(scope="module")
def reports(base_run: Path) -> dict[str, JudgeReport]:
    out = {}
    for name in REFERENCE_JUDGES:
        run = base_run.parent / name
        shutil.copytree(base_run, run)
        out[name] = validate_run(_judge(run, name))
    return out


def _labels(s: EvaluatorValidation) -> dict[str, tuple[int, float | None, int, float | None]]:
    return {t.taxonomy: (t.n_faults, t.recall, t.n_detections, t.precision) for t in s.taxonomy}


def test_the_literal_judge_is_close_to_the_rule_checker(reports: dict[str, JudgeReport]) -> None:
    vlm = reports["literal"].section("vlm")
    labels = _labels(vlm)
    assert labels["all"][0] > 200
    for label, (faults, recall, detections, precision) in labels.items():
        if faults >= 10:
            assert recall is not None and recall >= 0.95, (label, labels[label])
        if detections >= 10:
            assert precision is not None and precision >= 0.95, (label, labels[label])
    assert labels["all"][1] >= 0.97 and labels["all"][3] >= 0.97
    assert vlm.agreement.error_rate is not None and vlm.agreement.error_rate <= 0.01
    assert vlm.verdicts.parse_failure_rate == 0.0
    assert vlm.pass_rate.auroc is not None and vlm.pass_rate.auroc > 0.97
    xframe = reports["literal"].section("vlm_xframe").agreement
    assert xframe.n_answers > 300 and xframe.error_rate is not None and xframe.error_rate <= 0.01


def test_always_yes_finds_nothing(reports: dict[str, JudgeReport]) -> None:
    vlm = reports["always-yes"].section("vlm")
    for label, (faults, recall, _, _) in _labels(vlm).items():
        if faults and label not in ("character_unexpected", "object_resurrected", "all"):
            assert recall == 0.0, label  # only a NO can flag a fault
    assert (vlm.taxonomy[-1].recall or 0.0) <= 0.05
    # only the few checks whose answer is NO fail: its pass rate barely ranks faulty frames
    assert vlm.pass_rate.auroc is not None and vlm.pass_rate.auroc < 0.6


def _base_rates(run: Path) -> dict[str, float]:
    """Per label: the share of the (image, subject) checks of that label the oracle faulted
    (what flagging every check scores as precision); a person drawn whose presence no
    question can see (``vsb.validation.hidden``: every presence cue drifted) counts with
    character_missing, as a knock-on of the faults that hid them."""
    from vsb.scores.inputs import load_requirements
    from vsb.validation.hidden import hidden_checks

    rows = load_requirements(run)
    slots: dict[str, set[tuple[object, ...]]] = defaultdict(set)
    for i in range(len(rows)):
        if rows.evaluator[i] == "rules":
            frame = (rows.model[i], rows.condition[i], rows.story_id[i], rows.scene[i])
            slots[rows.taxonomy[i]].add((frame, rows.subject[i]))
    true: dict[str, set[tuple[object, ...]]] = defaultdict(set)
    for f in load_faults(run):
        if f.visual:
            true[f.taxonomy].add((f.frame, f.subject))
    for frame, subject, attribute in hidden_checks(run):
        if attribute == "present":
            true["character_missing"].add((frame, subject))
    return {t: len(true[t] & s) / len(s) for t, s in slots.items()}


@pytest.mark.parametrize("name", ["always-no", "always-unsure"])
def test_flagging_everything_scores_the_base_rate(
    reports: dict[str, JudgeReport], base_run: Path, name: str
) -> None:
    vlm = reports[name].section("vlm")
    base = _base_rates(base_run)
    labels = _labels(vlm)
    # every person and object is "not there", so their checks collapse onto these labels
    for label in ("character_missing", "wrong_location", "wrong_weather", "time_regression"):
        faults, recall, _, precision = labels[label]
        assert faults > 0 and recall == 1.0
        assert precision == pytest.approx(base[label], abs=0.005), label
    assert (labels["all"][3] or 0.0) < 0.1
    if name == "always-unsure":
        assert vlm.verdicts.unsure_rate == 1.0 and vlm.agreement.n_answers == 0


def test_garbage_is_all_parse_failures(reports: dict[str, JudgeReport]) -> None:
    vlm = reports["garbage"].section("vlm")
    assert vlm.verdicts.parse_failure_rate == 1.0 and vlm.agreement.n_answers == 0
    # every check flagged under its own label: precision is the base rate of faults
    assert (vlm.taxonomy[-1].precision or 0.0) < 0.2


def test_validation_ranks_the_judges(reports: dict[str, JudgeReport]) -> None:
    def f1(name: str) -> float:
        t = reports[name].section("vlm").taxonomy[-1]
        r, p = t.recall or 0.0, t.precision or 0.0
        return 2 * r * p / (r + p) if r + p else 0.0

    useless = [n for n in REFERENCE_JUDGES if not n.startswith("literal")]
    assert f1("literal") > 0.95 and f1("literal-drawn") > 0.95, [f1("literal-drawn")]
    assert all(f1(n) < 0.3 for n in useless), [(n, f1(n)) for n in REFERENCE_JUDGES]


def _photo(rng: np.random.Generator, size: int = 256) -> bytes:
    """A people-free photo-like image (smooth gradients and noise)."""
    y, x = np.mgrid[0:size, 0:size] / size
    img = 127 + 90 * np.stack([np.sin(3 * x), np.cos(2 * y), np.sin(5 * x * y)], axis=-1)
    img = img + rng.normal(0, 12, img.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def test_frames_without_an_oracle_are_left_out(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22, item 2: stored images beside a simulator have no oracle; an always-YES
    judge on them must not count as right (they were taken as fault-free)."""
    stories = ["counting-easy", "wardrobe-easy"]
    rng = np.random.default_rng(5)
    samples = tmp_path / "samples"
    n_photos = 0
    for story in stories:
        for k in range(1, 9):
            path = samples / "photos" / "independent" / story / f"scene_{k:02d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_photo(rng))
            n_photos += 1
    run = tmp_path / "run"
    argv = ["run", "--suite", str(suite_dir), "--model", f"{MODEL},stored:photos",
            "--condition", "independent", "--out", str(run), "--cache", str(tmp_path / "g"),
            "--samples", str(samples)]  # fmt: skip
    main(argv)  # stored:photos misses the other stories' scenes (exit 3); ours are there
    _judge(run, "always-yes")
    report = validate_run(run)
    vlm = report.section("vlm")
    photos = report.n_frames_without_oracle
    assert report.models_without_oracle == ["stored:photos"]
    assert photos >= n_photos  # every photo frame (and the scenes it could not serve)
    assert list(vlm.taxonomy_by_model) == [MODEL]
    n_sim = sum(1 for _ in (run / "images" / MODEL).rglob("*.png"))
    assert vlm.n_frames == report.n_frames == n_sim
    capsys.readouterr()
    assert main(["validate-judge", str(run)]) == 0
    assert "stored:photos" in capsys.readouterr().out
