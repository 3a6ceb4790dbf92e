"""The drawing conventions the blind extractor is trained on (like a detector's style prior).

These constants duplicate what the renderer draws — palette colours, figure geometry and
where objects go — so the evaluators never import the renderer; a test checks both sides
agree. Figure offsets are relative to a figure's anchor ``(cx, y0)``: head-centre column
and head-top row; boxes are half-open ``(x0, x1, y0, y1)``.
"""

from __future__ import annotations

from vsb import vocab

RGB = tuple[int, int, int]

#: Renderer-only colours, in palette order (duplicated from the drawing conventions).
RENDER_COLORS: dict[str, RGB] = {
    "wall": (236, 228, 214),
    "baseboard": (196, 184, 166),
    "window_frame": (112, 86, 62),
    "trunk": (104, 72, 46),
    "foliage": (56, 132, 62),
    "pine": (28, 82, 40),
    "sea": (52, 142, 204),
    "foam": (226, 244, 250),
    "sandcastle": (214, 186, 120),
    "road": (78, 78, 84),
    "road_line": (246, 236, 124),
    "lamp_post": (52, 56, 62),
    "lamp_head": (250, 244, 200),
    "hedge": (74, 146, 64),
    "bloom": (232, 92, 112),
    "counter": (172, 122, 84),
    "stove": (84, 84, 94),
    "shelf": (112, 72, 42),
    "spine_a": (176, 62, 58),
    "spine_b": (62, 102, 158),
    "spine_c": (198, 168, 72),
    "blackboard": (42, 72, 56),
    "chalk": (232, 234, 224),
    "easel": (168, 128, 82),
    "canvas": (244, 240, 230),
    "eye": (32, 30, 36),
    "shoe": (46, 40, 38),
    "stool": (160, 112, 76),
    "sun": (255, 228, 92),
    "sunset_sun": (250, 120, 70),
    "moon": (238, 238, 214),
    "star": (255, 250, 188),
    "cloud": (232, 236, 242),
    "rain_cloud": (150, 156, 170),
    "rain": (72, 112, 192),
    "snow_cloud": (206, 210, 222),
    "snow": (255, 255, 255),
    "umbrella_handle": (86, 56, 40),
    "lantern_frame": (56, 54, 60),
    "lantern_glass": (92, 102, 122),
    "lantern_light": (255, 246, 162),
    "glow": (255, 236, 172),
    "book_spine": (64, 48, 44),
    "page": (250, 246, 226),
    "vase_shine": (238, 238, 250),
    "crack": (40, 32, 30),
    "candle_plate": (178, 178, 186),
    "wick": (36, 36, 36),
    "flame": (255, 168, 40),
    "flame_core": (255, 234, 124),
    "box_outline": (52, 46, 40),
    "box_interior": (62, 40, 30),
    "envelope_line": (92, 92, 104),
    "seal": (172, 22, 32),
    "paper": (255, 253, 244),
    "apple_stem": (96, 66, 36),
    "leaf": (62, 162, 52),
    "coin_mark": (182, 152, 62),
    "flower_stem": (52, 142, 52),
    "flower_centre": (255, 222, 62),
    "wilted_centre": (132, 102, 52),
}


def _entries() -> list[tuple[str, RGB]]:
    out: list[tuple[str, RGB]] = [(f"fx:{k}", v) for k, v in RENDER_COLORS.items()]
    out += [(f"sky:{k}", v) for k, v in vocab.SKY_COLORS.items()]
    out += [(f"ground:{k}", loc.ground) for k, loc in vocab.LOCATIONS.items()]
    out += [(f"skin:{k}", v) for k, v in vocab.SKIN_TONES.items()]
    out += [(f"hair:{k}", v) for k, v in vocab.HAIR_COLORS.items()]
    out += [(f"cloth:{k}", v) for k, v in vocab.CLOTHING_COLORS.items()]
    out += [(f"acc:{k}", v) for k, v in vocab.ACCESSORY_COLORS.items()]
    out += [(f"obj:{k}", v) for k, v in vocab.OBJECT_COLORS.items()]
    return out


_ENTRIES = _entries()
#: Canonical palette: index -> "<group>:<name>" and index -> RGB (index arrays use this).
NAMES: list[str] = [n for n, _ in _ENTRIES]
PALETTE: list[RGB] = [c for _, c in _ENTRIES]
INDEX: dict[str, int] = {n: i for i, n in enumerate(NAMES)}
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
