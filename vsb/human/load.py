"""Reading rating files: every file checked before anything is computed or written.

A file must be a regular file no larger than ``MAX_RATING_BYTES`` (checked before reading
it whole), UTF-8 JSON nested at most ``MAX_RATING_DEPTH`` deep with no repeated key in any
object, and a valid ``RatingFile`` — or a valid ``BlindRatingFile`` (what the blinded page
exports), which needs the release to resolve its target ids into models (``Resolver``):
its root hash must be the release's, every target a strip of the release's rated condition,
and each letter one model. Every problem of every file is one line
(``FILE: LOCATION: MESSAGE``); ``RatingImportError`` carries them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from vsb.errors import InputError, did_you_mean
from vsb.fsio import loads_json, read_limited, sha256_hex
from vsb.human.models import (
    BLIND_FORMAT_VERSION,
    CONTROL_BAD,
    CONTROL_GOOD,
    BlindLikertItem,
    BlindRatingFile,
    Item,
    LikertItem,
    RatingFile,
    parse_time,
)

if TYPE_CHECKING:
    from vsb.human.blinding import Blinding

MAX_RATING_BYTES = 8 * 1024 * 1024
"""Largest rating file read (a long session is a few hundred kilobytes)."""
MAX_RATING_DEPTH = 16
"""Deepest nesting accepted (a rating file nests 4 deep)."""
MAX_PROBLEMS_PER_FILE = 20


class RatingImportError(InputError):
    """One or more rating files are bad; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)
        self.problems = problems


@dataclass(frozen=True)
class LoadedFile:
    """A validated rating file and where it came from."""

    path: Path
    sha256: str
    rating: RatingFile


def _pointer(loc: Sequence[int | str]) -> str:
    # discriminated unions put the tag in the location ('items', 3, 'likert', 'ratings'…)
    parts = [str(x) for x in loc if x not in ("likert", "pairwise", "control")]
    return "/" + "/".join(parts)


def _validation_lines(path: Path, err: ValidationError) -> list[str]:
    lines = []
    for e in err.errors(include_url=False)[:MAX_PROBLEMS_PER_FILE]:
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        lines.append(str(InputError(msg, file=path, location=_pointer(e["loc"]))))
    if err.error_count() > MAX_PROBLEMS_PER_FILE:
        lines.append(f"{path}: … {err.error_count() - MAX_PROBLEMS_PER_FILE} more problem(s)")
    return lines


class Resolver:
    """Resolves blinded (2.0) rating files against the release their page was built from."""

    def __init__(self, release_dir: str | Path, root_hash: str) -> None:
        self.release = Path(release_dir)
        self.root_hash = root_hash
        self._blinding: Blinding | None = None

    @property
    def blinding(self) -> Blinding:
        if self._blinding is None:
            from vsb.human.blinding import release_blinding

            self._blinding = release_blinding(self.release)
        return self._blinding

    def resolve(self, path: Path, blind: BlindRatingFile) -> RatingFile:
        """The file with models in place of target ids; ``RatingImportError`` if it is not
        of this release."""
        if blind.root_hash != self.root_hash:
            raise RatingImportError(root_hash_problems_of(path, blind.root_hash, self.root_hash,
                                                          self.release))  # fmt: skip
        strips = self.blinding.strips
        problems: list[str] = []
        letters: dict[str, str] = {}
        items: list[dict[str, Any]] = []
        for i, it in enumerate(blind.items):
            targets = (
                [("target", it.target, it.letter)]
                if isinstance(it, BlindLikertItem)
                else [
                    ("target_a", it.target_a, it.letter_a),
                    ("target_b", it.target_b, it.letter_b),
                ]
            )
            unknown = [(f, t) for f, t, _ in targets if t not in strips]
            if unknown:
                f, t = unknown[0]
                problems.append(str(InputError(
                    f"target {t!r} is not a rated strip of the release {self.release}",
                    file=path, location=f"/items/{i}/{f}")))  # fmt: skip
                continue
            found = [strips[t] for _, t, _ in targets]
            if len({s.story_id for s in found}) != 1:
                problems.append(str(InputError("the two targets are of different stories",
                                               file=path, location=f"/items/{i}")))  # fmt: skip
                continue
            for (_, _, letter), s in zip(targets, found, strict=True):
                if letters.setdefault(letter, s.model) != s.model:
                    problems.append(str(InputError(
                        f"letter {letter} stands for two models in this session",
                        file=path, location=f"/items/{i}")))  # fmt: skip
            base = {
                "item_id": it.item_id,
                "story_id": found[0].story_id,
                "condition": found[0].condition,
                "time_s": it.time_s,
                "order": it.order,
            }
            if isinstance(it, BlindLikertItem):
                items.append({**base, "kind": "likert", "model": found[0].model,
                              "letter": it.letter, "ratings": it.ratings.model_dump(),
                              "repeat_of": it.repeat_of})  # fmt: skip
            else:
                pair = {found[0].model, found[1].model}
                kind = "control" if pair == {CONTROL_GOOD, CONTROL_BAD} else "pairwise"
                items.append({**base, "kind": kind, "model_a": found[0].model,
                              "model_b": found[1].model, "letter_a": it.letter_a,
                              "letter_b": it.letter_b, "choice": it.choice})  # fmt: skip
        if problems:
            raise RatingImportError(problems[:MAX_PROBLEMS_PER_FILE])
        doc = {
            **blind.model_dump(exclude={"items", "version"}),
            "version": "1.0",
            "letters": letters,
            "items": items,
        }
        try:
            return RatingFile.model_validate(doc)
        except ValidationError as err:
            raise RatingImportError(_validation_lines(path, err)) from None


