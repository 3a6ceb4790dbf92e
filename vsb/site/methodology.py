"""Render the methodology text (``templates/methodology.txt``, the spec) as escaped HTML.

Blocks are separated by blank lines: a tab-separated block is a table (first row the header),
a block of ``•`` lines a bullet list, a block of ``1.`` lines a numbered list, a short single
line without a final full stop a heading (``N. Title`` → h2, others → h3), anything else a
paragraph.
"""

from __future__ import annotations

import re
from importlib import resources

from markupsafe import Markup, escape

_NUMBERED = re.compile(r"^\d+\.\s+")


def methodology_text() -> str:
    """The methodology text shipped with the package."""
    return resources.files("vsb.site").joinpath("templates/methodology.txt").read_text("utf-8")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def render_methodology(text: str) -> tuple[str, Markup, list[tuple[str, str]]]:
    """(title, body HTML, [(anchor, heading)] of the h2 sections)."""
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    title = blocks[0].strip() if blocks else "Methodology"
    parts: list[str] = []
    toc: list[tuple[str, str]] = []
    for block in blocks[1:]:
        lines = block.splitlines()
        if all("\t" in ln for ln in lines):
            rows = [ln.split("\t") for ln in lines]
            head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
            body = "".join(
                "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:]
            )
            parts.append(f'<table class="data"><thead><tr>{head}</tr></thead>{body}</table>')
        elif all(ln.startswith("•") for ln in lines):
            items = "".join(f"<li>{escape(ln.lstrip('• ').strip())}</li>" for ln in lines)
            parts.append(f"<ul>{items}</ul>")
        elif len(lines) > 1 and all(_NUMBERED.match(ln) for ln in lines):
            items = "".join(f"<li>{escape(_NUMBERED.sub('', ln))}</li>" for ln in lines)
            parts.append(f"<ol>{items}</ol>")
        elif len(lines) == 1 and len(block) < 80 and not block.rstrip().endswith("."):
            anchor = _slug(block)
            if _NUMBERED.match(block):
                toc.append((anchor, block))
                parts.append(f'<h2 id="{anchor}">{escape(block)}</h2>')
            else:
                parts.append(f'<h3 id="{anchor}">{escape(block)}</h3>')
        else:
            parts.append(f"<p>{escape(' '.join(ln.strip() for ln in lines))}</p>")
    return title, Markup("\n".join(parts)), toc
