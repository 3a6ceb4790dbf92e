"""``vsb human import --release R`` checks every field of a rating file against R (issue 35,
item 6): story, condition and model of each item (a strip R scored), the letters' models, the
release name, and the session's times (ISO 8601 with a UTC offset, finished after started,
not in the future). Each refusal is one line naming the file and the item, exit 1, no
traceback, nothing written. Times are checked in both formats (1.0 and the page's 2.0)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from human_synth import MODELS
from hypothesis import given, settings
from hypothesis import strategies as st
from test_import_blind import _blind

from vsb.cli.main import main
from vsb.human.blinding import release_blinding
from vsb.human.load import LoadedFile, ReleaseContents, release_problems
from vsb.human.models import CONTROL_BAD, LikertItem, RatingFile, parse_time


def _doc(rating: RatingFile) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(rating.model_dump_json())
    return doc


def _pair_index(doc: dict[str, Any]) -> int:
    """An item no other item repeats (changing it breaks no repeat_of link)."""
    return next(i for i, it in enumerate(doc["items"]) if it["kind"] != "likert")


def _with_item(doc: dict[str, Any], **changes: Any) -> tuple[dict[str, Any], str]:
    i = _pair_index(doc)
    items = list(doc["items"])
    items[i] = {**items[i], **changes}
    return {**doc, "items": items}, f"/items/{i}/"


# name -> (change to the document, location, phrase of the error line)
def _cases(doc: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str, str]]:
    cases: dict[str, tuple[dict[str, Any], str, str]] = {}
    for name, cond in [("model as condition", CONTROL_BAD), ("typo", "structured_memoryx"),
                       ("formula", "=1+1")]:  # fmt: skip
        bad, loc = _with_item(doc, condition=cond)
        cases[f"condition: {name}"] = (bad, loc + "condition", f"condition {cond!r} is not in")
    bad, loc = _with_item(doc, story_id="no-such-story")
    cases["story"] = (bad, loc + "story_id", "story 'no-such-story' is not in")
    bad, loc = _with_item(doc, model_a="ghost", letter_a="ZZ")
    bad["letters"] = {**doc["letters"], "ZZ": "ghost"}
    cases["model"] = (bad, loc + "model_a", "model 'ghost' is not in")
    cases["letter"] = (bad, "/letters/ZZ", "model 'ghost' is not in")
    cases["release name"] = ({**doc, "release": "v9"}, "/release", "release 'v9' is not the name")
    future = "2999-01-01T00:00:00Z"
    cases["future"] = ({**doc, "started_at": future, "finished_at": future}, "/finished_at",
                       "is in the future")  # fmt: skip
    return cases


def test_each_field_the_release_contradicts_is_refused_naming_file_and_item(
    tmp_path: Path,
    simulated: list[RatingFile],
    human_release: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _doc(simulated[0])
    capsys.readouterr()
    for name, (bad, location, phrase) in _cases(doc).items():
        path = tmp_path / f"{name.replace(' ', '_').replace(':', '')}.json"
        path.write_text(json.dumps(bad))
        out = tmp_path / f"out-{path.stem}"
        rc = main(["human", "import", str(path), "--out", str(out), "--release",
                   str(human_release), "--resamples", "20"])  # fmt: skip
        err = capsys.readouterr().err
        assert rc == 1, (name, err)
        assert "Traceback" not in err, name
        assert any(
            ln.startswith(f"error: {path}: {location}") and phrase in ln for ln in err.splitlines()
        ), (name, err)
        assert not out.exists() or not any(out.iterdir()), name  # nothing written


def test_a_strip_the_release_did_not_score_is_named(simulated: list[RatingFile]) -> None:
    rating = simulated[0]
    it = next(x for x in rating.items if isinstance(x, LikertItem))
    strips = {(x.story_id, x.condition, m) for x in rating.items for m in MODELS}
    strips.add((it.story_id, "independent", it.model))
    strips.discard((it.story_id, it.condition, it.model))
    rel = ReleaseContents(Path("R"), rating.release, frozenset(strips))
    problems = release_problems([LoadedFile(Path("f.json"), "0" * 64, rating)], rel)
    assert problems, "a likert item of a strip the release lacks passed"
    assert f"has no images of model {it.model!r} for story {it.story_id!r}" in problems[0]
    assert problems[0].startswith("f.json: /items/")
    assert release_problems([LoadedFile(Path("f.json"), "0" * 64, rating)],
                            ReleaseContents(Path("R"), rating.release,
                                            frozenset(strips | {(it.story_id, it.condition,
                                                                 it.model)}))) == []  # fmt: skip


BAD_TIMES = {
    "NUL": ("\x00", None),
    "not a time": ("yesterday", None),
    "date only": ("2025-01-01", None),
    "no UTC offset": ("2025-01-01T10:00:00", None),
    "finished before started": ("2025-01-02T00:00:00Z", "2025-01-01T00:00:00+00:00"),
}


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("case", sorted(BAD_TIMES))
def test_bad_times_are_refused_in_both_formats(
    tmp_path: Path,
    simulated: list[RatingFile],
    human_release: Path,
    capsys: pytest.CaptureFixture[str],
    version: str,
    case: str,
) -> None:
    started, finished = BAD_TIMES[case]
    rating = simulated[0]
    doc = _doc(rating) if version == "1.0" else _blind(rating, release_blinding(human_release))
    doc = {**doc, "started_at": started, "finished_at": finished or started}
    path = tmp_path / "times.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    for release in ([], ["--release", str(human_release)]):
        if version == "2.0" and not release:
            continue
        rc = main(["human", "import", str(path), "--out", str(tmp_path / "o"), *release])
        err = capsys.readouterr().err
        assert rc == 1, err
        assert "Traceback" not in err
        field = "started_at" if finished is None else ""
        assert f"error: {path}: /{field}" in err, err
        assert "ISO 8601" in err or "is before started_at" in err, err
        assert not (tmp_path / "o").exists()


def test_good_times_in_any_offset_are_accepted(
    tmp_path: Path, simulated: list[RatingFile], human_release: Path
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    doc = {**_doc(simulated[0]), "started_at": "2025-01-01T01:00:00+02:00",
           "finished_at": now.isoformat().replace("+00:00", "Z")}  # fmt: skip
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(doc))
    assert main(["human", "import", str(path), "--out", str(tmp_path / "o"), "--release",
                 str(human_release), "--resamples", "20"]) in (0, 1)  # fmt: skip
    assert (tmp_path / "o" / "report.json").exists()


@settings(max_examples=200, deadline=None)
@given(cond=st.text(min_size=1, max_size=300))
def test_any_condition_the_release_lacks_is_named(simulated: list[RatingFile], cond: str) -> None:
    rating = simulated[0]
    strips = frozenset((it.story_id, it.condition, m) for it in rating.items for m in MODELS)
    rel = ReleaseContents(Path("R"), rating.release, strips)
    i = next(n for n, it in enumerate(rating.items) if not isinstance(it, LikertItem))
    items = list(rating.items)
    items[i] = items[i].model_copy(update={"condition": cond})
    bad = rating.model_copy(update={"items": items})
    problems = release_problems([LoadedFile(Path("f.json"), "0" * 64, bad)], rel)
    if cond in rel.conditions:
        assert problems == []
    else:
        assert len(problems) == 1
        assert problems[0].startswith(f"f.json: /items/{i}/condition: item ")
        assert "\n" not in problems[0]


@settings(max_examples=300, deadline=None)
@given(
    value=st.text(max_size=40)
    | st.datetimes().map(lambda d: d.isoformat())
    | st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat())
)
def test_a_time_is_an_aware_iso_time_or_one_clear_error(value: str) -> None:
    try:
        t = parse_time(value)
    except ValueError as err:
        assert "ISO 8601" in str(err)
    else:
        assert t.utcoffset() is not None
