"""Honest ranks, statistical power and the long-horizon view (issue 14, items 1, 2 and 8),
checked against independent computations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from score_synth import req_row, simulated_rows

from vsb.cli.main import main
from vsb.scores.compute import load_scoring_input, score_run
from vsb.scores.horizon import StoryInfo, horizon
from vsb.scores.models import ScoresReport
from vsb.scores.stats.aggregate import bootstrap_se
from vsb.scores.stats.bootstrap import Resampling, resample_counts
from vsb.scores.stats.power import mdd_factor, min_detectable, rank_ranges, stories_needed
from vsb.scores.write import write_scores
from vsb.story.models import DIMENSIONS

SM = "structured_memory"


def _near_tie_rows() -> list[dict]:
    """Models a and b differ by a hair (the data cannot separate them); c is far behind."""
    p = {("a", SM): 0.20, ("b", SM): 0.21, ("c", SM): 0.70}
    return simulated_rows(np.random.default_rng(11), p, n_stories=10)


def test_ranks_of_models_the_data_cannot_separate_overlap(
    make_run: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(_near_tie_rows(), models=["a", "b", "c"])
    rep = score_run(run, settings=Resampling(n_resamples=400, n_draws=20))
    rows = {r.model: r for r in rep.scores}
    assert {rows["a"].rank, rows["b"].rank} == {1, 2}
    for m in ("a", "b"):  # before: strict ranks 1 and 2 and nothing else
        assert (rows[m].rank_low, rows[m].rank_high) == (1, 2)
    assert (rows["c"].rank_low, rows["c"].rank_high) == (3, 3)
    for r in rep.scores:
        assert r.rank_low is not None and r.rank_high is not None
        assert r.rank_low <= r.rank <= r.rank_high
    assert main(["score", str(run), "--resamples", "400"]) == 0
    out = capsys.readouterr().out
    assert "(1–2)" in out and "# (95% range)" in out


def test_rank_ranges_match_a_loop_over_resamples(make_run: Callable[..., Path]) -> None:
    run = make_run(_near_tie_rows(), models=["a", "b", "c"])
    table = load_scoring_input(run).table("rules")
    weights = resample_counts(np.random.default_rng(5), len(table.stories), 300)
    low, high = rank_ranges(table, weights)
    c = table.conditions.index(SM)
    ranks = []
    for w in weights:  # independent: resampled dimension means, their mean, then ranks
        glob = []
        for m in range(len(table.models)):
            dims = []
            for d in range(len(DIMENSIONS)):
                v = table.values[m, c, :, d]
                ok = ~np.isnan(v)
                dims.append((w[ok] * v[ok]).sum() / w[ok].sum())
            glob.append(np.mean(dims))
        ranks.append([1 + sum(g2 > g for g2 in glob) for g in glob])
    r = np.array(ranks, dtype=float)
    assert list(low[:, c]) == list(np.quantile(r, 0.025, axis=0, method="lower").astype(int))
    assert list(high[:, c]) == list(np.quantile(r, 0.975, axis=0, method="higher").astype(int))


def test_se_mdd_and_stories_needed(make_run: Callable[..., Path]) -> None:
    run = make_run(_near_tie_rows(), models=["a", "b", "c"])
    rep = score_run(run, settings=Resampling(seed=4, n_resamples=500, n_draws=20))
    ac = next(
        c
        for c in rep.comparisons
        if (c.a_model, c.b_model, c.metric, c.kind) == ("a", "c", "coherence", "model")
    )
    # independent: the paired bootstrap of the story-level coherence differences, drawn the
    # way vsb.scores.stats.bootstrap draws (one batch of rng.integers)
    df = pd.DataFrame([r for r in _near_tie_rows() if r["source"] == "memory"])
    per = df.groupby(["model", "story_id"])["passed"].mean().unstack(0)
    d = (per["a"] - per["c"]).to_numpy()
    idx = np.random.default_rng(4).integers(0, len(d), (500, len(d)))
    se = d[idx].mean(axis=1).std(ddof=1)
    assert ac.se == pytest.approx(se, rel=1e-9)
    assert ac.mdd == pytest.approx(mdd_factor(0.95, 0.8) * se)
    assert mdd_factor(0.95, 0.8) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert ac.stories_needed == stories_needed(ac.diff, ac.mdd, ac.n_stories)
    assert ac.stories_needed is not None and ac.stories_needed <= ac.n_stories  # far apart
    ab = next(
        c
        for c in rep.comparisons
        if (c.a_model, c.b_model, c.metric, c.kind) == ("a", "b", "global", "model")
    )
    assert ab.mdd is not None and abs(ab.diff) < ab.mdd  # too close for these stories
    assert ab.stories_needed is not None and ab.stories_needed > ab.n_stories
    assert stories_needed(0.0, 0.1, 40) is None and min_detectable(None) is None


def test_mdd_has_the_power_it_claims() -> None:
    """Paired story differences with true mean = MDD are detected (95% percentile CI
    excludes 0) in about 80% of data sets."""
    rng = np.random.default_rng(2024)
    n, sims, resamples, sigma = 40, 600, 400, 0.1
    mdd = mdd_factor() * sigma / np.sqrt(n)
    data = rng.normal(mdd, sigma, size=(sims, n))
    idx = rng.integers(0, n, (resamples, n))
    boot = data[:, idx].mean(axis=2)  # (sims, resamples)
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=1)
    power = ((lo > 0) | (hi < 0)).mean()
    assert 0.74 <= power <= 0.86
    se = bootstrap_se(boot.T)  # the bootstrap SE tracks sigma/√n
    assert np.median(se) == pytest.approx(sigma / np.sqrt(n), rel=0.1)


def _horizon_rows() -> list[dict]:
    """Model m remembers perfectly up to scene 3 and forgets everything after; prompt
    checks always pass. Stories s0, s1 have 5 scenes, s2 has 3."""
    out = []
    for s, n_scenes in (("s0", 5), ("s1", 5), ("s2", 3)):
        for k in range(1, n_scenes + 1):
            for d in DIMENSIONS:
                out.append(req_row("m", SM, s, k, d, "prompt", True))
                if k > 1:
                    out.append(req_row("m", SM, s, k, d, "memory", k <= 3, subject=f"x{k}"))
    return out


def test_long_horizon_known_answers(make_run: Callable[..., Path]) -> None:
    run = make_run(_horizon_rows())
    rep = score_run(run, settings=Resampling(n_resamples=200, n_draws=20))
    pts = {(p.axis, p.group, p.metric): p for p in rep.horizon}
    assert ("scene", "1", "coherence") not in pts  # scene 1 has no memory requirement
    assert pts[("scene", "1", "adherence")].score == 1.0
    for k, want in (("2", 1.0), ("3", 1.0), ("4", 0.0), ("5", 0.0)):
        p = pts[("scene", k, "coherence")]
        assert p.score == want and p.ci_low == want and p.ci_high == want
    assert pts[("scene", "3", "coherence")].n_stories == 3
    assert pts[("scene", "4", "coherence")].n_stories == 2
    assert pts[("scene", "4", "coherence")].n_checks == 2 * len(DIMENSIONS)
    # lengths inferred from the scenes seen (no suite index in this run)
    assert pts[("length", "3", "coherence")].score == 1.0
    assert pts[("length", "5", "coherence")].score == pytest.approx(0.5)
    assert not any(p.axis == "difficulty" for p in rep.horizon)
    write_scores(run, rep)
    csv = pd.read_csv(run / "scores" / "horizon.csv")
    assert len(csv) == len(rep.horizon) and {"axis", "group", "metric", "ci_low"} <= set(csv)
    model_csv = pd.read_csv(run / "scores" / "model_scores.csv")
    assert {"rank_low", "rank_high"} <= set(model_csv.columns)


def test_long_horizon_matches_pandas(make_run: Callable[..., Path]) -> None:
    p = {("a", SM): 0.1, ("b", SM): 0.3, ("a", "independent"): 0.5}
    rows = simulated_rows(np.random.default_rng(3), p, n_stories=8, n_scenes=5)
    run = make_run(rows, models=["a", "b"])
    inp = load_scoring_input(run)
    table = inp.table("rules")
    weights = resample_counts(np.random.default_rng(0), len(table.stories), 300)
    info = {s: StoryInfo("hard" if i % 2 else "easy", 5) for i, s in enumerate(table.stories)}
    pts = horizon(inp.evaluator_rows("rules"), table, weights, "rules", info)
    df = pd.DataFrame(rows)
    df["source"] = df["source"].map({"memory": "coherence", "prompt": "adherence"})
    per = df.groupby(["model", "condition", "scene", "source", "story_id"])["passed"].mean()
    want = per.groupby(["model", "condition", "scene", "source"]).mean()
    got = {(q.model, q.condition, int(q.group), q.metric): q for q in pts if q.axis == "scene"}
    assert len(got) == len(want)
    for key, v in want.items():
        q = got[key]
        assert q.score == pytest.approx(v)
        assert q.ci_low is not None and q.ci_high is not None
        assert q.ci_low <= q.score + 1e-12 and q.score <= q.ci_high + 1e-12
    by_group = [q for q in pts if q.axis == "difficulty"]
    diff = {(q.model, q.condition, q.group, q.metric): q.score for q in by_group}
    coh = df[df.source == "coherence"].groupby(["model", "condition", "story_id"])["passed"].mean()
    order = list(table.stories)
    for (m, c), grp in coh.groupby(level=[0, 1]):
        hard = [v for (_, _, s), v in grp.items() if order.index(s) % 2]
        assert diff[(m, c, "hard", "coherence")] == pytest.approx(np.mean(hard))


def test_scores_2_0_files_still_load(make_run: Callable[..., Path]) -> None:
    run = make_run(_near_tie_rows(), models=["a", "b", "c"])
    rep = score_run(run, settings=Resampling(n_resamples=50, n_draws=10))
    assert rep.version == "2.2"
    old = rep.model_dump(mode="json")
    old["version"] = "2.0"
    old.pop("horizon")
    for r in old["scores"]:
        r.pop("rank_low"), r.pop("rank_high")
    for c in old["comparisons"]:
        c.pop("se"), c.pop("mdd"), c.pop("stories_needed")
    back = ScoresReport.model_validate(json.loads(json.dumps(old)))
    assert back.horizon == [] and back.scores[0].rank_low is None