def load_rating_file(path: str | Path, resolver: Resolver | None = None) -> LoadedFile:
    """One rating file, validated (a blinded one resolved through ``resolver``);
    ``RatingImportError`` listing its problems."""
    p = Path(path)
    if not p.exists():
        raise RatingImportError([str(InputError("file not found", file=p))])
    if not p.is_file():
        raise RatingImportError([str(InputError("not a regular file", file=p))])
    try:
        size = p.stat().st_size
        if size > MAX_RATING_BYTES:
            raise InputError(
                f"file of {size:,} bytes exceeds the {MAX_RATING_BYTES:,}-byte limit", file=p
            )
        data = read_limited(p, MAX_RATING_BYTES)
        obj = loads_json(
            data, file=p, max_depth=MAX_RATING_DEPTH, max_bytes=MAX_RATING_BYTES, unique_keys=True
        )
    except InputError as err:
        raise RatingImportError([str(err)]) from None
    if not isinstance(obj, dict):
        raise RatingImportError([str(InputError("expected a JSON object", file=p))])
    if obj.get("version") == BLIND_FORMAT_VERSION:
        try:
            blind = BlindRatingFile.model_validate(obj)
        except ValidationError as err:
            raise RatingImportError(_validation_lines(p, err)) from None
        if resolver is None:
            raise RatingImportError([str(InputError(
                "a blinded rating file (version 2.0, what the evaluate page exports) names "
                "opaque targets: import it with --release R, the release its page was built "
                "from", file=p))])  # fmt: skip
        return LoadedFile(p, sha256_hex(data), resolver.resolve(p, blind))
    try:
        rating = RatingFile.model_validate(obj)
    except ValidationError as err:
        raise RatingImportError(_validation_lines(p, err)) from None
    return LoadedFile(p, sha256_hex(data), rating)


@dataclass(frozen=True)
class ReleaseContents:
    """What a rating file is checked against: the release's name and every strip it scored
    (story, condition, model)."""

    path: Path
    name: str
    strips: frozenset[tuple[str, str, str]]

    @cached_property
    def stories(self) -> set[str]:
        return {s for s, _, _ in self.strips}

    @cached_property
    def conditions(self) -> set[str]:
        return {c for _, c, _ in self.strips}

    @cached_property
    def models(self) -> set[str]:
        return {m for _, _, m in self.strips}


def _unknown(kind: str, name: str, known: set[str], release: Path) -> str:
    hint = did_you_mean(name, sorted(known))
    return f"{kind} {name!r} is not in the release {release}{hint}"


