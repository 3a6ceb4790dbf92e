"""Small static SVG plots (no dependency): CI error bars, a scatter, a heatmap.

Every text that reaches the SVG goes through ``markupsafe.escape``; the returned ``Markup``
is therefore safe to inline in an autoescaped template.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

#: Colour-blind-safe categorical palette (Okabe-Ito), one colour per model.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#f0e442", "#000")
FONT = "font-family:system-ui,sans-serif"


def _n(x: float) -> str:
    """A coordinate with at most 1 decimal (stable bytes)."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _short(label: str, limit: int = 26) -> str:
    """A label cut to ``limit`` characters (the full text stays in a <title>)."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


#: Width of one character of 12 px text, on the safe side (bold and wide glyphs included):
#: labels are laid out with it so that none runs past the plot or into another.
CHAR_W = 7.2


def _text_w(text: str, bold: bool = False) -> float:
    return len(text) * (CHAR_W + 0.8 * bold)


def _title(title: str, x: float, avail: float) -> tuple[str, float]:
    """The chart's title, wrapped to ``avail`` px (never cut); returns its markup and the
    y below its last line."""
    lines: list[str] = []
    per_line = max(int(avail // (CHAR_W + 0.8)), 1)
    words = [w[i : i + per_line] for w in title.split() for i in range(0, len(w), per_line)]
    for word in words:  # a word longer than a line is cut into pieces, never cut off
        if lines and _text_w(lines[-1] + " " + word, bold=True) <= avail:
            lines[-1] += " " + word
        else:
            lines.append(word)
    spans = "".join(
        f'<tspan x="{_n(x)}" dy="{0 if i == 0 else 15}">{escape(line)}</tspan>'
        for i, line in enumerate(lines or [""])
    )
    text = f'<text class="title" x="{_n(x)}" y="16" font-weight="600">{spans}</text>'
    return text, 16 + 15 * (max(len(lines), 1) - 1) + 8


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in SVG units (a label's or a marker's extent)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def hits(self, o: Box, gap: float = 2.0) -> bool:
        return not (
            self.x1 + gap <= o.x0
            or o.x1 + gap <= self.x0
            or self.y1 + gap <= o.y0
            or o.y1 + gap <= self.y0
        )


def place_labels(
    anchors: Sequence[tuple[float, float]], widths: Sequence[float], area: Box, r: float = 6.0
) -> list[Box]:
    """A box for each label (height 14) near its anchor, inside ``area``, overlapping no
    other label and no marker (radius ``r`` around every anchor): the free spot closest to
    the anchor on a 4 px grid, tried in anchor order (deterministic)."""
    h = 14.0
    markers = [Box(x - r, y - r, x + r, y + r) for x, y in anchors]
    placed: list[Box] = []
    for (ax, ay), w in zip(anchors, widths, strict=True):
        xs = [area.x0 + 4.0 * i for i in range(int((area.x1 - area.x0 - w) // 4) + 1)]
        ys = [area.y0 + 4.0 * i for i in range(int((area.y1 - area.y0 - h) // 4) + 1)]
        spots = sorted(
            (math.hypot(max(x - ax, 0.0, ax - x - w), max(y - ay, 0.0, ay - y - h)), x, y)
            for x in xs
            for y in ys
        )
        others = [*placed, *markers]
        found = None
        for _, x, y in spots:
            b = Box(x, y, x + w, y + h)
            if not any(b.hits(o) for o in others):
                found = b
                break
        if found is None:  # no free spot: the anchor's right, clamped to the area
            x0 = min(max(ax + r + 3, area.x0), area.x1 - w)
            found = Box(x0, ay - h / 2, x0 + w, ay + h / 2)
        placed.append(found)
    return placed


def _svg(width: float, height: float, title: str, body: list[str]) -> Markup:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" height="{_n(height)}" '
        f'aria-label="{escape(title)}" style="{FONT};font-size:12px">'
        f"<title>{escape(title)}</title>"
    )
    return Markup(head + "".join(body) + "</svg>")


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    step = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(step)) if step > 0 else 0.1
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= step)
    first = math.ceil(lo / step - 1e-9) * step
    out, t = [], first
    while t <= hi + 1e-9:
        out.append(round(t, 10))
        t += step
    return out


def _range(values: Sequence[float], pad: float = 0.05) -> tuple[float, float]:
    lo, hi = min(values, default=0.0), max(values, default=1.0)
    span = max(hi - lo, 0.1)
    return max(0.0, lo - pad * span - 0.02), min(1.0, hi + pad * span + 0.02)


@dataclass(frozen=True)
class Interval:
    """One row of a CI chart."""

    label: str
    score: float
    low: float | None
    high: float | None


def ci_chart(rows: Sequence[Interval], title: str, axis: str = "score") -> Markup:
    """Horizontal dot-and-whisker chart: one row per label (the label and its figures above
    the whisker, so the chart stays narrow enough for a phone)."""
    left, plot_w, right, row_h = 14.0, 340.0, 18.0, 36.0
    width = left + plot_w + right
    head, top = _title(title, left, width - left - 4)
    height = top + row_h * max(len(rows), 1) + 40
    vals = [v for r in rows for v in (r.score, r.low, r.high) if v is not None]
    lo, hi = _range(vals)
    inset = 7.0  # a point at the end of the axis stays whole inside the plot

    def x(v: float) -> float:
        return left + inset + (v - lo) / (hi - lo) * (plot_w - 2 * inset)

    body = [head]
    bottom = top + row_h * len(rows)
    for t in _ticks(lo, hi):
        body.append(
            f'<line x1="{_n(x(t))}" x2="{_n(x(t))}" y1="{_n(top)}" y2="{_n(bottom)}" '
            f'stroke="#ddd"/><text x="{_n(x(t))}" y="{_n(bottom + 16)}" text-anchor="middle" '
            f'fill="#555">{t:g}</text>'
        )
    body.append(
        f'<text x="{_n(left + plot_w / 2)}" y="{_n(bottom + 34)}" text-anchor="middle" '
        f'fill="#555">{escape(axis)}</text>'
    )
    for i, r in enumerate(rows):
        cy = top + row_h * i + 25
        color = PALETTE[i % len(PALETTE)]
        ci = "" if r.low is None or r.high is None else f" [{r.low:.3f}, {r.high:.3f}]"
        figures = f"{r.score:.3f}{ci}"
        label = _short(r.label, max(8, int((plot_w - _text_w(figures) - 8) / CHAR_W)))
        body.append(
            f'<text class="label" x="{_n(left)}" y="{_n(cy - 11)}">{escape(label)}'
            f'<tspan fill="#555"> {figures}</tspan><title>{escape(r.label)}</title></text>'
        )
        if r.low is not None and r.high is not None:
            body.append(
                f'<line class="ci" x1="{_n(x(r.low))}" x2="{_n(x(r.high))}" y1="{_n(cy)}" '
                f'y2="{_n(cy)}" stroke="{color}" stroke-width="2"/>'
                f'<line x1="{_n(x(r.low))}" x2="{_n(x(r.low))}" y1="{_n(cy - 5)}" '
                f'y2="{_n(cy + 5)}" stroke="{color}" stroke-width="2"/>'
                f'<line x1="{_n(x(r.high))}" x2="{_n(x(r.high))}" y1="{_n(cy - 5)}" '
                f'y2="{_n(cy + 5)}" stroke="{color}" stroke-width="2"/>'
            )
        body.append(
            f'<circle class="point" cx="{_n(x(r.score))}" cy="{_n(cy)}" r="5" fill="{color}">'
            f"<title>{escape(r.label)}: {figures}</title></circle>"
        )
    return _svg(width, height, title, body)


@dataclass(frozen=True)
class Point:
    """One model in the adherence-vs-coherence scatter."""

    label: str
    x: float
    y: float


def _framed(left: float, top: float, w: float, h: float) -> list[str]:
    """The frame of a chart's plot area."""
    return [
        f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(w)}" height="{_n(h)}" '
        f'fill="none" stroke="#999"/>'
    ]


