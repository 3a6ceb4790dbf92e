"""A few stories of a suite: ``--stories ID,…`` and ``--limit N`` of ``vsb run`` and ``vsb suite
prompts`` (issue 45, item 14).

``chosen_ids`` resolves the two options against a suite's ``suite.json`` (an unknown id is one
``InputError`` with "did you mean"; ``--limit N`` keeps the first N in suite order, after
``--stories`` when both are given). ``subset_suite`` writes those stories as a suite of their own
(the story files byte for byte, a ``suite.json`` listing them alone, seed and prompt style
kept) into a temporary folder of the suite's own name, which ``vsb run`` then runs and copies into
``OUT/suite``: a run of a few stories is a run of a smaller suite, and its manifest's
``suite_sha256`` is that suite's.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from vsb.errors import InputError, select_present
from vsb.fsio import atomic_write_json
from vsb.story.io import load_suite_index

INDEX_NAME = "suite.json"


def parse_ids(text: str | None) -> list[str] | None:
    """``"a, b"`` -> ``["a", "b"]`` (None: no selection)."""
    if text is None:
        return None
    ids = [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise InputError("--stories names no story (--stories ID[,ID…])")
    return list(dict.fromkeys(ids))


def chosen_ids(
    suite_dir: str | Path, stories: Sequence[str] | None, limit: int | None
) -> list[str] | None:
    """The ids of the stories to take, in suite order (None: every story, nothing chosen)."""
    if stories is None and limit is None:
        return None
    if limit is not None and limit < 1:
        raise InputError(f"--limit {limit}: take at least one story")
    order = [e.id for e in load_suite_index(suite_dir).stories]
    listed = ", ".join(order[:4]) + (", …" if len(order) > 4 else "")
    wanted = select_present(
        stories, order,
        lambda unknown, hint: f"--stories: no story {', '.join(map(repr, unknown))} in "
        f"{suite_dir}{hint}; its {len(order)} stories: {listed}",
    )  # fmt: skip
    ids = [i for i in order if i in wanted]
    return ids if limit is None else ids[:limit]


@contextmanager
def subset_suite(suite_dir: str | Path, ids: Sequence[str] | None) -> Iterator[Path]:
    """``suite_dir`` itself when ``ids`` is None, else a temporary suite holding those stories
    alone (removed on exit), in a folder of the same name."""
    if ids is None:
        yield Path(suite_dir)
        return
    src = Path(suite_dir)
    index = load_suite_index(src)
    keep = set(ids)
    entries = [e for e in index.stories if e.id in keep]
    with tempfile.TemporaryDirectory(prefix="vsb-stories-") as tmp:
        dest = Path(tmp) / src.resolve().name
        dest.mkdir()
        for e in entries:
            shutil.copyfile(src / e.file, dest / e.file)
        sub = index.model_copy(update={"stories": entries})
        atomic_write_json(dest / INDEX_NAME, sub.model_dump(mode="json"))
        yield dest
