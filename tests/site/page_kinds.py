"""One page of every kind a built site has (the accessibility and plot tests walk them)."""

from __future__ import annotations

from pathlib import Path


def page_kinds(site: Path) -> dict[str, str]:
    """One page of every kind a built site has (kind: its path with the model, story,
    condition or evaluator replaced by *); of the story pages, one with the most scenes."""
    kinds: dict[str, str] = {}
    scenes = 0
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        parts = rel.split("/")
        if len(parts) == 1 or rel == "stories/index.html":
            kinds[rel] = rel
            continue
        kind = "stories/*/*" if parts[0] == "stories" else f"{parts[0]}/*"
        if kind == "stories/*/*":
            n = page.read_text("utf-8").count('<td class="frame">')
            if n > scenes:
                scenes, kinds[kind] = n, rel
            continue
        kinds.setdefault(kind, rel)
    return kinds
