"""Objects: components of each object colour, grouped into objects, classified by shape.

A group's kind comes from the one detail colour each kind carries, checked against the
vocabulary's kinds; its state from the shape signature (fragment count, aspect) and state
details (glow, pages, crack, flame, interior, seal, paper, wilted centre); counted kinds
report how many separate items they have. Groups in the ground rows lie on the ground;
others belong to the nearest hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import ndimage

from vsb.evaluators.render import style as S
from vsb.evaluators.render.detected import DetectedObject, DetectedPerson, EntityVocabulary
from vsb.story import vocab

Plane = NDArray[np.uint8]
_EIGHT = np.ones((3, 3), dtype=bool)


@dataclass
class _Comp:
    x0: int
    x1: int
    y0: int
    y1: int
    size: int

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2


@dataclass
class _Group:
    color: str
    comps: list[_Comp]
    holder: int | None = None

    @property
    def box(self) -> tuple[int, int, int, int]:
        return (
            min(c.x0 for c in self.comps),
            max(c.x1 for c in self.comps),
            min(c.y0 for c in self.comps),
            max(c.y1 for c in self.comps),
        )


def _components(img: Plane, idx: int) -> list[_Comp]:
    mask = img == idx
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    r0, c0 = int(rows[0]), int(cols[0])
    crop = mask[r0 : int(rows[-1]) + 1, c0 : int(cols[-1]) + 1]
    labels, n = ndimage.label(crop, structure=_EIGHT)
    sizes = np.bincount(labels.ravel(), minlength=n + 1)
    out = []
    for i, sl in enumerate(ndimage.find_objects(labels), start=1):
        if sl is None or sizes[i] < S.MIN_COMPONENT:
            continue
        ys, xs = sl
        out.append(_Comp(c0 + xs.start, c0 + xs.stop, r0 + ys.start, r0 + ys.stop, int(sizes[i])))
    return out


def _by_gap(color: str, comps: list[_Comp]) -> list[_Group]:
    groups: list[_Group] = []
    right = -(10**9)
    for c in sorted(comps, key=lambda c: c.x0):
        if groups and c.x0 <= right + S.GROUP_GAP:
            groups[-1].comps.append(c)
            right = max(right, c.x1)
        else:
            groups.append(_Group(color, [c]))
            right = c.x1
    return groups


def _groups(
    img: Plane, totals: NDArray[np.intp], people: list[DetectedPerson], voc: EntityVocabulary
) -> list[_Group]:
    out: list[_Group] = []
    hands = [p.x + S.HAND_DX for p in people]
    for color in voc.object_colors:
        idx = S.INDEX[f"obj:{color}"]
        if totals[idx] < S.MIN_COMPONENT:
            continue
        comps = _components(img, idx)
        ground = [c for c in comps if c.y0 >= S.ZONE_TOP]
        out += _by_gap(color, ground)
        held: dict[int, list[_Comp]] = {}
        loose: list[_Comp] = []
        for c in comps:
            if c.y0 >= S.ZONE_TOP:
                continue
            d = [abs(c.cx - h) for h in hands]
            if d and min(d) <= S.HAND_REACH:
                held.setdefault(int(np.argmin(d)), []).append(c)
            else:
                loose.append(c)
        out += [_Group(color, cs, holder=i) for i, cs in sorted(held.items())]
        out += _by_gap(color, loose)
    return out


_RGB = np.array(S.PALETTE, dtype=np.float64)
_DETAILS = [(S.INDEX[f"fx:{name}"], kind) for name, kind in S.DETAIL_KIND.items()]


def _kind_votes(counts: NDArray[np.intp], kinds: tuple[str, ...]) -> dict[str, int]:
    """Detail pixels around a group voting for the kind that carries their colour; a detail
    colour of a kind outside the vocabulary votes for the kind whose detail colour is nearest,
    if within ``MARK_TOLERANCE``."""
    ours = [(i, k) for i, k in _DETAILS if k in kinds]
    votes = dict.fromkeys(dict.fromkeys(k for _, k in ours), 0)
    if not ours:
        return votes
    ref = _RGB[[i for i, _ in ours]]
    for i, k in _DETAILS:
        n = int(counts[i])
        if n == 0:
            continue
        if k in kinds:
            votes[k] += n
            continue
        d = np.sqrt(((ref - _RGB[i]) ** 2).sum(1))
        j = int(np.argmin(d))
        if d[j] <= S.MARK_TOLERANCE:
            votes[ours[j][1]] += n
    return votes


def _classify(
    img: Plane, g: _Group, voc: EntityVocabulary
) -> tuple[str | None, str | None, int | None]:
    x0, x1, y0, y1 = g.box
    m = S.MARK_MARGIN
    h, w = img.shape
    crop = img[max(y0 - m, 0) : min(y1 + m, h), max(x0 - m, 0) : min(x1 + m, w)]
    counts = np.bincount(crop.ravel(), minlength=256)

    def n(mark: str) -> int:
        return int(counts[S.INDEX[f"fx:{mark}"]])

    marks = _kind_votes(counts, voc.object_kinds)
    if not marks or max(marks.values()) == 0:
        return None, None, None
    kind = max(marks, key=lambda k: marks[k])
    frags = len(g.comps)
    height = y1 - y0
    width = x1 - x0
    state: str
    match kind:
        case "umbrella":
            state = "broken" if frags >= 2 else "closed" if height >= 2 * width else "open"
        case "lantern":
            state = "lit" if n("lantern_light") + n("glow") > 0 else "unlit"
        case "book":
            state = "torn" if frags >= 2 else "open" if n("page") > 0 else "closed"
        case "vase":
            state = "broken" if frags >= 2 else "cracked" if n("crack") > 0 else "intact"
        case "candle":
            state = "lit" if n("flame") > 0 else "unlit" if height >= 18 else "burnt"
        case "box":
            state = "open" if n("box_interior") > 0 else "closed"
        case "letter":
            state = "opened" if n("paper") > 0 else "sealed"
        case "flower":
            state = "wilted" if n("wilted_centre") > 0 else "fresh"
        case _:
            state = vocab.OBJECT_KINDS[kind].states[0]
    count = frags if vocab.OBJECT_KINDS[kind].counted else None
    return kind, state, count


def find_objects(
    img: Plane, totals: NDArray[np.intp], people: list[DetectedPerson], voc: EntityVocabulary
) -> list[DetectedObject]:
    """Every object in the image, left to right."""
    out = []
    for g in _groups(img, totals, people, voc):
        kind, state, count = _classify(img, g, voc)
        x0, x1, y0, _y1 = g.box
        out.append(
            DetectedObject(
                kind=kind,
                color=g.color,
                state=state,
                count=count,
                holder=g.holder,
                on_ground=y0 >= S.ZONE_TOP,
                x=(x0 + x1) / 2,
            )
        )
    return sorted(out, key=lambda o: o.x)
