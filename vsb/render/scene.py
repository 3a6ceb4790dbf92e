"""Compose a scene: background, figures in left-to-right order, objects; encode as PNG."""

from __future__ import annotations

import io
import threading
from collections import OrderedDict

import numpy as np
from PIL import Image

from vsb.render import layout as L
from vsb.render.background import draw_background
from vsb.render.figures import draw_figure, hand, head_top
from vsb.render.objects import draw_object
from vsb.render.palette import PALETTE
from vsb.render.shapes import Plane
from vsb.story.models import SceneState

_PALETTE_BYTES = bytes(v for rgb in PALETTE for v in rgb)


def people_drawn(state: SceneState) -> list[str]:
    """Present characters left to right: ``order`` first, then any present but unordered."""
    shown = [n for n in state.order if n in state.characters and state.characters[n].present]
    extra = [n for n, c in sorted(state.characters.items()) if c.present and n not in shown]
    return list(dict.fromkeys(shown + extra))


def render_indices(state: SceneState, *, seed: int) -> Plane:
    """Draw ``state`` into a 512×512 array of palette indices (``PALETTE``).

    Placement is jittered by ``seed`` (deterministic); any state whose values are in the
    vocabulary is drawn as given, consistent or not."""
    rng = np.random.default_rng(seed)
    img = np.empty((L.H, L.W), dtype=np.uint8)
    draw_background(img, state.location, state.time, state.weather, rng)
    people = people_drawn(state)
    n = len(people)
    jx = rng.integers(-L.JITTER_X, L.JITTER_X + 1, size=max(n, 1))
    jy = rng.integers(-L.JITTER_Y, L.JITTER_Y + 1, size=max(n, 1))
    jo = rng.integers(-L.JITTER_OBJ_X, L.JITTER_OBJ_X + 1, size=max(len(state.objects), 1))
    hands: dict[str, tuple[int, int]] = {}
    for i, (name, x) in enumerate(zip(people, L.figure_centres(n), strict=True)):
        c = state.characters[name]
        cx, y0 = round(x) + int(jx[i]), head_top(c.pose, int(jy[i]))
        draw_figure(img, c, cx, y0)
        hands[name] = hand(c.pose, cx, y0)
    slots = L.object_slots(len(state.objects))
    # sorted, so a story read back from disk (sorted keys) renders like a fresh one
    for j, (kind, o) in enumerate(sorted(state.objects.items())):
        if not state.object_visible(kind) or (o.count is not None and o.count <= 0):
            continue
        if o.holder is not None and o.holder in hands:
            hx, hy = hands[o.holder]
            draw_object(img, kind, o.state, o.color, o.count, hx, hy + L.OBJECT_BOX // 2)
        else:
            cx = round(slots[j]) + int(jo[j])
            draw_object(img, kind, o.state, o.color, o.count, cx, L.ZONE_BASE)
    return img


def encode_png(indices: Plane) -> bytes:
    """An indexed ("P"-mode) PNG of a palette-index array, compress_level=1."""
    h, w = indices.shape
    im = Image.frombytes("P", (w, h), np.ascontiguousarray(indices).tobytes())
    im.putpalette(_PALETTE_BYTES)
    buf = io.BytesIO()
    im.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def render_png(state: SceneState, *, seed: int) -> bytes:
    """``render_indices`` encoded as an indexed PNG.

    Remembered for the last ``PNG_MEMO`` states drawn in this process (keyed by the state's
    JSON and the seed: the drawing is a pure function of both): a simulator draws the same
    state under several conditions (the oracle under all of them; a model that ignores its
    context under every context), and each drawing costs about a millisecond, mostly the PNG
    encoding."""
    key = (state.model_dump_json(), seed)
    with _MEMO_LOCK:  # a run's threads share it
        png = _PNG_MEMO.get(key)
        if png is not None:
            _PNG_MEMO.move_to_end(key)
            return png
    png = encode_png(render_indices(state, seed=seed))
    with _MEMO_LOCK:
        _PNG_MEMO[key] = png
        if len(_PNG_MEMO) > PNG_MEMO:
            _PNG_MEMO.popitem(last=False)
    return png


#: How many drawn states ``render_png`` remembers per process (~6 KiB each).
PNG_MEMO = 512
_PNG_MEMO: OrderedDict[tuple[str, int], bytes] = OrderedDict()
_MEMO_LOCK = threading.Lock()
