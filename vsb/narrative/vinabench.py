"""VinaBench's annotation files as released (``annotations/{vwp,sb20k,salon}_{train,test}.json``).

Each file is one JSON list of samples. A sample holds its scene texts (``narrative``) and
VinaBench's annotations: ``global_profile`` ({character name: description}),
``scene_characters`` (per scene, ``{"present": [names], …}``), ``time`` and ``location``
(one per scene); ``captions``, ``image_paths``, ``image_links``, ``key`` and the rest are
not read. The portion is recognised from the sample's id keys, and the id is VinaBench's
own (``vsb.narrative.sources.story_id`` sanitises it):

- VWP: ``scene_full_id + "_" + story_id`` (``story_id`` an integer);
- Storyboard20K: ``movie_id + "_" + global_id``;
- StorySalon: ``portion + "_" + sid``.

A sample of more than ``MAX_SCENES`` scenes is split as VinaBench's own ``salon_short``
files split StorySalon (``data/scripts/salon_scene_split.py``): into ⌈n/10⌉ consecutive
parts, the first ones one scene longer where n does not divide, each part's id the
sample's with ``_0``, ``_1``, … appended (the ids of ``salon_short``), its annotations cut
with its scenes. A sample of one scene is refused.

The annotations are read as they are (``Gold``): whether they hold together is for
``vsb.narrative.gold`` to say, story by story.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsb.errors import InputError

#: Most scenes of an imported story (``vsb.story.io.IMPORTED_SCENES``); longer samples split.
MAX_SCENES = 16
#: Scenes per part when a long sample is split (VinaBench's salon_short cut).
SPLIT_SCENES = 10
#: The portions, by the id keys that name a sample: (name, first key, second key).
PORTIONS: tuple[tuple[str, str, str], ...] = (
    ("vwp", "scene_full_id", "story_id"),
    ("sb20k", "movie_id", "global_id"),
    ("salon", "portion", "sid"),
)
PORTION_NAMES = {"vwp": "VWP", "sb20k": "Storyboard20K", "salon": "StorySalon"}
_PER_SCENE = ("scene_characters", "time", "location")


@dataclass(frozen=True)
class Gold:
    """A sample's annotations as read (``None``: the key is absent); per-scene lists are cut
    with their scenes when a sample is split, and kept whole when they do not have one entry
    per scene of the sample (``sample_scenes``), for ``vsb.narrative.gold`` to refuse."""

    portion: str
    profile: Any
    scene_characters: Any
    time: Any
    location: Any
    sample_scenes: int = 0


@dataclass(frozen=True)
class Sample:
    """One story of a VinaBench file: its raw id, its scene texts, where it is in the file
    (a JSON pointer), which of its scenes (``part``, empty unless split) and its
    annotations."""

    raw_id: str
    scenes: list[Any]
    where: str
    part: str
    gold: Gold


def is_vinabench(doc: Any) -> bool:
    """Whether a JSON document is in VinaBench's layout: a list of objects with a
    ``narrative``."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(x, dict) for x in doc)
        and "narrative" in doc[0]
    )


def _id_part(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def portion_of(item: dict[str, Any]) -> tuple[str, str] | None:
    """The portion and the raw id of a sample, from its id keys (None: none matches)."""
    for name, a, b in PORTIONS:
        if a in item and b in item:
            first, second = _id_part(item[a]), _id_part(item[b])
            if first is not None and second is not None:
                return name, f"{first}_{second}"
    return None


def split_sizes(n: int) -> list[int]:
    """Part sizes of a sample of ``n`` scenes: one part up to ``MAX_SCENES``, else ⌈n/10⌉
    parts, the first ones a scene longer (VinaBench's salon_short cut: 11 -> 6+5,
    23 -> 8+8+7)."""
    if n <= MAX_SCENES:
        return [n]
    parts = math.ceil(n / SPLIT_SCENES)
    base, extra = divmod(n, parts)
    return [base + (i < extra) for i in range(parts)]


def _cut(value: Any, lo: int, hi: int, n: int) -> Any:
    """A per-scene list's entries for scenes ``lo+1..hi`` of ``n``; a list of another
    length is kept whole (never shifted or truncated into place)."""
    return value[lo:hi] if isinstance(value, list) and len(value) == n else value


#: Control characters (C0, DEL, C1) and the bidirectional controls (U+202E and its kin).
_CONTROL = "\x00-\x1f\x7f-\x9f"
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BAD_IN_NAME = re.compile(f"[{_CONTROL}{_BIDI}]")
_BAD_IN_TEXT = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}]")


