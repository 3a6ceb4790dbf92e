"""Synthetic raters: labelled synthetic everywhere, deterministic, their known model effect
recovered by the mixed model, their careless raters excluded and named."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from human_synth import MODELS, N_RATERS, SEED

from vsb.cli.main import main
from vsb.errors import InputError
from vsb.human.load import load_rating_files
from vsb.human.models import RatingFile
from vsb.human.report import build_report
from vsb.human.results import SYNTHETIC_NOTICE, HumanReport
from vsb.human.simulate import simulate_raters, write_simulated
from vsb.human.write import load_report
from vsb.scores.stats.bootstrap import Resampling


@pytest.fixture(scope="module")
def report_dir(
    tmp_path_factory: pytest.TempPathFactory, simulated_files: list[Path], human_release: Path
) -> Path:
    out = tmp_path_factory.mktemp("report") / "human"
    args = ["human", "import", *map(str, simulated_files), "--out", str(out)]
    assert main([*args, "--release", str(human_release), "--resamples", "200"]) == 0
    return out


@pytest.fixture(scope="module")
def report(report_dir: Path) -> HumanReport:
    return load_report(report_dir)


def test_files_are_labelled_synthetic(simulated: list[RatingFile]) -> None:
    assert len(simulated) == N_RATERS
    for f in simulated:
        assert f.synthetic and f.note == SYNTHETIC_NOTICE and f.truth is not None
        assert f.rater_id.startswith("synthetic-")
        assert set(f.letters.values()) == set(MODELS)


def test_deterministic_in_the_seed(human_release: Path, simulated: list[RatingFile]) -> None:
    again = simulate_raters(human_release, N_RATERS, SEED)
    assert [f.model_dump() for f in again] == [f.model_dump() for f in simulated]
    other = simulate_raters(human_release, N_RATERS, SEED + 1)
    assert [f.model_dump() for f in other] != [f.model_dump() for f in simulated]


def test_known_model_effect_recovered_by_the_mixed_model(report: HumanReport) -> None:
    mm = report.mixed_model
    assert mm is not None and mm.converged
    assert len(mm.effects) == len(MODELS) - 1
    for e in mm.effects:
        assert e.true_effect is not None and e.ci_low is not None and e.ci_high is not None
        assert abs(e.true_effect) > 0.5  # a real effect, not a null one
        assert (e.estimate > 0) == (e.true_effect > 0), e
        assert e.ci_low <= e.true_effect <= e.ci_high, e
    assert mm.n_raters == report.n_raters_kept
    assert mm.var_residual is not None and mm.var_residual > 0


def test_careless_raters_are_excluded_and_named(
    report: HumanReport, simulated: list[RatingFile]
) -> None:
    careless = {f.rater_id for f in simulated if f.truth is not None and f.truth.careless}
    assert len(careless) == round(0.25 * N_RATERS)
    assert {r.rater_id for r in report.excluded} == careless
    for r in report.excluded:
        assert r.reasons and any("median item time" in x for x in r.reasons), r
    kept = [r for r in report.raters if not r.excluded]
    assert all(r.control_accuracy is not None and r.control_accuracy >= 0.75 for r in kept)
    assert report.n_raters_kept == N_RATERS - len(careless)


def test_report_statistics_are_filled(report: HumanReport) -> None:
    assert report.synthetic and report.notice == SYNTHETIC_NOTICE
    alpha = {a.dimension: a for a in report.alpha}
    assert alpha["all"].ordinal is not None and alpha["all"].ordinal > 0.2
    icc = {i.dimension: i for i in report.icc}
    assert icc["overall"].k == report.n_raters_kept and icc["overall"].icc2_k is not None
    overall = [m for m in report.model_means if m.dimension == "overall"]
    assert {m.model for m in overall} == set(MODELS)
    assert all(m.ci_low is not None and m.ci_low <= m.mean <= m.ci_high for m in overall)  # type: ignore[operator]
    assert report.bradley_terry and report.preferences
    assert report.test_retest_abs_diff is not None
    assert report.agreement is not None
    assert {g.evaluator for g in report.agreement.rankings} >= {"rules"}
    dims = {c.dimension for c in report.agreement.correlations}
    assert "overall" in dims and len(dims) == 7


def test_every_csv_and_the_printout_say_synthetic(
    report_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csvs = sorted(report_dir.glob("*.csv"))
    assert len(csvs) >= 10
    for path in csvs:
        rows = list(csv.reader(path.read_text().splitlines()))
        assert rows[0][0] == "synthetic", path.name
        assert rows[1:] and all(r[0] == "True" for r in rows[1:]), path.name
    capsys.readouterr()
    assert main(["human", "report", str(report_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SYNTHETIC:") and out.rstrip().endswith("human judgements.")


def test_import_without_release_has_no_agreement(simulated_files: list[Path]) -> None:
    rep = build_report(load_rating_files(simulated_files[:3]), settings=Resampling(n_resamples=20))
    assert rep.agreement is None and rep.synthetic


def test_simulate_cli_and_its_refusals(
    tmp_path: Path, human_release: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "syn"
    args = ["human", "simulate", "--release", str(human_release), "--raters", "4", "--seed", "1"]
    assert main([*args, "--out", str(out)]) == 0
    assert "SYNTHETIC" in capsys.readouterr().out
    assert len(list(out.glob("synthetic-*.json"))) == 4
    assert main([*args, "--out", str(human_release / "ratings")]) == 1
    assert "outside the release" in capsys.readouterr().err
    assert not (human_release / "ratings").exists()
    with pytest.raises(InputError):
        write_simulated(human_release / "x", [], human_release)
