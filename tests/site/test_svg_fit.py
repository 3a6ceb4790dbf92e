"""Plots that fit a phone: every chart is drawn at most 400 units wide, so it shrinks to a
390 px screen without shrinking its text below legibility; titles wrap instead of running
off; a scatter's labels never collide with each other or with a point, and a point at the end
of an axis (the oracle at (1, 1)) stays whole inside the frame."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from vsb.site.svg import (
    CHAR_W,
    XY,
    Box,
    Interval,
    Point,
    Series,
    ci_chart,
    line_chart,
    place_labels,
    scatter,
)

#: The default release's structured_memory figures (adherence, memory coherence): amnesiac
#: and drift-low lie 6 px apart, and the oracle sits at (1, 1).
DEFAULT = [
    Point("procedural-oracle", 1.0, 1.0),
    Point("procedural-amnesiac", 0.983, 0.962),
    Point("procedural-drift-low", 0.977, 0.959),
    Point("procedural-drift-mid", 0.972, 0.916),
    Point("procedural-sloppy", 0.708, 0.572),
]


def _width(svg: str) -> float:
    m = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    assert m
    return float(m.group(1))


def _labels(svg: str) -> list[Box]:
    """Each label's box, as the chart laid it out (x, baseline y, text length)."""
    out = []
    for x, y, text in re.findall(
        r'<text class="label" x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)', svg
    ):
        out.append(Box(float(x), float(y) - 11, float(x) + len(text) * CHAR_W, float(y) + 3))
    return out


def _points(svg: str) -> list[tuple[float, float, float]]:
    return [
        (float(x), float(y), float(r))
        for x, y, r in re.findall(r'class="point" cx="([\d.]+)" cy="([\d.]+)" r="([\d.]+)"', svg)
    ]


def test_the_default_scatter_labels_every_point_without_a_collision() -> None:
    svg = str(scatter(DEFAULT, "Adherence vs coherence, structured_memory", "x", "y"))
    assert _width(svg) <= 400
    labels, points = _labels(svg), _points(svg)
    assert len(labels) == len(points) == 5
    for i, a in enumerate(labels):
        assert a.x0 >= 0 and a.x1 <= _width(svg), a
        for b in labels[i + 1 :]:
            assert not a.hits(b, gap=0), (a, b)
        for x, y, r in points:
            assert not a.hits(Box(x - r, y - r, x + r, y + r), gap=0), (a, x, y)
    frame = re.search(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    assert frame
    fx, fy, fw, fh = map(float, frame.groups())
    for x, y, r in points:  # whole inside the frame, the oracle's (1, 1) included
        assert fx + r <= x <= fx + fw - r and fy + r <= y <= fy + fh - r, (x, y)
    # the two nearest models are two marks: rings, not filled discs hiding each other
    (ax, ay, _), (bx, by, _) = points[1], points[2]
    assert (ax, ay) != (bx, by) and 'fill-opacity="0.3"' in svg


@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.text("abcdefgh-", max_size=26)),
        min_size=1,
        max_size=8,
    )
)
@settings(max_examples=40, deadline=None)
def test_scatter_labels_stay_inside_and_apart_for_any_points(
    pts: list[tuple[float, float, str]],
) -> None:
    svg = str(scatter([Point(f"m{i}{n}", x, y) for i, (x, y, n) in enumerate(pts)], "t", "x", "y"))
    labels = _labels(svg)
    for i, a in enumerate(labels):
        assert a.x0 >= 0 and a.x1 <= _width(svg)
        assert not any(a.hits(b, gap=0) for b in labels[i + 1 :])


def test_place_labels_moves_a_label_off_a_crowded_spot() -> None:
    area = Box(0, 0, 300, 300)
    boxes = place_labels([(150, 150), (152, 151), (151, 149)], [120, 120, 120], area)
    for i, a in enumerate(boxes):
        assert area.x0 <= a.x0 and a.x1 <= area.x1 and area.y0 <= a.y0 and a.y1 <= area.y1
        assert not any(a.hits(b, gap=0) for b in boxes[i + 1 :])


def test_ci_chart_and_line_chart_fit_a_phone_and_wrap_their_title() -> None:
    long = "Global score by condition (95% CI): procedural-drift-mid-with-a-long-name"
    ci = str(ci_chart([Interval("procedural-drift-mid", 0.9, 0.85, 1.0)] * 8, long))
    lines = str(
        line_chart(
            [Series(f"m{i}", [XY(k, 0.9, 0.8, 1.0) for k in range(2, 9)]) for i in range(5)],
            "Memory coherence by scene position, structured_memory (95% CI)",
            "scene position",
            "memory coherence",
        )
    )
    for svg in (ci, lines):
        width = _width(svg)
        assert width <= 400
        title = re.search(r'<text class="title"[^>]*>(.*?)</text>', svg)
        assert title
        spans = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", title.group(1))
        assert len(spans) >= 2  # wrapped, not cut
        assert all(4 + len(s) * (CHAR_W + 0.8) <= width for s in spans), spans
        for a in _labels(svg):
            assert a.x1 <= width, a


def test_a_title_with_a_word_longer_than_the_chart_wraps_inside_it() -> None:
    svg = str(ci_chart([Interval("m", 0.5, 0.4, 0.6)], "Global score: " + "x" * 120))
    title = re.search(r'<text class="title"[^>]*>(.*?)</text>', svg)
    assert title
    spans = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", title.group(1))
    assert "".join(spans).replace(" ", "") == "Globalscore:" + "x" * 120
    assert all(4 + len(s) * (CHAR_W + 0.8) <= _width(svg) for s in spans), spans


def test_the_ablation_heat_map_is_drawn_narrow_enough_for_a_phone() -> None:
    """Metrics down, removed groups across: at most 400 units wide, so on a 390 px screen its
    11 px text stays legible (drawn 750 units wide, it shrank to half on a phone), and no row
    label runs off its left edge."""
    from vsb.site.analysis import ABLATION_METRICS, Cell, ablation_plot

    groups = ("identity", "clothing", "objects", "environment")
    grid = {g: {m: Cell(0.05, -0.01, 0.1, 40) for m in ABLATION_METRICS} for g in groups}
    svg = str(ablation_plot("procedural-drift-mid", grid))
    assert _width(svg) <= 400
    rows = re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end"[^>]*>([^<]+)</text>', svg)
    assert len(rows) == len(ABLATION_METRICS)
    assert all(float(x) - len(text) * CHAR_W * 11 / 12 >= 0 for x, text in rows), rows
    assert len(re.findall(r"rotate\(-45\)\">no ", svg)) == len(groups)
    assert svg.count("<rect") == len(groups) * len(ABLATION_METRICS)