def _clean(text: str, what: str, pattern: re.Pattern[str], path: Path, where: str) -> None:
    bad = pattern.search(text)
    if bad is not None:
        raise InputError(
            f"{what} {text!r} holds the control character U+{ord(bad.group()):04X} (names "
            "hold no control or bidirectional character; texts only tab and newline)",
            file=path,
            location=where,
        )


def check_sample(item: dict[str, Any], portion: str, path: Path, where: str) -> None:
    """What must hold of a sample's fields before anything is read from them, or
    ``InputError`` naming the file, the sample and the field: VWP's ``story_id`` an integer;
    each scene's ``time`` and ``location`` a string (or null: not given); no control or
    bidirectional character in a character's name, and none but tab and newline in a
    profile, a time or a place."""
    if portion == "vwp" and (
        not isinstance(item.get("story_id"), int) or isinstance(item.get("story_id"), bool)
    ):
        raise InputError(
            f"expected story_id an integer (VWP's ids are numbers), not {item.get('story_id')!r}",
            file=path,
            location=f"{where}/story_id",
        )
    for key in ("time", "location"):
        values = item.get(key)
        for i, value in enumerate(values if isinstance(values, list) else []):
            if value is not None and not isinstance(value, str):
                raise InputError(
                    f"expected each scene's {key} a string (or null: not given), not {value!r}",
                    file=path,
                    location=f"{where}/{key}/{i}",
                )
            if isinstance(value, str):
                _clean(value, key, _BAD_IN_TEXT, path, f"{where}/{key}/{i}")
    profile = item.get("global_profile")
    for name, text in profile.items() if isinstance(profile, dict) else []:
        _clean(name, "character name", _BAD_IN_NAME, path, f"{where}/global_profile")
        for part in text.values() if isinstance(text, dict) else [text]:
            if isinstance(part, str):
                _clean(part, f"{name}'s profile", _BAD_IN_TEXT, path, f"{where}/global_profile")
    scenes = item.get("scene_characters")
    for i, entry in enumerate(scenes if isinstance(scenes, list) else []):
        names = entry.get("present") if isinstance(entry, dict) else None
        for name in names if isinstance(names, list) else []:
            if isinstance(name, str):
                _clean(name, "character name", _BAD_IN_NAME, path,
                       f"{where}/scene_characters/{i}/present")  # fmt: skip


def is_sample_line(row: dict[str, Any]) -> bool:
    """Whether a JSON-lines row is a VinaBench sample (its id keys) rather than vsb's
    ``{"story_id": STRING, "narrative": […]}``."""
    if "narrative" not in row or portion_of(row) is None:
        return False
    return not (isinstance(row.get("story_id"), str) and "scene_full_id" not in row)


def read_samples(
    doc: list[dict[str, Any]], path: Path, wheres: list[str] | None = None
) -> Iterator[Sample]:
    """Every story of a VinaBench file (long samples split), or ``InputError`` naming the
    sample (``wheres``: each item's place, default its JSON pointer) and what was
    expected."""
    for i, item in enumerate(doc):
        where = wheres[i] if wheres is not None else f"/{i}"
        found = portion_of(item)
        if found is None:
            raise InputError(
                "expected a VinaBench sample with its id keys: scene_full_id and story_id "
                "(VWP), movie_id and global_id (Storyboard20K) or portion and sid (StorySalon)",
                file=path,
                location=where,
            )
        portion, raw_id = found
        scenes = item.get("narrative")
        if not isinstance(scenes, list):
            raise InputError("expected narrative: a list of scene texts", file=path, location=where)
        if len(scenes) < 2:
            raise InputError(
                f"the narrative has {len(scenes)} scene(s); an imported story has 2 to "
                f"{MAX_SCENES}",
                file=path,
                location=f"{where}/narrative",
            )
        check_sample(item, portion, path, where)
        sizes = split_sizes(len(scenes))
        lo = 0
        for part, size in enumerate(sizes):
            hi = lo + size
            gold = Gold(
                portion=portion,
                profile=item.get("global_profile"),
                **{key: _cut(item.get(key), lo, hi, len(scenes)) for key in _PER_SCENE},
                sample_scenes=len(scenes),
            )
            pid = raw_id if len(sizes) == 1 else f"{raw_id}_{part}"
            part_of = "" if len(sizes) == 1 else f" (scenes {lo + 1}-{hi})"
            yield Sample(pid, scenes[lo:hi], where, part_of, gold)
            lo = hi
