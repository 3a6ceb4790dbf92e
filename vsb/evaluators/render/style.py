"""The drawing conventions the blind extractor is trained on (like a detector's style prior).

These constants duplicate what the renderer draws — palette colours, figure geometry and
where objects go — so the evaluators never import the renderer; a test checks both sides
agree. Figure offsets are relative to a figure's anchor ``(cx, y0)``: head-centre column
and head-top row; boxes are half-open ``(x0, x1, y0, y1)``.
"""

from __future__ import annotations

from vsb.story import vocab

RGB = tuple[int, int, int]

#: Renderer-only colours, in palette order (duplicated from the drawing conventions).
RENDER_COLORS: dict[str, RGB] = {
    "wall": (244, 208, 202),
    "baseboard": (198, 194, 170),
    "window_frame": (110, 88, 64),
    "trunk": (88, 82, 54),
    "foliage": (56, 124, 62),
    "pine": (26, 88, 38),
    "sea": (52, 142, 204),
    "foam": (222, 255, 254),
    "sandcastle": (214, 186, 120),
    "road": (70, 72, 90),
    "road_line": (238, 224, 122),
    "lamp_post": (40, 44, 70),
    "lamp_head": (230, 255, 198),
    "hedge": (74, 144, 64),
    "bloom": (232, 92, 112),
    "counter": (188, 108, 80),
    "stove": (94, 76, 90),
    "shelf": (112, 68, 48),
    "spine_a": (176, 62, 58),
    "spine_b": (62, 102, 158),
    "spine_c": (198, 168, 72),
    "blackboard": (42, 72, 56),
    "chalk": (216, 232, 216),
    "easel": (160, 144, 80),
    "canvas": (240, 212, 234),
    "eye": (46, 16, 50),
    "shoe": (46, 64, 26),
    "stool": (160, 112, 76),
    "sun": (255, 228, 92),
    "sunset_sun": (250, 120, 70),
    "moon": (216, 250, 222),
    "star": (255, 252, 188),
    "cloud": (226, 224, 255),
    "rain_cloud": (152, 164, 174),
    "rain": (72, 112, 192),
    "snow_cloud": (202, 206, 224),
    "snow": (255, 255, 255),
    "umbrella_handle": (94, 42, 48),
    "lantern_frame": (58, 54, 68),
    "lantern_glass": (92, 106, 124),
    "lantern_light": (255, 252, 154),
    "glow": (255, 236, 172),
    "book_spine": (70, 66, 58),
    "page": (254, 255, 220),
    "vase_shine": (210, 242, 255),
    "crack": (56, 22, 24),
    "candle_plate": (180, 186, 184),
    "wick": (36, 36, 36),
    "flame": (255, 168, 40),
    "flame_core": (255, 234, 124),
    "box_outline": (32, 54, 40),
    "box_interior": (78, 26, 40),
    "envelope_line": (92, 92, 104),
    "seal": (172, 22, 32),
    "paper": (255, 223, 244),
    "apple_stem": (88, 76, 20),
    "leaf": (62, 162, 52),
    "coin_mark": (182, 152, 62),
    "flower_stem": (52, 142, 44),
    "flower_centre": (255, 230, 58),
    "wilted_centre": (132, 108, 52),
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
