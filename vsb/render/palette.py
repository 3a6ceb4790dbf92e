"""The renderer's finite palette: every pixel of a render is exactly one of these colours.

``PALETTE[i]`` is the RGB triple of palette index ``i``; ``NAMES[i]`` says what it means as
``"<group>:<name>"`` (``sky:noon``, ``ground:park``, ``skin:tone-3``, ``hair:blond``,
``cloth:red``, ``acc:hat``, ``obj:teal``, ``fx:rain``…). The colours and their order are
``vsb.story.vocab.PALETTE_ENTRIES`` (the extractor reads the same); the renderer-only colours
(backgrounds, props, object details, weather marks) are disjoint from the vocabulary's, so
a colour identifies its role exactly. They are also placed at least 16 units from every other
colour in the decoder's luma-weighted YCbCr space
(``vsb.evaluators.render.robust.MIN_SEPARATION``), so a render that travels as a JPEG still
reads back: a closed box's outline never passes for an open box's interior.
"""

from __future__ import annotations

from vsb.story import vocab
from vsb.story.vocab import RENDER_COLORS as RENDER_COLORS  # the renderer-only colours

#: Index -> "<group>:<name>".
NAMES = vocab.PALETTE_NAMES
#: Index -> RGB triple (the PNG palette).
PALETTE = vocab.PALETTE_RGB
#: "<group>:<name>" -> index.
INDEX = vocab.PALETTE_INDEX

if len(set(PALETTE)) != len(PALETTE) or len(PALETTE) > 256:  # pragma: no cover - static data
    raise RuntimeError("palette colours must be unique and at most 256")


def fx(name: str) -> int:
    """Index of a renderer-only colour."""
    return INDEX[f"fx:{name}"]
