"""The finite world vocabulary: attribute values, object kinds and their states, places, times.

This is the story layer's closed world. The generator draws from it, the renderer draws
it with exact palette colours, and the blind extractor is told only these class names
(never a story's expected state). Colour values are exact RGB triples; renders contain no
other colours, so a pixel's colour identifies its palette entry exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

RGB = tuple[int, int, int]

# --- characters ----------------------------------------------------------------------------

#: Neutral skin-tone labels, drawn uniformly by the generator.
SKIN_TONES: dict[str, RGB] = {
    "tone-1": (246, 226, 206),
    "tone-2": (233, 198, 160),
    "tone-3": (210, 166, 120),
    "tone-4": (176, 126, 86),
    "tone-5": (134, 90, 58),
    "tone-6": (92, 60, 40),
}

HAIR_COLORS: dict[str, RGB] = {
    "black": (24, 22, 22),
    "dark brown": (70, 44, 28),
    "blond": (230, 200, 110),
    "auburn": (150, 60, 30),
    "grey": (150, 150, 155),
    "white": (245, 245, 240),
}

HAIR_STYLES: tuple[str, ...] = ("short", "long", "bun", "ponytail")

CLOTHING_COLORS: dict[str, RGB] = {
    "red": (200, 30, 40),
    "blue": (30, 70, 200),
    "green": (30, 150, 60),
    "yellow": (240, 200, 20),
    "purple": (120, 40, 160),
    "orange": (240, 120, 20),
    "teal": (0, 140, 140),
    "pink": (240, 110, 170),
    "navy": (20, 30, 90),
    "maroon": (110, 20, 40),
}

ACCESSORIES: tuple[str, ...] = ("none", "hat", "scarf", "glasses", "bag")

#: Accessory colour (one fixed colour each, drawn on the figure).
ACCESSORY_COLORS: dict[str, RGB] = {
    "hat": (60, 40, 100),
    "scarf": (220, 60, 120),
    "glasses": (10, 10, 60),
    "bag": (120, 80, 30),
}

POSES: tuple[str, ...] = ("standing", "sitting", "waving", "cheering")

CHARACTER_ATTRIBUTES: tuple[str, ...] = (
    "skin",
    "hair_color",
    "hair_style",
    "top",
    "trousers",
    "accessory",
)
IDENTITY_ATTRIBUTES: tuple[str, ...] = ("skin", "hair_color", "hair_style")
CLOTHING_ATTRIBUTES: tuple[str, ...] = ("top", "trousers", "accessory")

#: Short, cross-cultural names with no gendered form.
NAMES: tuple[str, ...] = (
    "Ama", "Bo", "Kai", "Lin", "Noor", "Ravi", "Sami", "Tomi", "Yuki", "Zeno",
    "Ari", "Jun", "Lumi", "Nico", "Oli", "Pax", "Remy", "Suri", "Tao", "Vian",
)  # fmt: skip

# --- objects -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectKind:
    """One kind of object: its states, which changes are allowed, and whether it is counted."""

    name: str
    plural: str
    states: tuple[str, ...]
    transitions: frozenset[tuple[str, str]]
    counted: bool = False

    def can_change(self, old: str, new: str) -> bool:
        """Whether the state may go from ``old`` to ``new`` (no change is always allowed)."""
        return old == new or (old, new) in self.transitions


def _t(*pairs: str) -> frozenset[tuple[str, str]]:
    out = set()
    for p in pairs:
        a, b = p.split(">")
        out.add((a, b))
    return frozenset(out)


OBJECT_KINDS: dict[str, ObjectKind] = {
    k.name: k
    for k in (
        ObjectKind("umbrella", "umbrellas", ("closed", "open", "broken"),
                   _t("closed>open", "open>closed", "closed>broken", "open>broken")),
        ObjectKind("lantern", "lanterns", ("unlit", "lit"), _t("unlit>lit", "lit>unlit")),
        ObjectKind("book", "books", ("closed", "open", "torn"),
                   _t("closed>open", "open>closed", "closed>torn", "open>torn")),
        ObjectKind("vase", "vases", ("intact", "cracked", "broken"),
                   _t("intact>cracked", "intact>broken", "cracked>broken")),
        ObjectKind("candle", "candles", ("unlit", "lit", "burnt"),
                   _t("unlit>lit", "lit>unlit", "lit>burnt")),
        ObjectKind("box", "boxes", ("closed", "open"), _t("closed>open", "open>closed")),
        ObjectKind("letter", "letters", ("sealed", "opened"), _t("sealed>opened")),
        ObjectKind("apple", "apples", ("whole",), frozenset(), counted=True),
        ObjectKind("coin", "coins", ("whole",), frozenset(), counted=True),
        ObjectKind("flower", "flowers", ("fresh", "wilted"), _t("fresh>wilted"), counted=True),
    )
}  # fmt: skip

OBJECT_COLORS: dict[str, RGB] = {
    "red": (220, 40, 40),
    "blue": (40, 90, 230),
    "green": (40, 170, 70),
    "yellow": (250, 215, 40),
    "purple": (140, 60, 190),
    "orange": (250, 140, 30),
    "teal": (20, 160, 160),
    "pink": (250, 130, 190),
}

MAX_COUNT = 6

# --- environment ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """A place: indoor places show the sky through a window."""

    name: str
    indoor: bool
    ground: RGB


LOCATIONS: dict[str, Location] = {
    loc.name: loc
    for loc in (
        Location("park", False, (90, 170, 70)),
        Location("beach", False, (235, 215, 150)),
        Location("forest", False, (40, 100, 45)),
        Location("street", False, (120, 120, 125)),
        Location("garden", False, (130, 190, 90)),
        Location("kitchen", True, (200, 180, 150)),
        Location("library", True, (158, 93, 68)),
        Location("classroom", True, (180, 170, 200)),
        Location("studio", True, (215, 215, 205)),
    )
}

#: Times of day in order; going back requires a new day.
TIMES: tuple[str, ...] = ("morning", "noon", "afternoon", "evening", "night")

SKY_COLORS: dict[str, RGB] = {
    "morning": (170, 210, 250),
    "noon": (110, 180, 250),
    "afternoon": (140, 190, 230),
    "evening": (250, 160, 110),
    "night": (20, 24, 60),
}

WEATHERS: tuple[str, ...] = ("clear", "cloudy", "rainy", "snowy")


def time_index(time: str) -> int:
    """Position of a time of day in ``TIMES``."""
    return TIMES.index(time)


# --- the render palette -------------------------------------------------------------------

#: Renderer-only colours: backgrounds, props, figure details, object details, weather marks.
#: The renderer draws them; the blind extractor reads them (``vsb.evaluators.render.style``).
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


def _palette_entries() -> list[tuple[str, RGB]]:
    out: list[tuple[str, RGB]] = [(f"fx:{k}", v) for k, v in RENDER_COLORS.items()]
    out += [(f"sky:{k}", v) for k, v in SKY_COLORS.items()]
    out += [(f"ground:{k}", loc.ground) for k, loc in LOCATIONS.items()]
    out += [(f"skin:{k}", v) for k, v in SKIN_TONES.items()]
    out += [(f"hair:{k}", v) for k, v in HAIR_COLORS.items()]
    out += [(f"cloth:{k}", v) for k, v in CLOTHING_COLORS.items()]
    out += [(f"acc:{k}", v) for k, v in ACCESSORY_COLORS.items()]
    out += [(f"obj:{k}", v) for k, v in OBJECT_COLORS.items()]
    return out


#: The render palette in index order, as ("<group>:<name>", RGB): the renderer-only colours,
#: then the vocabulary's (the renderer's ``palette`` and the extractor's ``style`` both index it).
PALETTE_ENTRIES: tuple[tuple[str, RGB], ...] = tuple(_palette_entries())
#: Index -> "<group>:<name>".
PALETTE_NAMES: list[str] = [n for n, _ in PALETTE_ENTRIES]
#: Index -> RGB triple (the PNG palette).
PALETTE_RGB: list[RGB] = [c for _, c in PALETTE_ENTRIES]
#: "<group>:<name>" -> index.
PALETTE_INDEX: dict[str, int] = {n: i for i, n in enumerate(PALETTE_NAMES)}