def _y_grid(
    ticks: Iterable[float], left: float, w: float, py: Callable[[float], float]
) -> list[str]:
    """A horizontal grid line and a label at each tick of the y axis."""
    return [
        f'<line x1="{_n(left)}" x2="{_n(left + w)}" y1="{_n(py(t))}" y2="{_n(py(t))}" '
        f'stroke="#eee"/><text x="{_n(left - 6)}" y="{_n(py(t) + 4)}" text-anchor="end" '
        f'fill="#555">{t:g}</text>'
        for t in ticks
    ]


def _axis_titles(left: float, top: float, w: float, h: float, x_axis: str, y_axis: str) -> str:
    """The x axis title under the plot area and the y axis title, turned, left of it."""
    return (
        f'<text x="{_n(left + w / 2)}" y="{_n(top + h + 36)}" text-anchor="middle" '
        f'fill="#555">{escape(x_axis)}</text>'
        f'<text transform="translate(14 {_n(top + h / 2)}) rotate(-90)" '
        f'text-anchor="middle" fill="#555">{escape(y_axis)}</text>'
    )


def scatter(points: Sequence[Point], title: str, x_axis: str, y_axis: str) -> Markup:
    """A scatter whose points carry their labels (colours match ``ci_chart`` row order):
    each label sits in the free spot nearest its point, overlapping no other label or point,
    with a leader line when it had to move away; points at the axis ends stay whole."""
    left, size, right, inset, r = 56.0, 300.0, 14.0, 9.0, 4.0
    width = left + size + right
    head, top = _title(title, 4, width - 8)
    xlo, xhi = _range([p.x for p in points])
    ylo, yhi = _range([p.y for p in points])

    def px(v: float) -> float:
        return left + inset + (v - xlo) / (xhi - xlo) * (size - 2 * inset)

    def py(v: float) -> float:
        return top + size - inset - (v - ylo) / (yhi - ylo) * (size - 2 * inset)

    body = [head, *_framed(left, top, size, size)]
    for t in _ticks(xlo, xhi):
        body.append(
            f'<line x1="{_n(px(t))}" x2="{_n(px(t))}" y1="{_n(top)}" y2="{_n(top + size)}" '
            f'stroke="#eee"/><text x="{_n(px(t))}" y="{_n(top + size + 16)}" '
            f'text-anchor="middle" fill="#555">{t:g}</text>'
        )
    body += _y_grid(_ticks(ylo, yhi), left, size, py)
    body.append(_axis_titles(left, top, size, size, x_axis, y_axis))
    anchors = [(px(p.x), py(p.y)) for p in points]
    names = [_short(p.label) for p in points]
    area = Box(left + 2, top + 2, left + size - 2, top + size - 2)
    boxes = place_labels(anchors, [_text_w(n) for n in names], area, r + 1)
    marks, labels = [], []
    for i, (p, (ax, ay), name, b) in enumerate(zip(points, anchors, names, boxes, strict=True)):
        color = PALETTE[i % len(PALETTE)]
        nx, ny = min(max(ax, b.x0), b.x1), min(max(ay, b.y0), b.y1)
        if math.hypot(nx - ax, ny - ay) > r + 4:
            body.append(
                f'<line class="leader" x1="{_n(ax)}" y1="{_n(ay)}" x2="{_n(nx)}" y2="{_n(ny)}" '
                f'stroke="{color}" stroke-width="1"/>'
            )
        marks.append(  # rings: two models a few pixels apart stay two visible marks
            f'<circle class="point" cx="{_n(ax)}" cy="{_n(ay)}" r="{_n(r)}" fill="#fff" '
            f'fill-opacity="0.3" stroke="{color}" stroke-width="2"><title>{escape(p.label)}: '
            f"{p.x:.3f}, {p.y:.3f}</title></circle>"
        )
        labels.append(
            f'<text class="label" x="{_n(b.x0)}" y="{_n(b.y1 - 3)}" fill="{_ink(color)}">'
            f"{escape(name)}<title>{escape(p.label)}: {p.x:.3f}, {p.y:.3f}</title></text>"
        )
    return _svg(width, top + size + 48, title, body + marks + labels)


