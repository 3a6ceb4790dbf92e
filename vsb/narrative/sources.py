"""Reading narratives: plain text, JSON and the JSON-lines layout (docs/IMPORT.md).

- ``*.txt``: one story per file, its id the file name's stem; scenes are ``Scene N:``
  sections when the text has such headers (numbered 1, 2, … in order), else paragraphs
  (separated by blank lines).
- ``*.json``: a list of scene texts (one story, id from the file name), a list of stories,
  each ``{"id": ID, "scenes": [TEXT, …]}``, or one of VinaBench's annotation files as
  released (``vsb.narrative.vinabench``: the portion and the id from each sample's id keys,
  its annotations kept for ``--constraints gold``).
- ``*.jsonl``: one story per line, ``{"story_id": ID, "narrative": [TEXT, …]}`` (other keys
  ignored), or one of VinaBench's samples per line (recognised by its id keys).

Every problem is an ``InputError`` naming the file and the line, JSON pointer or scene.
Scene texts are kept verbatim (only the whitespace around a paragraph is stripped).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsb.errors import InputError
from vsb.fsio import iter_jsonl, loads_json, read_limited
from vsb.narrative.vinabench import (
    PORTION_NAMES,
    Gold,
    Sample,
    is_sample_line,
    is_vinabench,
    read_samples,
)

MAX_NARRATIVE_BYTES = 16 * 1024 * 1024
"""Largest narrative file read."""
MAX_SCENE_CHARS = 4000
"""Longest scene text (a scene is a picture's prompt, not a chapter)."""
MIN_SCENES, MAX_SCENES = 2, 16
"""Scenes of an imported story (docs/IMPORT.md): checked before any call is made."""
#: Control characters a scene text may not hold (tab, newline and carriage return may).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_HEADER = re.compile(r"^[ \t]*scene[ \t]+(\d+)[ \t]*:[ \t]*", re.IGNORECASE | re.MULTILINE)
_ID = re.compile(r"[^a-z0-9_\-]+")


@dataclass(frozen=True)
class Narrative:
    """One story as read: its id, its scene texts in order and where it came from (and, from
    a VinaBench file, its annotations)."""

    id: str
    scenes: tuple[str, ...]
    source: str
    gold: Gold | None = None


def story_id(raw: str, file: Path | None = None, location: str | None = None) -> str:
    """A story id from a name: lower case, runs of other characters become ``-``; a name
    with no letter, digit, ``_`` or ``-`` (``..``, ``.``, ``?``) is refused."""
    out = _ID.sub("-", raw.strip().lower()).strip("-")
    if not out:
        raise InputError(
            f"story id {raw!r} has no letter or digit (give each story a name)",
            file=file,
            location=location,
        )
    return out[:100]


def _check_scenes(scenes: Sequence[Any], file: Path, where: str) -> tuple[str, ...]:
    if not MIN_SCENES <= len(scenes) <= MAX_SCENES:
        raise InputError(
            f"a story has {MIN_SCENES} to {MAX_SCENES} scenes, this one {len(scenes):,}",
            file=file,
            location=where,
        )
    out = []
    for i, text in enumerate(scenes, start=1):
        if not isinstance(text, str):
            raise InputError(f"scene {i} is not a string", file=file, location=where)
        text = text.strip()
        if not text:
            raise InputError(f"scene {i} is empty", file=file, location=where)
        if len(text) > MAX_SCENE_CHARS:
            raise InputError(
                f"scene {i} has {len(text):,} characters (at most {MAX_SCENE_CHARS:,})",
                file=file,
                location=where,
            )
        if bad := _CONTROL.search(text):
            raise InputError(
                f"scene {i} holds the control character U+{ord(bad.group()):04X} at "
                f"character {bad.start() + 1:,} (only tab and newline may appear in a text)",
                file=file,
                location=where,
            )
        out.append(text)
    if not out:
        raise InputError("a story needs at least one scene", file=file, location=where)
    return tuple(out)


def _text_scenes(text: str, file: Path) -> tuple[str, ...]:
    heads = list(_HEADER.finditer(text))
    if not heads:
        paragraphs = [p for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
        return _check_scenes(paragraphs, file, "paragraphs")
    if text[: heads[0].start()].strip():
        line = 1 + text.count("\n", 0, heads[0].start())
        raise InputError(
            "text before the first 'Scene N:' header", file=file, location=f"line {line}"
        )
    scenes = []
    for i, m in enumerate(heads, start=1):
        if int(m.group(1)) != i:
            line = 1 + text.count("\n", 0, m.start())
            raise InputError(
                f"expected 'Scene {i}:', got 'Scene {m.group(1)}:'",
                file=file,
                location=f"line {line}",
            )
        end = heads[i].start() if i < len(heads) else len(text)
        scenes.append(text[m.end() : end])
    return _check_scenes(scenes, file, "scene headers")


def _read_text(path: Path) -> Iterator[Narrative]:
    try:
        text = read_limited(path, MAX_NARRATIVE_BYTES).decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", file=path) from None
    yield Narrative(story_id(path.stem, path), _text_scenes(text, path), str(path))


def _read_json(path: Path) -> Iterator[Narrative]:
    doc = loads_json(read_limited(path, MAX_NARRATIVE_BYTES), file=path, unique_keys=True)
    if not isinstance(doc, list) or not doc:
        raise InputError("expected a non-empty list of scenes or of stories", file=path)
    if all(isinstance(x, str) for x in doc):
        yield Narrative(story_id(path.stem, path), _check_scenes(doc, path, "/"), str(path))
        return
    if is_vinabench(doc):
        yield from _vinabench(read_samples(doc, path), path)
        return
    for i, item in enumerate(doc):
        where = f"/{i}"
        if not isinstance(item, dict) or set(item) != {"id", "scenes"}:
            raise InputError(
                'expected a story {"id": …, "scenes": […]} (or a list of scene strings, or '
                "VinaBench's samples with a narrative)",
                file=path,
                location=where,
            )
        if not isinstance(item["id"], str) or not isinstance(item["scenes"], list):
            raise InputError("expected a string id and a list of scenes", file=path, location=where)
        scenes = _check_scenes(item["scenes"], path, where + "/scenes")
        yield Narrative(story_id(item["id"], path, where + "/id"), scenes, f"{path}{where}")


def _vinabench(samples: Iterator[Sample], path: Path) -> Iterator[Narrative]:
    for sample in samples:
        where = f"{sample.where}/narrative{sample.part}"
        scenes = _check_scenes(sample.scenes, path, where)
        portion = PORTION_NAMES[sample.gold.portion]
        sep = "" if sample.where.startswith("/") else ":"
        source = f"{path}{sep}{sample.where}{sample.part} (VinaBench {portion})"
        sid = story_id(sample.raw_id, path, sample.where)
        yield Narrative(sid, scenes, source, sample.gold)


def _read_jsonl(path: Path) -> Iterator[Narrative]:
    for n, row in iter_jsonl(path, max_bytes=MAX_NARRATIVE_BYTES):
        if is_sample_line(row):  # one of VinaBench's samples per line
            yield from _vinabench(read_samples([row], path, [f"line {n}"]), path)
            continue
        sid, scenes = row.get("story_id"), row.get("narrative")
        if not isinstance(sid, str) or not isinstance(scenes, list):
            raise InputError(
                'expected {"story_id": STRING, "narrative": [SCENE TEXT, …]}',
                file=path,
                location=f"line {n}",
            )
        sid = story_id(sid, path, f"line {n}")
        yield Narrative(sid, _check_scenes(scenes, path, f"line {n}"), f"{path}:{n}")


_READERS = {".txt": _read_text, ".json": _read_json, ".jsonl": _read_jsonl}


def read_narratives(paths: Sequence[str | Path]) -> list[Narrative]:
    """Every story of the files, in order; a story id used twice is refused."""
    out: list[Narrative] = []
    seen: dict[str, str] = {}
    for p in map(Path, paths):
        reader = _READERS.get(p.suffix.lower())
        if reader is None:
            raise InputError("expected a .txt, .json or .jsonl narrative file", file=p)
        if not p.is_file():
            raise InputError("no such file", file=p)
        for story in reader(p):
            if story.id in seen:
                raise InputError(
                    f"story id {story.id!r} is used twice (first in {seen[story.id]})",
                    file=story.source,
                )
            seen[story.id] = story.source
            out.append(story)
    return out
