"""The evaluator axis in scores (issue #9 items 1, 2 and 5): per-evaluator scores, verdicts,
evaluators that did not apply, judge-model split and judge-swap rank stability."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from score_synth import Row, req_row

from vsb.errors import InputError, RunError
from vsb.scores.compute import score_run
from vsb.scores.models import Estimate, ModelScore, NotApplicable
from vsb.scores.stats.bootstrap import Resampling
from vsb.scores.stats.judge_swap import judge_swap
from vsb.scores.write import write_scores
from vsb.story.models import DIMENSIONS

COND = "structured_memory"


def exact_rows(
    evaluator: str,
    rates: dict[str, float],
    *,
    n_stories: int = 6,
    judge_model: str | None = None,
    verdict_fail: str = "failed",
    jitter: float = 0.0,
) -> list[Row]:
    """Rows whose pass rate per (story, dimension) is exactly ``rate`` (10 checks each);
    ``jitter`` moves odd stories up and even ones down by that much (wider CIs)."""
    out: list[Row] = []
    for model, rate in rates.items():
        for s in range(n_stories):
            r = rate + (jitter if s % 2 else -jitter)
            n_pass = round(10 * r)
            for d in DIMENSIONS:
                for i in range(10):
                    ok = i < n_pass
                    out.append(
                        req_row(
                            model, COND, f"st{s:02d}", 1 + i % 2, d,
                            "prompt" if i % 2 == 0 else "memory", ok,
                            attribute=f"a{i}", evaluator=evaluator,
                            verdict="passed" if ok else verdict_fail, judge_model=judge_model,
                        )
                    )  # fmt: skip
    return out


def _score(run: Path, **kw: object) -> object:
    return score_run(run, settings=Resampling(n_resamples=200, n_draws=50), **kw)  # type: ignore[arg-type]


def test_evaluators_are_scored_separately(make_run: Callable[..., Path]) -> None:
    rules = exact_rows("rules", {"a": 0.9, "b": 0.6})
    vlm = exact_rows("vlm", {"a": 0.5, "b": 0.8}, judge_model="openai-compatible:gpt-4o")
    rep = score_run(make_run(rules + vlm), settings=Resampling(n_resamples=200, n_draws=50))
    alone = score_run(
        make_run(rules, name="alone"), settings=Resampling(n_resamples=200, n_draws=50)
    )
    assert rep.evaluators == ["rules", "vlm"] and rep.primary_evaluator == "rules"
    assert rep.judge_models == {"rules": "", "vlm": "openai-compatible:gpt-4o"}
    by = {(r.evaluator, r.model): r for r in rep.scores}
    assert by["rules", "a"].global_score.score == pytest.approx(0.9)  # type: ignore[union-attr]
    assert by["vlm", "a"].global_score.score == pytest.approx(0.5)  # type: ignore[union-attr]
    assert by["rules", "a"].rank == 1 and by["vlm", "b"].rank == 1
    # the rule checker's numbers do not depend on the judge rows beside them
    assert [r for r in rep.scores if r.evaluator == "rules"] == alone.scores
    assert [r for r in rep.comparisons if r.evaluator == "rules"] == alone.comparisons
    assert [r for r in rep.rank_stability if r.evaluator == "rules"] == alone.rank_stability
    assert {s.evaluator for s in rep.stories} == {"rules", "vlm"}
    only_vlm = score_run(
        make_run(rules + vlm, name="v"), evaluators="vlm", settings=Resampling(n_resamples=200)
    )
    assert only_vlm.evaluators == ["vlm"] and {r.evaluator for r in only_vlm.scores} == {"vlm"}


def test_verdicts_not_applicable_left_out_unsure_and_parse_failure_not_passed(
    make_run: Callable[..., Path],
) -> None:
    verdicts = ["passed", "passed", "failed", "unsure", "parse_failure"] + ["not_applicable"] * 3
    rows = [
        req_row("m", COND, "s1", 1, "identity", "prompt", False, attribute=f"a{i}", verdict=v)
        for i, v in enumerate(verdicts)
    ]
    rep = score_run(make_run(rows), settings=Resampling(n_resamples=50, n_draws=10))
    (row,) = rep.scores
    assert row.dimensions["identity"].score == 2 / 5  # type: ignore[union-attr]
    assert (row.n_unsure, row.n_parse_failure, row.n_not_applicable) == (1, 1, 3)
    assert row.n_requirements == 5 and row.n_images == 1


def test_rows_of_the_first_format_are_rules(make_run: Callable[..., Path]) -> None:
    rows = exact_rows("rules", {"a": 0.7})
    for r in rows:
        del r["evaluator"], r["verdict"]
    rep = score_run(make_run(rows), settings=Resampling(n_resamples=50, n_draws=10))
    assert rep.evaluators == ["rules"] and rep.scores[0].global_score.score == pytest.approx(0.7)  # type: ignore[union-attr]


def _not_renders(model: str, reason_in: str = "observed") -> list[Row]:
    rows = exact_rows("rules", {model: 0.0}, verdict_fail="not_applicable", n_stories=2)
    for r in rows:
        r["failure"] = ""
        if reason_in == "observed":
            r["observed"] = json.dumps({"reason": "its images are not renders"})
        else:
            r["failure"] = "its images are not renders"
    return rows


def test_model_an_evaluator_did_not_apply_to_is_left_out(make_run: Callable[..., Path]) -> None:
    rows = exact_rows("rules", {"sim": 0.9}) + _not_renders("stored:foo")
    rep = score_run(make_run(rows), settings=Resampling(n_resamples=50, n_draws=10))
    assert [r.model for r in rep.scores] == ["sim"]
    assert rep.models == ["sim"]
    assert rep.not_applicable == [
        NotApplicable(
            evaluator="rules",
            model="stored:foo",
            conditions=[COND],
            n_images=4,
            reason="its images are not renders",
            instead=[],
        )
    ]
    # a judge that did apply is named as the evaluator to use instead
    judged = exact_rows("vlm", {"sim": 0.8, "stored:foo": 0.6})
    rep = score_run(
        make_run(rows + judged, name="j"), settings=Resampling(n_resamples=50, n_draws=10)
    )
    assert rep.not_applicable[0].instead == ["vlm"]
    assert {r.model for r in rep.scores if r.evaluator == "vlm"} == {"sim", "stored:foo"}
    paths = write_scores(make_run(rows + judged, name="w"), rep)
    na = pd.read_csv(next(p for p in paths if p.name == "not_applicable.csv"))
    assert na.to_dict("records") == [
        {
            "evaluator": "rules", "model": "stored:foo", "conditions": COND, "n_images": 4,
            "reason": "its images are not renders", "instead": "vlm",
        }
    ]  # fmt: skip


def test_evaluator_that_applied_to_nothing(make_run: Callable[..., Path]) -> None:
    na_only = _not_renders("stored:foo", reason_in="failure") + _not_renders("stored:bar")
    judged = exact_rows("vlm", {"stored:foo": 0.6, "stored:bar": 0.7})
    run = make_run(na_only + judged)
    with pytest.raises(InputError, match="rules did not apply to any model"):
        score_run(run, evaluators="rules", settings=Resampling(n_resamples=50))
    rep = score_run(run, settings=Resampling(n_resamples=50, n_draws=10))  # default: only listed
    assert rep.evaluators == ["vlm"] and len(rep.not_applicable) == 2
    with pytest.raises(RunError, match="judge them with `vsb evaluate"):
        score_run(make_run(na_only, name="none"), settings=Resampling(n_resamples=50))


def test_unknown_evaluator_lists_those_present(make_run: Callable[..., Path]) -> None:
    run = make_run(exact_rows("rules", {"a": 0.5}) + exact_rows("vlm", {"a": 0.5}))
    with pytest.raises(InputError, match=r"evaluator 'nope'.*present: rules, vlm"):
        score_run(run, evaluators="nope")


def test_one_evaluator_with_two_judge_models_is_split(make_run: Callable[..., Path]) -> None:
    rows = exact_rows("vlm", {"a": 0.9, "b": 0.5}, judge_model="x")
    rows += exact_rows("vlm", {"a": 0.4, "b": 0.8}, judge_model="y")
    run = make_run(rows)
    rep = score_run(run, settings=Resampling(n_resamples=50, n_draws=10))
    assert rep.evaluators == ["vlm:x", "vlm:y"]
    assert rep.judge_models == {"vlm:x": "x", "vlm:y": "y"}
    assert score_run(run, evaluators="vlm", settings=Resampling(n_resamples=50)).evaluators == [
        "vlm:x",
        "vlm:y",
    ]
    assert score_run(run, evaluators="vlm:y", settings=Resampling(n_resamples=50)).evaluators == [
        "vlm:y"
    ]
    (swap,) = rep.judge_swap
    assert (swap.evaluator_a, swap.evaluator_b, swap.kendall_tau) == ("vlm:x", "vlm:y", -1.0)


def test_judge_swap_end_to_end(make_run: Callable[..., Path]) -> None:
    rules = exact_rows("rules", {"a": 0.9, "b": 0.6, "c": 0.3, "d": 0.5})
    # the judge reverses the order; d's judge scores spread (jitter): a wide CI
    vlm = exact_rows("vlm", {"a": 0.3, "b": 0.6, "c": 0.8}) + exact_rows(
        "vlm", {"d": 0.7}, jitter=0.3
    )
    run = make_run(rules + vlm)
    rep = score_run(run, settings=Resampling(n_resamples=300, n_draws=50))
    (swap,) = rep.judge_swap
    assert swap.condition == COND and swap.models == ["a", "b", "c", "d"]
    ga = [0.9, 0.6, 0.3, 0.5]
    gb = [0.3, 0.6, 0.8, 0.7]
    assert swap.kendall_tau == pytest.approx(stats.kendalltau(ga, gb).statistic)
    flips = {(p.model_x, p.model_y): p for p in swap.pairs if p.flipped}
    assert set(flips) == {("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")}
    separated = {k for k, p in flips.items() if p.separated}
    # d's judge CI is wide: it overlaps b's and c's, not a's
    assert separated == {("a", "b"), ("a", "c"), ("a", "d"), ("b", "c")}
    assert (swap.n_flips, swap.n_separated_flips) == (6, 4)
    write_scores(run, rep)
    csv = pd.read_csv(run / "scores" / "judge_swap.csv")
    assert len(csv) == 6 and csv.separated.sum() == 4 and set(csv.evaluator_a) == {"rules"}
    for name in ("model_scores", "story_scores", "comparisons", "rank_stability"):
        table = pd.read_csv(run / "scores" / f"{name}.csv")
        assert table.columns[0] == "evaluator" and set(table.evaluator) == {"rules", "vlm"}


def _ms(evaluator: str, model: str, score: float, lo: float, hi: float) -> ModelScore:
    est = Estimate(score=score, ci_low=lo, ci_high=hi, n_stories=5)
    return ModelScore(
        evaluator=evaluator, model=model, condition=COND, dimensions={}, adherence=None,
        coherence=None, conditional_coherence=None, global_score=est, rank=1, n_stories=5,
        n_images=5, n_requirements=5, n_unsure=0, n_parse_failure=0, n_not_applicable=0,
    )  # fmt: skip


def test_judge_swap_needs_both_evaluators_apart() -> None:
    scores = [
        _ms("rules", "x", 0.9, 0.85, 0.95), _ms("rules", "y", 0.5, 0.45, 0.55),
        _ms("vlm", "x", 0.6, 0.5, 0.7), _ms("vlm", "y", 0.65, 0.55, 0.75),
        _ms("human", "x", 0.2, 0.1, 0.3), _ms("human", "y", 0.8, 0.7, 0.9),
        _ms("human", "z", 0.5, 0.4, 0.6),
    ]  # fmt: skip
    swaps = {
        (s.evaluator_a, s.evaluator_b): s
        for s in judge_swap(scores, ["rules", "vlm", "human"], [COND])
    }
    assert set(swaps) == {("rules", "vlm"), ("rules", "human"), ("vlm", "human")}
    rv = swaps["rules", "vlm"]
    assert rv.models == ["x", "y"] and rv.kendall_tau == -1.0
    assert rv.n_flips == 1 and rv.n_separated_flips == 0  # the judge's CIs overlap
    rh = swaps["rules", "human"]
    assert rh.models == ["x", "y"] and rh.n_separated_flips == 1
    # a condition where fewer than two models are shared gives no entry
    assert judge_swap(scores[:3], ["rules", "vlm"], [COND]) == []
    assert np.isclose(swaps["vlm", "human"].kendall_tau, 1.0)  # type: ignore[arg-type]
