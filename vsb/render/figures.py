"""Character figures: exact palette colours for skin, hair, top, trousers and accessory.

Hair styles and poses are geometrically distinct (see ``vsb.render.layout`` for every box):
short = a cap; long = cap + side panels to the shoulders; bun = cap + a knot on top;
ponytail = cap + a tail on the right. Standing = arms down, legs straight; sitting = on a
stool, thighs forward; waving = left arm raised; cheering = both arms raised.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vsb.render import layout as L
from vsb.render.palette import INDEX, fx
from vsb.render.shapes import Plane, disc_mask, paste_mask, rect
from vsb.story.models import CharacterState

Box = tuple[int, int, int, int]

_HEAD_MASK: NDArray[np.bool_] = disc_mask(40, 44, 20, 22, 20.5, 22.5)
_BUN_MASK: NDArray[np.bool_] = disc_mask(18, 18, 9, 9, 9, 9)


def _box(img: Plane, cx: int, y0: int, b: Box, v: int) -> None:
    rect(img, cx + b[0], cx + b[1], y0 + b[2], y0 + b[3], v)


def head_top(pose: str, dy: int) -> int:
    """The anchor row ``y0`` of a figure in ``pose`` with vertical jitter ``dy``."""
    h = L.SITTING_HEIGHT if pose == "sitting" else L.STANDING_HEIGHT
    return L.FEET_Y - h + dy


def hand(pose: str, cx: int, y0: int) -> tuple[int, int]:
    """Where a held object's centre goes."""
    dx, dy = L.HAND_UP if pose == "cheering" else L.HAND_DOWN
    return cx + dx, y0 + dy


def draw_figure(img: Plane, c: CharacterState, cx: int, y0: int) -> None:
    """Draw one character with its anchor at ``(cx, y0)``."""
    skin = INDEX[f"skin:{c.skin}"]
    hair = INDEX[f"hair:{c.hair_color}"]
    top = INDEX[f"cloth:{c.top}"]
    trousers = INDEX[f"cloth:{c.trousers}"]
    # legs (under the torso)
    if c.pose == "sitting":
        for b in L.STOOL:
            _box(img, cx, y0, b, fx("stool"))
        _box(img, cx, y0, L.THIGHS, trousers)
        _box(img, cx, y0, L.SHINS, trousers)
        _box(img, cx, y0, L.SIT_SHOES, fx("shoe"))
    else:
        _box(img, cx, y0, L.HIPS, trousers)
        for b in L.LEGS:
            _box(img, cx, y0, b, trousers)
        for b in L.SHOES:
            _box(img, cx, y0, b, fx("shoe"))
    # torso and arms
    _box(img, cx, y0, L.TORSO, top)
    up_left = c.pose in ("waving", "cheering")
    up_right = c.pose == "cheering"
    for b in L.ARM_UP_LEFT if up_left else (L.ARM_DOWN_LEFT,):
        _box(img, cx, y0, b, top)
    for b in L.ARM_UP_RIGHT if up_right else (L.ARM_DOWN_RIGHT,):
        _box(img, cx, y0, b, top)
    # hair behind the head, then the head, then the cap
    if c.hair_style == "long":
        _box(img, cx, y0, L.LONG_LEFT, hair)
        _box(img, cx, y0, L.LONG_RIGHT, hair)
    elif c.hair_style == "ponytail":
        _box(img, cx, y0, L.PONY_TAIL, hair)
        _box(img, cx, y0, L.PONY_TIE, hair)
    elif c.hair_style == "bun":
        paste_mask(img, _BUN_MASK, cx + L.BUN[0], y0 + L.BUN[2], hair)
    paste_mask(img, _HEAD_MASK, cx + L.HEAD[0], y0 + L.HEAD[2], skin)
    _box(img, cx, y0, L.HAIR_CAP_TOP, hair)
    _box(img, cx, y0, L.HAIR_CAP, hair)
    for b in L.EYES:
        _box(img, cx, y0, b, fx("eye"))
    _box(img, cx, y0, L.MOUTH, fx("eye"))
    _draw_accessory(img, c, cx, y0)


def _draw_accessory(img: Plane, c: CharacterState, cx: int, y0: int) -> None:
    if c.accessory == "none":
        return
    v = INDEX[f"acc:{c.accessory}"]
    if c.accessory == "hat":
        lift = L.HAT_LIFT_BUN if c.hair_style == "bun" else 0
        _box(img, cx, y0 - lift, L.HAT_CROWN, v)
        _box(img, cx, y0 - lift, L.HAT_BRIM, v)
    elif c.accessory == "glasses":
        for b in L.GLASSES:
            _box(img, cx, y0, b, v)
    elif c.accessory == "scarf":
        for b in L.SCARF:
            _box(img, cx, y0, b, v)
    elif c.accessory == "bag":
        for b in L.BAG:
            _box(img, cx, y0, b, v)
