"""Ties in paired comparisons (issue #10 item 14): P(Δ>0), P(Δ=0) and P(Δ<0)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from score_synth import simulated_rows

from vsb.scores.compute import score_run
from vsb.scores.stats.bootstrap import Resampling, signed_shares
from vsb.scores.write import write_scores


def test_signed_shares_count_ties_and_float_noise() -> None:
    dist = np.array([[1e-17], [-3e-17], [0.0], [0.1], [-0.2], [np.nan]])
    gt, eq, lt = signed_shares(dist)
    assert (gt[0], eq[0], lt[0]) == (0.2, 0.6, 0.2)
    gt, eq, lt = signed_shares(np.full((3, 1), np.nan))
    assert np.isnan(gt[0]) and np.isnan(eq[0]) and np.isnan(lt[0])


def test_identical_models_tie_with_certainty(make_run: Callable[..., Path]) -> None:
    p = {("a", "structured_memory"): 0.2, ("c", "structured_memory"): 0.6}
    rows = simulated_rows(np.random.default_rng(0), p, n_stories=8)
    rows += [{**r, "model": "b"} for r in rows if r["model"] == "a"]
    run = make_run(rows, models=["a", "b", "c"])
    rep = score_run(run, settings=Resampling(n_resamples=300, n_draws=20))
    ab = [c for c in rep.comparisons if {c.a_model, c.b_model} == {"a", "b"}]
    assert ab and all(c.diff == 0.0 for c in ab)
    assert all((c.p_greater, c.p_equal, c.p_less) == (0.0, 1.0, 0.0) for c in ab)
    for c in rep.comparisons:
        assert c.p_greater is not None and c.p_equal is not None and c.p_less is not None
        assert c.p_greater + c.p_equal + c.p_less == pytest.approx(1.0)
    ac = next(
        c for c in rep.comparisons if (c.a_model, c.b_model, c.metric) == ("a", "c", "global")
    )
    assert ac.p_greater == 1.0 and ac.p_equal == 0.0 and ac.p_less == 0.0
    write_scores(run, rep)
    csv = pd.read_csv(run / "scores" / "comparisons.csv")
    assert {"p_greater", "p_equal", "p_less"} <= set(csv.columns)
    assert (csv[csv["diff"] == 0].p_equal == 1.0).all()