def _ink(color: str) -> str:
    """A palette colour darkened enough for text on white (WCAG AA, 4.5:1)."""
    full = color if len(color) == 7 else "#" + "".join(c * 2 for c in color[1:])
    r, g, b = (int(full[i : i + 2], 16) for i in (1, 3, 5))
    return f"#{r * 45 // 100:02x}{g * 45 // 100:02x}{b * 45 // 100:02x}"


def _heat(v: float, lo: float, hi: float) -> str:
    """White (low) to deep blue (high)."""
    t = 0.0 if hi <= lo else (v - lo) / (hi - lo)
    r, g, b = (
        round(247 + (8 - 247) * t),
        round(251 + (81 - 251) * t),
        round(255 + (156 - 255) * t),
    )
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    values: Sequence[Sequence[float | None]],
    title: str,
) -> Markup:
    """A rows × cols heatmap with the value printed in each cell (— where missing)."""
    cell_w, cell_h = 48.0, 28.0
    heads = [_short(c, 20) for c in cols]
    label_w = min(190.0, max((_text_w(_short(r)) for r in rows), default=40.0) + 12)
    rise = max((_text_w(c) * 0.71 for c in heads), default=0.0)  # a -45° column label's extent
    tail = max(10.0, _text_w(heads[-1]) * 0.71 - cell_w / 2 + 8) if cols else 10.0
    width = label_w + cell_w * len(cols) + tail
    head, title_h = _title(title, 4, width - 8)
    head_h = title_h + rise + 8
    flat = [v for row in values for v in row if v is not None]
    lo, hi = min(flat, default=0.0), max(flat, default=1.0)
    body = [head]
    for j, c in enumerate(cols):
        cx = label_w + cell_w * j + cell_w / 2
        body.append(
            f'<text transform="translate({_n(cx + 4)} {_n(head_h - 6)}) rotate(-45)">'
            f"{escape(heads[j])}<title>{escape(c)}</title></text>"
        )
    for i, r in enumerate(rows):
        y = head_h + cell_h * i
        body.append(
            f'<text x="{_n(label_w - 8)}" y="{_n(y + cell_h / 2 + 4)}" text-anchor="end">'
            f"{escape(_short(r))}<title>{escape(r)}</title></text>"
        )
        for j, v in enumerate(values[i]):
            x = label_w + cell_w * j
            fill = "#f3f3f3" if v is None else _heat(v, lo, hi)
            ink = "#fff" if v is not None and hi > lo and (v - lo) / (hi - lo) > 0.55 else "#222"
            text = "—" if v is None else f"{v:.3f}"
            body.append(
                f'<rect class="cell" x="{_n(x)}" y="{_n(y)}" width="{_n(cell_w - 2)}" '
                f'height="{_n(cell_h - 2)}" fill="{fill}"><title>{escape(r)} · {escape(cols[j])}'
                f': {text}</title></rect><text x="{_n(x + cell_w / 2 - 1)}" '
                f'y="{_n(y + cell_h / 2 + 4)}" text-anchor="middle" fill="{ink}">{text}</text>'
            )
    return _svg(width, head_h + cell_h * len(rows) + 10, title, body)


