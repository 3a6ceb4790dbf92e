"""The renderer's finite palette: every pixel of a render is exactly one of these colours.

``PALETTE[i]`` is the RGB triple of palette index ``i``; ``NAMES[i]`` says what it means as
``"<group>:<name>"`` (``sky:noon``, ``ground:park``, ``skin:tone-3``, ``hair:blond``,
``cloth:red``, ``acc:hat``, ``obj:teal``, ``fx:rain``…). The vocabulary colours come from
``vsb.vocab``; the renderer-only colours below (backgrounds, props, object details, weather
marks) are disjoint from them, so a colour identifies its role exactly.
"""

from __future__ import annotations

from vsb import vocab

RGB = tuple[int, int, int]

#: Renderer-only colours: backgrounds, props, figure details, object details, weather marks.
RENDER_COLORS: dict[str, RGB] = {
    # backgrounds and props
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
    # figure details
    "eye": (32, 30, 36),
    "shoe": (46, 40, 38),
    "stool": (160, 112, 76),
    # sky marks
    "sun": (255, 228, 92),
    "sunset_sun": (250, 120, 70),
    "moon": (238, 238, 214),
    "star": (255, 250, 188),
    "cloud": (232, 236, 242),
    "rain_cloud": (150, 156, 170),
    "rain": (72, 112, 192),
    "snow_cloud": (206, 210, 222),
    "snow": (255, 255, 255),
    # object details (each used by one kind only)
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
