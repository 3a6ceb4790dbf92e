"""The renderer's finite palette: every pixel of a render is exactly one of these colours.

``PALETTE[i]`` is the RGB triple of palette index ``i``; ``NAMES[i]`` says what it means as
``"<group>:<name>"`` (``sky:noon``, ``ground:park``, ``skin:tone-3``, ``hair:blond``,
``cloth:red``, ``acc:hat``, ``obj:teal``, ``fx:rain``…). The vocabulary colours come from
``vsb.story.vocab``; the renderer-only colours below (backgrounds, props, object details, weather
marks) are disjoint from them, so a colour identifies its role exactly. They are also placed
at least 16 units from every other colour in the decoder's luma-weighted YCbCr space
(``vsb.evaluators.render.robust.MIN_SEPARATION``), so a render that travels as a JPEG still reads
back: a closed box's outline never passes for an open box's interior.
"""

from __future__ import annotations

from vsb.story import vocab

RGB = tuple[int, int, int]

#: Renderer-only colours: backgrounds, props, figure details, object details, weather marks.
RENDER_COLORS: dict[str, RGB] = {
    # backgrounds and props
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
    # figure details
    "eye": (46, 16, 50),
    "shoe": (46, 64, 26),
    "stool": (160, 112, 76),
    # sky marks
    "sun": (255, 228, 92),
    "sunset_sun": (250, 120, 70),
    "moon": (216, 250, 222),
    "star": (255, 252, 188),
    "cloud": (226, 224, 255),
    "rain_cloud": (152, 164, 174),
    "rain": (72, 112, 192),
    "snow_cloud": (202, 206, 224),
    "snow": (255, 255, 255),
    # object details (each used by one kind only)
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
#: Index -> "<group>:<name>".
NAMES: list[str] = [n for n, _ in _ENTRIES]
#: Index -> RGB triple (the PNG palette).
PALETTE: list[RGB] = [c for _, c in _ENTRIES]
#: "<group>:<name>" -> index.
INDEX: dict[str, int] = {n: i for i, n in enumerate(NAMES)}

if len(set(PALETTE)) != len(PALETTE) or len(PALETTE) > 256:  # pragma: no cover - static data
    raise RuntimeError("palette colours must be unique and at most 256")


def fx(name: str) -> int:
    """Index of a renderer-only colour."""
    return INDEX[f"fx:{name}"]