@dataclass(frozen=True)
class XY:
    """One point of a line, with its CI (None: unknown)."""

    x: int
    y: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Series:
    """One labelled line."""

    label: str
    points: Sequence[XY]


def line_chart(series: Sequence[Series], title: str, x_axis: str, y_axis: str) -> Markup:
    """Lines over integer x positions with 95% CI whiskers (dodged so they do not overlap)
    and a legend; colours follow ``PALETTE`` in series order."""
    left, plot_w, plot_h, right = 56.0, 320.0, 240.0, 14.0
    width = left + plot_w + right
    head, top = _title(title, 4, width - 8)
    xs = sorted({p.x for s in series for p in s.points})
    vals = [v for s in series for p in s.points for v in (p.y, p.low, p.high) if v is not None]
    lo, hi = _range(vals)
    step = plot_w / max(len(xs), 1)

    def px(x: int, i: int) -> float:
        dodge = (i - (len(series) - 1) / 2) * min(6.0, step / (len(series) + 1))
        return left + step * (xs.index(x) + 0.5) + dodge

    def py(v: float) -> float:  # 6 px inset: a point at the axis end stays whole
        return top + plot_h - 6 - (min(max(v, lo), hi) - lo) / (hi - lo) * (plot_h - 12)

    body = [head, *_framed(left, top, plot_w, plot_h)]
    body += _y_grid(_ticks(lo, hi), left, plot_w, py)
    for x in xs:
        body.append(
            f'<text x="{_n(left + step * (xs.index(x) + 0.5))}" y="{_n(top + plot_h + 16)}" '
            f'text-anchor="middle" fill="#555">{x}</text>'
        )
    body.append(_axis_titles(left, top, plot_w, plot_h, x_axis, y_axis))
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{_n(px(p.x, i))},{_n(py(p.y))}" for p in s.points)
        body.append(
            f'<polyline class="line" points="{path}" fill="none" stroke="{color}" '
            f'stroke-width="2"/>'
        )
        for p in s.points:
            cx = px(p.x, i)
            ci = ""
            if p.low is not None and p.high is not None:
                ci = f" [{p.low:.3f}, {p.high:.3f}]"
                body.append(
                    f'<line class="ci" x1="{_n(cx)}" x2="{_n(cx)}" y1="{_n(py(p.low))}" '
                    f'y2="{_n(py(p.high))}" stroke="{color}" stroke-width="1.5" '
                    f'stroke-opacity="0.7"/>'
                )
            body.append(
                f'<circle class="point" cx="{_n(cx)}" cy="{_n(py(p.y))}" r="3.5" '
                f'fill="{color}"><title>{escape(s.label)}, {escape(x_axis)} {p.x}: '
                f"{p.y:.3f}{ci}</title></circle>"
            )
        # the legend, under the plot (a phone has no room beside it)
        ly = top + plot_h + 58 + 18 * i
        body.append(
            f'<line x1="{_n(left)}" x2="{_n(left + 16)}" y1="{_n(ly)}" '
            f'y2="{_n(ly)}" stroke="{color}" stroke-width="2"/>'
            f'<text class="label" x="{_n(left + 22)}" y="{_n(ly + 4)}">'
            f"{escape(_short(s.label, int((plot_w - 22) / CHAR_W)))}"
            f"<title>{escape(s.label)}</title></text>"
        )
    return _svg(width, top + plot_h + 50 + 18 * len(series), title, body)
