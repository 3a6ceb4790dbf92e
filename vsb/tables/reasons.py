"""Why a model's images were not judged, worded once for every stage that says it.

The render decoder gives an image that is not a render a reason (``off_palette``: "70% of
pixels are off the palette"), which its ``not_applicable`` rows carry. ``images_reason`` sums
up one model's such images in one line, from one image each: ``vsb evaluate``'s warning (from
the images it read) and scores.json's ``not_applicable`` reason (from the rows; what ``vsb
score`` and the site say) are both that line, so they cannot disagree (issue 45, item 8: the
warning gave the reason most images had, 70 %, where the scores gave the one most rows had,
100 %, naming no image).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

#: Images a summary names (the worst first); the rest are counted.
NAMED = 3
_OFF = re.compile(r"(\d+)% of pixels are off the palette")
_OFF_KIND = "off the palette"


def off_palette(share: float) -> str:
    """Why an image with ``share`` of its pixels on the palette is no render."""
    return f"{100 * (1 - share):.0f}% of pixels are off the palette"


def image_name(condition: str, story_id: str, scene: int) -> str:
    """An image of a model as its path under ``RUN/images/<model>/`` names it."""
    return f"{condition}/{story_id}/scene_{scene:02d}.png"


def images_reason(reasons: Mapping[str, str]) -> str:
    """One line for a model's images that were not judged (``image_name`` -> its reason): the
    reason most of them have, where every share off the palette counts as one reason, given
    as the span of the shares and the worst images (the most pixels off it); '' when none."""
    pcts: dict[str, int] = {}
    kinds: Counter[str] = Counter()
    for name, why in sorted(reasons.items()):
        if m := _OFF.fullmatch(why):
            pcts[name] = int(m.group(1))
        kinds[_OFF_KIND if name in pcts else why] += 1
    if not kinds:
        return ""
    kind = kinds.most_common(1)[0][0]
    if kind != _OFF_KIND:
        return kind
    lo, hi = min(pcts.values()), max(pcts.values())
    worst = _names([n for n, p in pcts.items() if p == hi])
    if lo == hi:
        return f"{hi}% of pixels are off the palette: {worst}"
    return f"{lo}–{hi}% of pixels are off the palette, {hi}% in {worst}"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMED])
    return shown + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")
