"""Blinded (2.0) rating files, what the evaluate page exports: resolved against the release by
``vsb human import --release``, refused without it, with another release's root hash, an
unknown target or a letter standing for two models. Their schema is generated from the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from vsb.cli.main import main
from vsb.human.blinding import Blinding, release_blinding
from vsb.human.load import load_rating_files
from vsb.human.models import BlindRatingFile, LikertItem, RatingFile
from vsb.human.schema import (
    committed_blind_rating_schema,
    generate_blind_rating_schema,
    schema_text,
)
from vsb.human.write import load_report

SCHEMA_FILE = Path(__file__).parents[2] / "vsb" / "schema" / "blind_rating.schema.json"


def _blind(rating: RatingFile, b: Blinding) -> dict[str, Any]:
    """A 1.0 file as the page would have exported it (targets in place of models)."""
    items = []
    for it in rating.items:
        base = {"item_id": it.item_id, "time_s": it.time_s, "order": it.order}
        if isinstance(it, LikertItem):
            items.append({**base, "kind": "likert", "target": b.target(it.story_id, it.model),
                          "letter": it.letter, "ratings": it.ratings.model_dump(),
                          "repeat_of": it.repeat_of})  # fmt: skip
        else:
            items.append({**base, "kind": "pair", "target_a": b.target(it.story_id, it.model_a),
                          "target_b": b.target(it.story_id, it.model_b),
                          "letter_a": it.letter_a, "letter_b": it.letter_b,
                          "choice": it.choice})  # fmt: skip
    doc = json.loads(rating.model_dump_json(exclude={"items", "letters", "truth", "version"}))
    return {**doc, "version": "2.0", "synthetic": False, "items": items}


@pytest.fixture(scope="module")
def blinding(human_release: Path) -> Blinding:
    return release_blinding(human_release)


def test_a_blinded_file_resolves_to_the_same_ratings(
    tmp_path: Path, simulated: list[RatingFile], human_release: Path, blinding: Blinding
) -> None:
    rating = simulated[0]
    path = tmp_path / "blind.json"
    path.write_text(json.dumps(_blind(rating, blinding)))
    assert "procedural" not in path.read_text()
    (loaded,) = load_rating_files([path], human_release)
    assert loaded.rating.items == rating.items
    assert loaded.rating.letters == {
        k: v for k, v in rating.letters.items() if k in {*_used_letters(rating)}
    }
    out = tmp_path / "out"
    assert main(["human", "import", str(path), "--out", str(out), "--release",
                 str(human_release), "--resamples", "20"]) == 0  # fmt: skip
    (r,) = load_report(out).raters
    assert r.n_control == sum(it.kind == "control" for it in rating.items) > 0


def _used_letters(rating: RatingFile) -> set[str]:
    out: set[str] = set()
    for it in rating.items:
        out |= {it.letter} if isinstance(it, LikertItem) else {it.letter_a, it.letter_b}
    return out


def test_blinded_files_that_do_not_resolve_are_refused_one_line_each(
    tmp_path: Path,
    simulated: list[RatingFile],
    human_release: Path,
    blinding: Blinding,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _blind(simulated[0], blinding)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**doc, "root_hash": "0" * 64}))
    ghost = tmp_path / "ghost.json"
    items = [dict(it) for it in doc["items"]]
    likert = next(i for i, it in enumerate(items) if it["kind"] == "likert")
    items[likert]["target"] = "t" + "0" * 20
    ghost.write_text(json.dumps({**doc, "items": items}))
    twice = tmp_path / "twice.json"
    items = [dict(it) for it in doc["items"]]
    pair = next(i for i, it in enumerate(items) if it["kind"] == "pair")
    items[pair]["letter_b"] = items[pair]["letter_a"]
    twice.write_text(json.dumps({**doc, "items": items, "session_id": "ab" * 8}))
    out = tmp_path / "out"
    files = [str(other), str(ghost), str(twice)]
    assert main(["human", "import", *files, "--out", str(out), "--release",
                 str(human_release)]) == 1  # fmt: skip
    err = capsys.readouterr().err
    root = json.loads((human_release / "MANIFEST.json").read_text())["root_hash"]
    assert "Traceback" not in err
    lines = err.splitlines()
    assert any(str(other) in ln and "0" * 64 in ln and root in ln for ln in lines)
    assert any(f"{ghost}: /items/{likert}/target" in ln and "not a rated strip" in ln
               for ln in lines)  # fmt: skip
    assert any(f"{twice}: /items/{pair}" in ln and "stands for two models" in ln for ln in lines)
    assert not out.exists()
    # without the release that resolves it, a blinded file is refused, naming the option
    assert main(["human", "import", str(other), "--out", str(out)]) == 1
    assert "--release" in capsys.readouterr().err and not out.exists()


def test_committed_blind_schema_equals_generated_and_agrees(
    simulated: list[RatingFile], blinding: Blinding
) -> None:
    assert SCHEMA_FILE.read_text() == schema_text(generate_blind_rating_schema()), (
        "regenerate with: python -c 'from vsb.human.schema import *; open(\"vsb/schema/"
        'blind_rating.schema.json","w").write(schema_text(generate_blind_rating_schema()))\''
    )
    validator = jsonschema.Draft202012Validator(committed_blind_rating_schema())
    doc = _blind(simulated[0], blinding)
    assert not list(validator.iter_errors(doc))
    BlindRatingFile.model_validate(doc)
    for bad in ({**doc, "letters": {}}, {**doc, "items": [{**doc["items"][0], "model": "x"}]}):
        assert list(validator.iter_errors(bad))
        with pytest.raises(ValueError):
            BlindRatingFile.model_validate(bad)
