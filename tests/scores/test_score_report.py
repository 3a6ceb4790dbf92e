"""score_run end to end on synthetic runs: known answers, determinism, files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from score_synth import req_row, simulated_rows

from vsb.scores.compare import compare_run
from vsb.scores.compute import score_run
from vsb.scores.models import ScoresReport
from vsb.scores.stats.bootstrap import Resampling
from vsb.scores.write import write_scores
from vsb.story.models import DIMENSIONS

P_FAIL = {
    ("good", "independent"): 0.02,
    ("good", "structured_memory"): 0.0,
    ("bad", "independent"): 0.5,
    ("bad", "structured_memory"): 0.3,
    ("mid", "independent"): 0.2,
    ("mid", "structured_memory"): 0.1,
}


@pytest.fixture
def run(make_run: Callable[..., Path]) -> Path:
    rows = simulated_rows(np.random.default_rng(0), P_FAIL)
    return make_run(rows, models=["good", "mid", "bad"])


def test_report_shape_and_known_answers(run: Path) -> None:
    rep = score_run(run, settings=Resampling(seed=1, n_resamples=500))
    assert rep.models == ["good", "mid", "bad"]
    assert rep.conditions == ["independent", "structured_memory"]
    assert len(rep.scores) == 6 and len(rep.stories) == 6 * 12
    best = next(r for r in rep.scores if r.model == "good" and r.condition == "structured_memory")
    assert best.rank == 1
    for d in DIMENSIONS:
        e = best.dimensions[d]
        assert e is not None and e.score == e.ci_low == e.ci_high == 1.0
    assert best.dimensions["causal"].n_stories == 6  # type: ignore[union-attr]
    assert best.global_score is not None and best.global_score.score == 1.0
    sm = [r.model for r in rep.scores if r.condition == "structured_memory"]
    assert sm == ["good", "mid", "bad"]
    # global = unweighted mean of the ten dimension scores
    for r in rep.scores:
        dims = [e.score for e in r.dimensions.values() if e is not None]
        assert r.global_score is not None
        assert r.global_score.score == pytest.approx(np.mean(dims))
        for e in [*r.dimensions.values(), r.adherence, r.coherence, r.global_score]:
            assert e is not None and e.ci_low <= e.score + 1e-12 <= e.ci_high + 2e-12  # type: ignore[operator]
    # story rows: causal is None on odd stories
    st = next(s for s in rep.stories if s.story_id == "st01")
    assert st.dimensions["causal"] is None and st.n_images == 3


def test_comparisons_pairs_and_consistency(run: Path) -> None:
    rep = score_run(run, settings=Resampling(seed=1, n_resamples=500))
    kinds = {(c.kind, c.a_model, c.a_condition, c.b_model, c.b_condition) for c in rep.comparisons}
    assert len(kinds) == 3 * 2 + 3  # model pairs per condition + condition pairs per model
    cond_pairs = {(k[2], k[4]) for k in kinds if k[0] == "condition"}
    assert cond_pairs == {("structured_memory", "independent")}  # primary is always side a
    g = next(
        c
        for c in rep.comparisons
        if c.metric == "coherence" and c.a_model == "good" and c.b_model == "bad"
        and c.a_condition == "structured_memory"
    )  # fmt: skip
    assert g.diff > 0.2 and g.p_greater == 1.0 and g.win_rate == 1.0 and g.n_stories == 12
    assert g.ci_low is not None and g.ci_low > 0
    # compare_run uses the same counts as score_run: identical numbers
    direct = compare_run(
        run, "good@structured_memory", "bad", settings=Resampling(seed=1, n_resamples=500)
    )
    same = next(c for c in direct if c.metric == "coherence")
    assert same == g
    assert [c.metric for c in direct][-4:] == [
        "adherence", "coherence", "conditional_coherence", "global",
    ]  # fmt: skip


def test_deterministic_in_seed(run: Path) -> None:
    a = score_run(run, settings=Resampling(seed=4, n_resamples=300)).model_dump()
    b = score_run(run, settings=Resampling(seed=4, n_resamples=300)).model_dump()
    c = score_run(run, settings=Resampling(seed=5, n_resamples=300)).model_dump()
    assert a == b
    assert a["scores"] != c["scores"]


def test_written_files_round_trip(run: Path) -> None:
    rep = score_run(run, settings=Resampling(seed=0, n_resamples=200))
    paths = write_scores(run, rep)
    assert {p.name for p in paths} == {
        "scores.json", "model_scores.csv", "story_scores.csv", "comparisons.csv",
        "rank_stability.csv", "judge_swap.csv", "not_applicable.csv", "signals.csv",
        "horizon.csv",
    }  # fmt: skip
    back = ScoresReport.model_validate(json.loads((run / "scores" / "scores.json").read_text()))
    assert back == rep
    ms = pd.read_csv(run / "scores" / "model_scores.csv")
    assert len(ms) == 6 * 14 and set(ms.evaluator) == {"rules"}
    assert set(ms.metric_kind) == {"dimension", "summary"}
    row = ms[(ms.model == "good") & (ms.condition == "structured_memory") & (ms.metric == "global")]
    assert row.score.iloc[0] == 1.0
    ss = pd.read_csv(run / "scores" / "story_scores.csv")
    assert len(ss) == 72 and ss.dim_causal.isna().sum() == 36
    cmp = pd.read_csv(run / "scores" / "comparisons.csv")
    assert len(cmp) == len(rep.comparisons)
    rs = pd.read_csv(run / "scores" / "rank_stability.csv")
    assert len(rs) == 6 and rs.primary.sum() == 3
    assert rep.run.requirements_sha256 and rep.run.suite == "suite"


def test_missing_story_for_one_model(make_run: Callable[..., Path]) -> None:
    rows = [
        req_row("a", "c", "s1", 1, "identity", "prompt", True),
        req_row("a", "c", "s2", 1, "identity", "prompt", False),
        req_row("b", "c", "s1", 1, "identity", "prompt", False),
    ]
    rep = score_run(make_run(rows), settings=Resampling(n_resamples=100))
    b = next(r for r in rep.scores if r.model == "b")
    assert b.n_stories == 1 and b.dimensions["identity"].n_stories == 1  # type: ignore[union-attr]
    c = next(c for c in rep.comparisons if c.metric == "identity")
    assert c.n_stories == 1 and c.diff == 1.0
