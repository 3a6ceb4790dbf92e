"""Building ``suite.json`` for a directory of stories that has none (hand-written stories).

``vsb suite generate`` writes the index with the stories; a directory of stories written by
hand (or copied from elsewhere) has none, and ``vsb run`` needs one. ``index_suite`` reads
every ``*.json`` story file of the directory, validates each (schema, state machine,
invariants, requirements), refuses duplicate ids and mixed prompt styles, and writes the
index atomically. Entries keep each file's own name and the SHA-256 of its bytes.
"""

from __future__ import annotations

from pathlib import Path

from vsb.errors import InputError
from vsb.fsio import atomic_write_json, sha256_file
from vsb.story.io import INDEX_NAME, load_story, read_suite_index, story_files
from vsb.story.models import SuiteEntry, SuiteIndex


def index_suite(root: str | Path, *, seed: int | None = None) -> SuiteIndex:
    """Validate every story file of ``root`` and write ``root/suite.json``; returns it.

    ``seed``: the index's seed (default: the existing index's, else 0; hand-written stories
    have no suite seed). The first invalid story raises its ``StoryValidationError``.
    """
    path = Path(root)
    if not path.is_dir():
        raise InputError("not a directory of story files", file=path)
    files = story_files(path)
    if not files:
        raise InputError("no story files (*.json) found", file=path)
    if seed is None:
        try:
            old = read_suite_index(path)
        except InputError:
            old = None  # a broken index is what this command replaces
        seed = old.seed if old is not None else 0
    entries: list[SuiteEntry] = []
    seen: dict[str, Path] = {}
    styles: set[str] = set()
    for f in files:
        story = load_story(f)
        if story.id in seen:
            raise InputError(
                f"duplicate story id {story.id!r}: also in {seen[story.id]}", file=f, location="/id"
            )
        seen[story.id] = f
        styles.add(story.prompt_style)
        entries.append(
            SuiteEntry(
                id=story.id,
                file=f.name,
                category=story.category,
                difficulty=story.difficulty,
                scenes=len(story.scenes),
                requirements=sum(len(s.requirements) for s in story.scenes),
                sha256=sha256_file(f),
            )
        )
    if len(styles) > 1:
        raise InputError(
            f"stories mix prompt styles ({', '.join(sorted(styles))}); a suite has one", file=path
        )
    entries.sort(key=lambda e: e.id)
    index = SuiteIndex(seed=seed, prompt_style=styles.pop(), stories=entries)
    atomic_write_json(path / INDEX_NAME, index.model_dump(mode="json"))
    return index
