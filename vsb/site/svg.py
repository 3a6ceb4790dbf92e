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
    """Horizontal dot-and-whisker chart: one row per label, score with its CI."""
    label_w, plot_w, row_h, top = 190.0, 420.0, 26.0, 30.0
    height = top + row_h * max(len(rows), 1) + 40
    vals = [v for r in rows for v in (r.score, r.low, r.high) if v is not None]
    lo, hi = _range(vals)

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    body = [f'<text x="{_n(label_w)}" y="18" font-weight="600">{escape(title)}</text>']
    bottom = top + row_h * len(rows)
    for t in _ticks(lo, hi):
        body.append(
            f'<line x1="{_n(x(t))}" x2="{_n(x(t))}" y1="{_n(top)}" y2="{_n(bottom)}" '
            f'stroke="#ddd"/><text x="{_n(x(t))}" y="{_n(bottom + 16)}" text-anchor="middle" '
            f'fill="#555">{t:g}</text>'
        )
    body.append(
        f'<text x="{_n(label_w + plot_w / 2)}" y="{_n(bottom + 34)}" text-anchor="middle" '
        f'fill="#555">{escape(axis)}</text>'
    )
    for i, r in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        color = PALETTE[i % len(PALETTE)]
        body.append(
            f'<text x="{_n(label_w - 8)}" y="{_n(cy + 4)}" text-anchor="end">'
            f"{escape(_short(r.label))}<title>{escape(r.label)}</title></text>"
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
        ci = "" if r.low is None or r.high is None else f" [{r.low:.3f}, {r.high:.3f}]"
        body.append(
            f'<circle cx="{_n(x(r.score))}" cy="{_n(cy)}" r="5" fill="{color}">'
            f"<title>{escape(r.label)}: {r.score:.3f}{ci}</title></circle>"
        )
    return _svg(label_w + plot_w + 30, height, title, body)


@dataclass(frozen=True)
class Point:
    """One model in the adherence-vs-coherence scatter."""

    label: str
    x: float
    y: float


def _framed(title: str, left: float, top: float, w: float, h: float) -> list[str]:
    """A chart's title and the frame of its plot area, the first parts of its body."""
    return [
        f'<text x="{_n(left)}" y="18" font-weight="600">{escape(title)}</text>',
        f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(w)}" height="{_n(h)}" '
        f'fill="none" stroke="#999"/>',
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
    """A labelled scatter with a legend (colours match ``ci_chart`` row order)."""
    left, top, size, legend_w = 56.0, 30.0, 320.0, 220.0
    xlo, xhi = _range([p.x for p in points])
    ylo, yhi = _range([p.y for p in points])

    def px(v: float) -> float:
        return left + (v - xlo) / (xhi - xlo) * size

    def py(v: float) -> float:
        return top + size - (v - ylo) / (yhi - ylo) * size

    body = _framed(title, left, top, size, size)
    for t in _ticks(xlo, xhi):
        body.append(
            f'<line x1="{_n(px(t))}" x2="{_n(px(t))}" y1="{_n(top)}" y2="{_n(top + size)}" '
            f'stroke="#eee"/><text x="{_n(px(t))}" y="{_n(top + size + 16)}" '
            f'text-anchor="middle" fill="#555">{t:g}</text>'
        )
    body += _y_grid(_ticks(ylo, yhi), left, size, py)
    body.append(_axis_titles(left, top, size, size, x_axis, y_axis))
    for i, p in enumerate(points):
        color = PALETTE[i % len(PALETTE)]
        ly = top + 10 + 20 * i
        body.append(
            f'<circle class="point" cx="{_n(px(p.x))}" cy="{_n(py(p.y))}" r="6" '
            f'fill="{color}" fill-opacity="0.85"><title>{escape(p.label)}: '
            f"{p.x:.3f}, {p.y:.3f}</title></circle>"
            f'<circle cx="{_n(left + size + 24)}" cy="{_n(ly)}" r="5" fill="{color}"/>'
            f'<text x="{_n(left + size + 34)}" y="{_n(ly + 4)}">{escape(_short(p.label))}'
            f"<title>{escape(p.label)}</title></text>"
        )
    return _svg(left + size + legend_w, top + size + 48, title, body)


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
    label_w, cell_w, cell_h, head_h = 190.0, 64.0, 28.0, 110.0
    flat = [v for row in values for v in row if v is not None]
    lo, hi = min(flat, default=0.0), max(flat, default=1.0)
    body = [f'<text x="4" y="18" font-weight="600">{escape(title)}</text>']
    for j, c in enumerate(cols):
        cx = label_w + cell_w * j + cell_w / 2
        body.append(
            f'<text transform="translate({_n(cx + 4)} {_n(head_h - 6)}) rotate(-45)">'
            f"{escape(c)}</text>"
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
    return _svg(label_w + cell_w * len(cols) + 110, head_h + cell_h * len(rows) + 10, title, body)


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
    left, top, plot_w, plot_h, legend_w = 56.0, 30.0, 420.0, 260.0, 220.0
    xs = sorted({p.x for s in series for p in s.points})
    vals = [v for s in series for p in s.points for v in (p.y, p.low, p.high) if v is not None]
    lo, hi = _range(vals)
    step = plot_w / max(len(xs), 1)

    def px(x: int, i: int) -> float:
        dodge = (i - (len(series) - 1) / 2) * min(6.0, step / (len(series) + 1))
        return left + step * (xs.index(x) + 0.5) + dodge

    def py(v: float) -> float:
        return top + plot_h - (min(max(v, lo), hi) - lo) / (hi - lo) * plot_h

    body = _framed(title, left, top, plot_w, plot_h)
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
        ly = top + 10 + 20 * i
        body.append(
            f'<line x1="{_n(left + plot_w + 14)}" x2="{_n(left + plot_w + 30)}" y1="{_n(ly)}" '
            f'y2="{_n(ly)}" stroke="{color}" stroke-width="2"/>'
            f'<text x="{_n(left + plot_w + 36)}" y="{_n(ly + 4)}">{escape(_short(s.label))}'
            f"<title>{escape(s.label)}</title></text>"
        )
    return _svg(left + plot_w + legend_w, top + plot_h + 48, title, body)
