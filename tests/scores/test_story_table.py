"""Per-run pass rates: known answers on hand-built rows."""

from __future__ import annotations

import math

import numpy as np
from score_synth import req_row

from vsb.scores.inputs import RequirementRows
from vsb.scores.table import ADHERENCE, BASE_METRICS, COHERENCE, build_story_table
from vsb.story.models import DIMENSIONS


def _rows(*rows: dict) -> RequirementRows:
    out = RequirementRows()
    for r in rows:
        out.append(r)
    return out


def test_pass_rates_per_dimension_and_source() -> None:
    rows = _rows(
        req_row("m", "c", "s1", 1, "identity", "prompt", True),
        req_row("m", "c", "s1", 1, "identity", "prompt", False),
        req_row("m", "c", "s1", 2, "identity", "memory", True),
        req_row("m", "c", "s1", 2, "clothing", "memory", False),
        req_row("m", "c", "s2", 1, "clothing", "prompt", True),
    )
    t = build_story_table(rows)
    assert t.models == ("m",) and t.conditions == ("c",) and t.stories == ("s1", "s2")
    v = t.values[0, 0]
    ident, cloth = DIMENSIONS.index("identity"), DIMENSIONS.index("clothing")
    assert v[0, ident] == 2 / 3
    assert v[0, cloth] == 0.0
    assert v[0, ADHERENCE] == 0.5
    assert v[0, COHERENCE] == 0.5
    assert math.isnan(v[1, ident])  # s2 has no identity requirement -> None
    assert v[1, cloth] == 1.0 and v[1, ADHERENCE] == 1.0 and math.isnan(v[1, COHERENCE])
    assert t.n_images[0, 0].tolist() == [2, 1]
    assert t.n_requirements[0, 0].tolist() == [4, 1]
    # story global = mean of the dimensions the run has
    assert np.allclose(t.story_global()[0, 0], [(2 / 3 + 0.0) / 2, 1.0])
    assert len(BASE_METRICS) == 13


def test_order_follows_manifest_then_canonical() -> None:
    rows = _rows(
        req_row("zeta", "structured_memory", "s", 1, "identity", "prompt", True),
        req_row("alpha", "independent", "s", 1, "identity", "prompt", True),
        req_row("beta", "custom", "s", 1, "identity", "prompt", True),
    )
    t = build_story_table(rows, model_order=["zeta"])
    assert t.models == ("zeta", "alpha", "beta")
    assert t.conditions == ("independent", "structured_memory", "custom")
    assert not t.has_row(0, 0) and t.has_row(0, 1)
