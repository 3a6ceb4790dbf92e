"""Object sprites: one shape signature per kind × state, coloured per object colour.

Every kind carries a detail colour used by no other kind (handle, frame, spine, shine,
plate, outline, envelope line, stem, mark), and states differ in shape: a closed umbrella
is tall and thin, an open one a semicircle, a broken one two fragments; a lit lantern has a
glow; an open book shows pages; a cracked vase has a crack, a broken one lies in three
fragments; a lit candle has a flame, a burnt one is a short stub; an open box shows its
interior; an opened letter shows its paper. Counted kinds are drawn as ``count`` separate
small items.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
from numpy.typing import NDArray

from vsb.render.layout import ITEM_H, ITEM_STEP, ITEM_W, OBJECT_BOX
from vsb.render.palette import INDEX, fx
from vsb.render.shapes import OBJ, Plane, disc_mask, paste_sprite, rect
from vsb.story import vocab

Cells = NDArray[np.int16]


def _blank(w: int = OBJECT_BOX, h: int = OBJECT_BOX) -> Cells:
    return np.full((h, w), -1, dtype=np.int16)


def _disc(a: Cells, cx: float, cy: float, rx: float, ry: float, v: int) -> None:
    h, w = a.shape
    a[disc_mask(w, h, cx, cy, rx, ry)] = v


def _umbrella(state: str) -> Cells:
    a = _blank()
    h = fx("umbrella_handle")
    if state == "closed":
        rect(a, 18, 26, 10, 34, OBJ)
        rect(a, 20, 24, 4, 10, OBJ)
        rect(a, 21, 23, 0, 4, h)
        rect(a, 21, 23, 34, 40, h)
        rect(a, 21, 28, 40, 42, h)
        rect(a, 26, 28, 37, 40, h)
    elif state == "open":
        m = disc_mask(44, 44, 22, 28, 22, 22)
        m[28:] = False
        a[m] = OBJ
        rect(a, 21, 23, 28, 40, h)
        rect(a, 21, 28, 40, 42, h)
        rect(a, 26, 28, 37, 40, h)
    else:  # broken: two canopy fragments and a bent shaft
        m = disc_mask(44, 44, 22, 30, 22, 22)
        m[30:] = False
        left = m.copy()
        left[:, 18:] = False
        right = m.copy()
        right[:, :26] = False
        a[8:44][left[:36]] = OBJ
        a[0:36][right[8:44]] = OBJ
        rect(a, 20, 22, 24, 36, h)
        rect(a, 22, 30, 36, 38, h)
    return a


def _lantern(state: str) -> Cells:
    a = _blank()
    if state == "lit":
        _disc(a, 22, 24, 21, 20, fx("glow"))
    frame = fx("lantern_frame")
    rect(a, 18, 26, 0, 2, frame)
    rect(a, 18, 20, 0, 6, frame)
    rect(a, 24, 26, 0, 6, frame)
    rect(a, 10, 34, 6, 10, frame)
    rect(a, 12, 32, 10, 40, OBJ)
    rect(a, 10, 34, 40, 43, frame)
    pane = fx("lantern_light") if state == "lit" else fx("lantern_glass")
    rect(a, 16, 28, 15, 35, pane)
    return a


def _book(state: str) -> Cells:
    a = _blank()
    spine = fx("book_spine")
    page = fx("page")
    if state == "closed":
        rect(a, 6, 38, 12, 36, OBJ)
        rect(a, 6, 10, 12, 36, spine)
    elif state == "open":
        rect(a, 0, 44, 12, 38, OBJ)
        rect(a, 2, 21, 10, 34, page)
        rect(a, 23, 42, 10, 34, page)
        rect(a, 30, 33, 38, 43, spine)
    else:  # torn: two halves of the cover and a loose page
        rect(a, 2, 20, 14, 38, OBJ)
        rect(a, 2, 5, 14, 38, spine)
        rect(a, 26, 42, 18, 40, OBJ)
        rect(a, 20, 23, 6, 12, page)
        rect(a, 28, 36, 10, 16, page)
        for i in range(0, 18, 6):  # jagged torn edges
            rect(a, 20, 22, 14 + i, 17 + i, OBJ)
            rect(a, 24, 26, 20 + i, 23 + i, OBJ)
    return a


def _vase(state: str) -> Cells:
    a = _blank()
    shine = fx("vase_shine")
    if state in ("intact", "cracked"):
        _disc(a, 22, 29, 14, 14, OBJ)
        rect(a, 17, 27, 6, 17, OBJ)
        rect(a, 14, 30, 3, 7, OBJ)
        rect(a, 12, 16, 24, 32, shine)
        if state == "cracked":
            c = fx("crack")
            for i, (x, y) in enumerate(((24, 8), (25, 11), (23, 14), (22, 17), (24, 20))):
                rect(a, x, x + 2, y, y + 3 + (i % 2), c)
            rect(a, 26, 28, 22, 25, c)
    else:  # broken: three fragments on the ground, 3-4 px apart (a JPEG keeps the gaps)
        _disc(a, 7, 36, 6, 6, OBJ)
        rect(a, 17, 27, 34, 42, OBJ)
        _disc(a, 37, 34, 6, 8, OBJ)
        rect(a, 4, 8, 33, 37, shine)
        rect(a, 19, 24, 36, 40, shine)
    return a


def _candle(state: str) -> Cells:
    a = _blank()
    rect(a, 12, 32, 40, 44, fx("candle_plate"))
    if state == "burnt":
        rect(a, 18, 26, 32, 40, OBJ)
        rect(a, 13, 31, 38, 40, OBJ)
        rect(a, 21, 23, 29, 32, fx("wick"))
        return a
    rect(a, 18, 26, 14, 40, OBJ)
    rect(a, 21, 23, 10, 14, fx("wick"))
    if state == "lit":
        _disc(a, 22, 6, 4.5, 6, fx("flame"))
        _disc(a, 22, 7, 2, 3, fx("flame_core"))
    return a


def _box(state: str) -> Cells:
    a = _blank()
    line = fx("box_outline")
    if state == "closed":
        rect(a, 6, 38, 16, 40, OBJ)
        rect(a, 4, 40, 10, 17, OBJ)
        rect(a, 8, 36, 17, 19, line)
        rect(a, 20, 24, 19, 37, line)  # stops short of the bottom edge (no dark corner there)
    else:
        rect(a, 6, 38, 18, 40, OBJ)
        rect(a, 8, 36, 18, 24, fx("box_interior"))
        rect(a, 6, 10, 2, 18, OBJ)  # the lid stands open on its hinge
        rect(a, 10, 24, 2, 6, OBJ)
        rect(a, 20, 24, 26, 37, line)
    return a


def _letter(state: str) -> Cells:
    a = _blank()
    line = fx("envelope_line")
    if state == "sealed":
        rect(a, 4, 40, 10, 34, OBJ)
        for i in range(9):
            rect(a, 6 + 2 * i, 8 + 2 * i, 12 + i, 14 + i, line)
            rect(a, 36 - 2 * i, 38 - 2 * i, 12 + i, 14 + i, line)
        _disc(a, 22, 22, 3.5, 3.5, fx("seal"))
    else:
        for i in range(12):  # the open flap, pointing up
            rect(a, 4 + 3 * i // 2, 40 - 3 * i // 2, 16 - i, 17 - i, OBJ)
        rect(a, 4, 40, 16, 38, OBJ)
        rect(a, 10, 34, 4, 26, fx("paper"))
        rect(a, 4, 40, 26, 38, OBJ)
        rect(a, 6, 38, 26, 28, line)
    return a


def _apple(_state: str) -> Cells:  # an apple (a counted object) has one look
    a = _blank(ITEM_W, ITEM_H)
    _disc(a, 7, 13, 6.5, 6.5, OBJ)
    rect(a, 6, 8, 2, 7, fx("apple_stem"))
    rect(a, 8, 12, 2, 5, fx("leaf"))
    return a


def _coin(_state: str) -> Cells:  # one look, as the apple
    a = _blank(ITEM_W, ITEM_H)
    _disc(a, 7, 13, 6.5, 6.5, OBJ)
    rect(a, 5, 9, 11, 15, fx("coin_mark"))
    return a


def _flower(state: str) -> Cells:
    a = _blank(ITEM_W, ITEM_H)
    stem = fx("flower_stem")
    if state == "fresh":
        rect(a, 6, 8, 9, 20, stem)
        _disc(a, 7, 6, 5.5, 5.5, OBJ)
        rect(a, 6, 8, 5, 7, fx("flower_centre"))
    else:  # wilted: the stem bends and the head droops
        rect(a, 3, 5, 10, 20, stem)
        rect(a, 5, 8, 8, 11, stem)
        _disc(a, 9, 13, 4.5, 4.5, OBJ)
        rect(a, 8, 11, 12, 15, fx("wilted_centre"))
    return a


#: The drawing of each object kind, given its state.
_DRAW: dict[str, Callable[[str], Cells]] = {
    "umbrella": _umbrella,
    "lantern": _lantern,
    "book": _book,
    "vase": _vase,
    "candle": _candle,
    "box": _box,
    "letter": _letter,
    "apple": _apple,
    "coin": _coin,
    "flower": _flower,
}


def _cells(kind: str, state: str) -> Cells:
    if kind not in _DRAW:
        raise KeyError(f"unknown object kind {kind!r}")
    return _DRAW[kind](state)


@cache
def sprite(kind: str, state: str, color: str) -> tuple[Plane, NDArray[np.bool_]]:
    """The coloured sprite of one kind × state × colour and its opacity mask (cached)."""
    if state not in vocab.OBJECT_KINDS[kind].states:
        raise KeyError(f"{kind} has no state {state!r}")
    cells = _cells(kind, state)
    mask = cells != -1
    out = np.where(cells == OBJ, INDEX[f"obj:{color}"], cells)
    out[~mask] = 0
    return out.astype(np.uint8), mask


def draw_object(
    img: Plane, kind: str, state: str, color: str, count: int | None, cx: int, bottom: int
) -> None:
    """Draw an object centred on column ``cx`` with its bottom row at ``bottom`` (exclusive);
    counted kinds draw ``count`` items side by side."""
    spr, mask = sprite(kind, state, color)
    h, w = spr.shape
    if vocab.OBJECT_KINDS[kind].counted:
        n = count or 0
        for j in range(n):
            x = cx + round((j - (n - 1) / 2) * ITEM_STEP) - w // 2
            paste_sprite(img, spr, mask, x, bottom - h)
    else:
        paste_sprite(img, spr, mask, cx - w // 2, bottom - h)