def _item_problem(it: Item, rel: ReleaseContents) -> tuple[str, str] | None:
    """(field, message) for the first field of ``it`` the release contradicts, or None."""
    named = [("model", it.model)] if isinstance(it, LikertItem) else [
        ("model_a", it.model_a), ("model_b", it.model_b)]  # fmt: skip
    if it.story_id not in rel.stories:
        return "story_id", _unknown("story", it.story_id, rel.stories, rel.path)
    if it.condition not in rel.conditions:
        return "condition", _unknown("condition", it.condition, rel.conditions, rel.path)
    for field_name, model in named:
        if model not in rel.models:
            return field_name, _unknown("model", model, rel.models, rel.path)
    for field_name, model in named:
        if (it.story_id, it.condition, model) not in rel.strips:
            return field_name, (
                f"the release {rel.path} has no images of model {model!r} "
                f"for story {it.story_id!r} under condition {it.condition!r}"
            )
    return None


def release_problems(
    files: Sequence[LoadedFile], release: ReleaseContents, now: datetime | None = None
) -> list[str]:
    """One line per field of a file the release contradicts: its name, a letter's model, and
    each item's story, condition and model (the strip must be one the release scored); and
    a session that finished in the future (more than a day after ``now``)."""
    latest = (now or datetime.now(UTC)) + timedelta(days=1)
    problems: list[str] = []
    for f in files:
        lines: list[str] = []
        r = f.rating
        if r.release != release.name:
            lines.append(str(InputError(
                f"release {r.release!r} is not the name {release.name!r} of the release "
                f"{release.path}", file=f.path, location="/release")))  # fmt: skip
        if parse_time(r.finished_at) > latest:
            lines.append(str(InputError(f"finished_at {r.finished_at} is in the future",
                                        file=f.path, location="/finished_at")))  # fmt: skip
        for letter, model in r.letters.items():
            if model not in release.models:
                what = _unknown("model", model, release.models, release.path)
                lines.append(str(InputError(what, file=f.path, location=f"/letters/{letter}")))
        for i, it in enumerate(r.items):
            found = _item_problem(it, release)
            if found is not None:
                lines.append(str(InputError(f"item {it.item_id!r}: {found[1]}", file=f.path,
                                            location=f"/items/{i}/{found[0]}")))  # fmt: skip
        problems += lines[:MAX_PROBLEMS_PER_FILE]
        if len(lines) > MAX_PROBLEMS_PER_FILE:
            problems.append(f"{f.path}: … {len(lines) - MAX_PROBLEMS_PER_FILE} more problem(s)")
    return problems


def root_hash_problems_of(path: Path, found: str, root_hash: str, release: Path) -> list[str]:
    """The line for a file whose root hash ``found`` is not ``release``'s ``root_hash``."""
    return [
        str(InputError(f"root_hash {found} is not the root hash {root_hash} of the release "
                       f"{release}: these ratings are of another release", file=path,
                       location="/root_hash"))
    ]  # fmt: skip


def root_hash_problems(files: Sequence[LoadedFile], root_hash: str, release: Path) -> list[str]:
    """One line per file made from another release than ``release`` (root hash ``root_hash``),
    naming both hashes."""
    return [
        line
        for f in files
        if f.rating.root_hash != root_hash
        for line in root_hash_problems_of(f.path, f.rating.root_hash, root_hash, release)
    ]


def load_rating_files(
    paths: Sequence[str | Path], release_dir: str | Path | None = None
) -> list[LoadedFile]:
    """Every file validated (blinded ones resolved against ``release_dir``);
    ``RatingImportError`` with the problems of all bad files. The same session (rater and
    session id) twice is a problem too."""
    if not paths:
        raise RatingImportError(["no rating files given"])
    resolver = None
    if release_dir is not None:
        from vsb.release.manifest import load_manifest

        resolver = Resolver(release_dir, load_manifest(release_dir).root_hash)
    problems: list[str] = []
    loaded: list[LoadedFile] = []
    seen: dict[tuple[str, str], Path] = {}
    for path in paths:
        try:
            f = load_rating_file(path, resolver)
        except RatingImportError as err:
            problems += err.problems
            continue
        key = (f.rating.rater_id, f.rating.session_id)
        if key in seen:
            problems.append(
                str(InputError(f"the same session as {seen[key]} (rater {key[0]})", file=f.path))
            )
            continue
        seen[key] = f.path
        loaded.append(f)
    if problems:
        raise RatingImportError(problems)
    return loaded
