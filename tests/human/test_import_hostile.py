"""``vsb human import`` on hostile files: one clear line per problem, exit 1, no traceback,
and nothing written (an existing report stays byte for byte)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from human_synth import MODELS

from vsb.cli.main import main
from vsb.human.load import MAX_RATING_BYTES, MAX_RATING_DEPTH, load_rating_files
from vsb.human.models import RatingFile


def _doc(simulated: list[RatingFile]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(simulated[0].model_dump_json())
    return doc


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.fixture
def existing_report(tmp_path: Path, simulated_files: list[Path]) -> Path:
    out = tmp_path / "report"
    assert main(["human", "import", *map(str, simulated_files[:4]), "--out", str(out),
                 "--resamples", "20"]) == 0  # fmt: skip
    return out


def _hostile(tmp_path: Path, simulated: list[RatingFile]) -> dict[str, tuple[Path, str]]:
    """name -> (file, a phrase its error line must hold)."""
    files: dict[str, tuple[Path, str]] = {}
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    files["deep"] = (deep, f"nested deeper than {MAX_RATING_DEPTH} levels")
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_RATING_BYTES + 1)  # sparse: no need to write 8 MiB
    files["big"] = (big, "exceeds the")
    doc = _doc(simulated)
    text = json.dumps(doc)
    dup = tmp_path / "dup.json"
    dup.write_text(text.replace('"rater_id": ', '"rater_id": "again", "rater_id": ', 1))
    files["duplicate"] = (dup, "repeats the key 'rater_id'")
    wrong = tmp_path / "wrong.json"
    item = {**doc["items"][0], "ratings": {**doc["items"][0]["ratings"], "visual_quality": "5"}}
    wrong.write_text(json.dumps({**doc, "items": [item], "synthetic": "yes"}))
    files["wrong types"] = (
        wrong,
        "/items/0/ratings/visual_quality: Input should be a valid integer",
    )
    html = tmp_path / "html.json"
    html.write_text(json.dumps({**doc, "rater_id": "<img src=x onerror=alert(1)>"}))
    files["html rater"] = (html, "/rater_id: rater_id must be 1-64 characters")
    return files


def test_each_hostile_file_is_one_clear_error_and_changes_nothing(
    tmp_path: Path,
    simulated: list[RatingFile],
    existing_report: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _snapshot(existing_report)
    capsys.readouterr()
    for name, (path, phrase) in _hostile(tmp_path, simulated).items():
        rc = main(["human", "import", str(path), "--out", str(existing_report)])
        err = capsys.readouterr().err
        assert rc == 1, name
        assert "Traceback" not in err, name
        *lines, last = err.splitlines()
        assert lines and all(ln.startswith(f"error: {path}: ") for ln in lines), (name, err)
        assert any(phrase in ln for ln in lines), (name, err)
        assert last == f"error: nothing written: {len(lines)} problem(s)", name
        assert _snapshot(existing_report) == before, name


def test_every_problem_of_every_file_is_reported_and_a_good_file_does_not_slip_in(
    tmp_path: Path,
    simulated: list[RatingFile],
    simulated_files: list[Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    hostile = _hostile(tmp_path, simulated)
    out = tmp_path / "fresh"
    paths = [str(simulated_files[0]), *(str(p) for p, _ in hostile.values())]
    assert main(["human", "import", *paths, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    for path, phrase in hostile.values():
        assert any(str(path) in ln and phrase in ln for ln in err.splitlines()), phrase
    wrong = hostile["wrong types"][0]
    assert sum(str(wrong) in ln for ln in err.splitlines()) == 2  # '"5"' and '"yes"'
    assert not out.exists()


def test_the_same_session_twice_is_refused(tmp_path: Path, simulated_files: list[Path]) -> None:
    copy = tmp_path / "copy.json"
    copy.write_bytes(simulated_files[0].read_bytes())
    with pytest.raises(Exception, match="the same session as") as info:
        load_rating_files([simulated_files[0], copy])
    assert "copy.json" in str(info.value)


def test_inconsistent_letters_and_repeats_are_refused(
    tmp_path: Path, simulated: list[RatingFile], capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _doc(simulated)
    letters = dict(doc["letters"])
    a, b = sorted(letters)[:2]
    letters[a], letters[b] = letters[b], letters[a]
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps({**doc, "letters": letters}))
    items = [dict(it) for it in doc["items"]]
    repeat = next(it for it in items if it.get("repeat_of"))
    other = next(it for it in items if it["kind"] == "likert" and it["model"] != repeat["model"])
    repeat["repeat_of"] = other["item_id"]
    bad_repeat = tmp_path / "repeat.json"
    bad_repeat.write_text(json.dumps({**doc, "items": items}))
    assert (
        main(["human", "import", str(swapped), str(bad_repeat), "--out", str(tmp_path / "o")]) == 1
    )
    err = capsys.readouterr().err
    assert "is not" in err and "in 'letters'" in err
    assert "repeats a different story or model" in err
    assert not (tmp_path / "o").exists()


def test_a_fifo_or_a_directory_is_not_read(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(Exception, match="not a regular file"):
        load_rating_files([fifo])
    with pytest.raises(Exception, match="not a regular file"):
        load_rating_files([tmp_path])


def test_a_model_or_story_the_release_lacks_is_refused_with_release(
    tmp_path: Path,
    simulated: list[RatingFile],
    human_release: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _doc(simulated)
    old = MODELS[2]  # not a control model (controls must compare those two)
    text = json.dumps(doc).replace(json.dumps(old), json.dumps("ghost-model"))
    ghost = tmp_path / "ghost.json"
    ghost.write_text(text)
    out = tmp_path / "out"
    assert (
        main(["human", "import", str(ghost), "--out", str(out), "--release", str(human_release)])
        == 1
    )
    err = capsys.readouterr().err
    assert "model 'ghost-model' is not in the release" in err and str(ghost) in err
    assert not out.exists()
    assert main(["human", "import", str(ghost), "--out", str(out), "--resamples", "20"]) == 0
