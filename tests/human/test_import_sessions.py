"""``vsb human import`` at its edges: every rater excluded (a report, no traceback, exit 1),
a file from another release refused, and sessions judged apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vsb.cli.main import main
from vsb.human.models import RatingFile
from vsb.human.write import load_report


def _careless(simulated: list[RatingFile]) -> list[RatingFile]:
    return [f for f in simulated if f.truth is not None and f.truth.careless]


def _careful(simulated: list[RatingFile]) -> list[RatingFile]:
    return [f for f in simulated if f.truth is not None and not f.truth.careless]


def _write(path: Path, rating: RatingFile, **changes: Any) -> Path:
    doc = json.loads(rating.model_dump_json())
    path.write_text(json.dumps({**doc, **changes}))
    return path


def test_every_rater_excluded_writes_the_report_and_exits_1_without_a_traceback(
    tmp_path: Path, simulated: list[RatingFile], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _careless(simulated)
    assert len(bad) >= 2
    files = [_write(tmp_path / f"c{i}.json", f) for i, f in enumerate(bad)]
    out = tmp_path / "out"
    assert main(["human", "import", *map(str, files), "--out", str(out), "--resamples", "20"]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert "no rater remains" in captured.err and f"all {len(bad)} session(s)" in captured.err
    report = load_report(out)
    assert report.n_raters_kept == 0 and all(r.excluded and r.reasons for r in report.raters)
    assert (out / "raters.csv").is_file()
    assert report.model_means == [] and report.mixed_model is None
    # agreement statistics without two raters say so instead of showing blanks
    assert "not enough overlap" in captured.out
    assert main(["human", "report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("not enough overlap") == 14  # 7 alpha + 7 ICC rows
    assert "no rater remains: every session was excluded" in printed


def test_a_single_kept_rater_has_not_enough_overlap(
    tmp_path: Path, simulated: list[RatingFile], capsys: pytest.CaptureFixture[str]
) -> None:
    one = _write(tmp_path / "one.json", _careful(simulated)[0])
    out = tmp_path / "out"
    assert main(["human", "import", str(one), "--out", str(out), "--resamples", "20"]) == 0
    text = capsys.readouterr().out
    assert text.count("not enough overlap") == 14
    assert load_report(out).n_raters_kept == 1


def test_a_file_of_another_release_is_refused_naming_both_hashes(
    tmp_path: Path,
    simulated: list[RatingFile],
    human_release: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = json.loads((human_release / "MANIFEST.json").read_text())["root_hash"]
    assert simulated[0].root_hash == root
    other = _write(tmp_path / "other.json", simulated[0], root_hash="0" * 64)
    out = tmp_path / "out"
    args = ["human", "import", str(other), "--out", str(out), "--resamples", "20"]
    assert main([*args, "--release", str(human_release)]) == 1
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if str(other) in ln)
    assert "0" * 64 in line and root in line and "/root_hash" in line
    assert not out.exists()


def test_one_careless_session_does_not_exclude_the_same_raters_other_session(
    tmp_path: Path, simulated: list[RatingFile], capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = _careful(simulated)[0], _careless(simulated)[0]
    assert good.session_id != bad.session_id
    files = [
        _write(tmp_path / "good.json", good, rater_id="same-person"),
        _write(tmp_path / "bad.json", bad, rater_id="same-person"),
    ]
    out = tmp_path / "out"
    assert main(["human", "import", *map(str, files), "--out", str(out), "--resamples", "20"]) == 0
    report = load_report(out)
    by_file = {r.file: r for r in report.raters}
    assert set(by_file) == {"good.json", "bad.json"}
    assert by_file["bad.json"].excluded and not by_file["good.json"].excluded
    assert {r.session_id for r in report.raters} == {good.session_id, bad.session_id}
    assert report.n_raters_kept == 1
    n_good = sum(1 for it in good.items if it.kind == "likert" and it.repeat_of is None)
    assert sum(m.n_ratings for m in report.model_means if m.dimension == "overall") == n_good
    # the person counts once in the reliability statistics (never paired with themself)
    assert all(a.n_raters == 1 for a in report.alpha)
