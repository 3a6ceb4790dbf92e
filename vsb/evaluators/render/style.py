"""The drawing conventions the blind extractor is trained on (like a detector's style prior).

The palette is the story layer's (``vsb.story.vocab.PALETTE_ENTRIES``, which the renderer
draws with); the figure geometry and where objects go duplicate what the renderer draws, so
the evaluators never import the renderer. Figure offsets are relative to a figure's anchor
``(cx, y0)``: head-centre column and head-top row; boxes are half-open ``(x0, x1, y0, y1)``.
"""

from __future__ import annotations

from vsb.story import vocab
from vsb.story.vocab import RENDER_COLORS as RENDER_COLORS  # in palette order
from vsb.story.vocab import RGB

#: Canonical palette: index -> "<group>:<name>" and index -> RGB (index arrays use this).
NAMES, PALETTE, INDEX = vocab.PALETTE_NAMES, vocab.PALETTE_RGB, vocab.PALETTE_INDEX
BY_RGB: dict[RGB, int] = {c: i for i, c in enumerate(PALETTE)}

# --- canvas ------------------------------------------------------------------------------
W = H = 512
#: Rows searched for heads (every head top lies in [245, 272)).
HEAD_ROWS = (230, 330)
#: Ground objects lie in rows >= ZONE_TOP.
ZONE_TOP = 448
#: Heads are about 40 × 36 visible pixels.
HEAD_W = (32, 44)
HEAD_H = (26, 40)
HEAD_HEIGHT = 44
HEAD_HALF_W = 20
#: A head's skin fills at least this share of its bounding box (about 0.6 with glasses).
HEAD_FILL = 0.4

# --- sample regions (relative to the anchor) ------------------------------------------------
HAIR = (-18, 18, -3, 7)
BUN = (-4, 4, -18, -10)
LONG = ((-26, -21, 30, 56), (21, 26, 30, 56))
PONYTAIL = (30, 35, 20, 40)
TOP = (-18, -2, 60, 100)
TROUSERS = (-16, 0, 121, 129)
LEGS_STRAIGHT = (-16, -6, 150, 180)
LEGS_SITTING = (30, 42, 124, 134)
ARM_UP_LEFT = (-47, -39, 0, 30)
ARM_UP_RIGHT = (39, 47, 0, 30)
ACCESSORY = {
    "hat": (-12, 12, -44, -10),
    "scarf": (-16, 16, 43, 51),
    "glasses": (-14, 14, 15, 26),
    "bag": (-54, -38, 86, 110),
}
#: Column offset of a held object's centre from its holder (arms down 50, raised 43).
HAND_DX = 46
#: A held object further than this from every hand is not held.
HAND_REACH = 64

# --- objects -------------------------------------------------------------------------------
#: Every detail colour drawn on objects and the one kind that carries it.
DETAIL_KIND: dict[str, str] = {
    "umbrella_handle": "umbrella",
    "lantern_frame": "lantern", "lantern_glass": "lantern", "lantern_light": "lantern",
    "glow": "lantern",
    "book_spine": "book", "page": "book",
    "vase_shine": "vase", "crack": "vase",
    "candle_plate": "candle", "wick": "candle", "flame": "candle", "flame_core": "candle",
    "box_outline": "box", "box_interior": "box",
    "envelope_line": "letter", "seal": "letter", "paper": "letter",
    "apple_stem": "apple", "leaf": "apple",
    "coin_mark": "coin",
    "flower_stem": "flower", "flower_centre": "flower", "wilted_centre": "flower",
}  # fmt: skip
#: Detail colours that tell states apart.
STATE_MARKS: tuple[str, ...] = (
    "lantern_light", "glow", "page", "crack", "flame", "box_interior", "seal", "paper",
    "wilted_centre",
)  # fmt: skip
#: Components of one object are at most this far apart (columns); objects are further.
GROUP_GAP = 14
#: Components smaller than this (pixels) are ignored.
MIN_COMPONENT = 6
#: A detail colour of a kind outside the vocabulary this close (RGB distance) to a detail
#: colour of a kind in it counts as that detail (a lossy copy can shift a small detail).
MARK_TOLERANCE = 30.0
#: Margin around an object's components searched for its detail colours.
MARK_MARGIN = 6

# --- environment -----------------------------------------------------------------------------
#: Minimum core pixels of a cloud tone to count.
MIN_CLOUD = 60
#: The tone of the clouds of each weather (a clear sky has none).
CLOUD_TONE = {"cloudy": "cloud", "rainy": "rain_cloud", "snowy": "snow_cloud"}
#: Rows of the figure band (pairwise consistency).
BAND = (168, 450)
