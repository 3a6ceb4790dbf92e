"""Condition effects (memory gain, placebo, ablations) and the fact-group table: synthetic
rows with known answers, then the simulators end to end (the issue's "Done when")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from score_synth import Row, req_row

from vsb.conditions import ABLATIONS, PREDICTED_CONDITION, PRIMARY_CONDITION
from vsb.errors import InputError
from vsb.scores.analysis import (
    EFFECTS,
    GROUPS,
    AnalysisReport,
    analyze_run,
    effects_from_comparisons,
    write_analysis,
)
from vsb.scores.compare import compare_run
from vsb.scores.compute import score_run
from vsb.scores.stats.bootstrap import Resampling
from vsb.story.models import DIMENSIONS

#: (subject, attribute, dimension) of one check per fact group.
FACTS = {
    "identity": ("Ana", "skin", "identity"),
    "clothing": ("Ana", "top", "clothing"),
    "objects": ("book", "state", "object_state"),
    "environment": ("scene", "weather", "environment"),
    "other": ("Ana", "pose", "action"),
}
NO_IDENTITY = f"{PRIMARY_CONDITION}-no_identity"


def _rows(p_fail: dict[str, dict[str, float]], seed: int = 0, n_stories: int = 30) -> list[Row]:
    """Per condition, per fact group: memory checks fail with the given probability (the
    same uniform draws in every condition: paired like common random numbers)."""
    rng = np.random.default_rng(seed)
    u = rng.random((n_stories, 4, len(FACTS)))
    out: list[Row] = []
    for cond, fails in p_fail.items():
        for s in range(n_stories):
            for k in range(1, 5):
                for g, (group, (subj, attr, dim)) in enumerate(FACTS.items()):
                    source = "prompt" if k == 1 else "memory"
                    q = fails.get(group, 0.05) if source == "memory" else 0.0
                    passed = bool(u[s, k - 1, g] >= q)
                    out.append(
                        req_row("m", cond, f"st{s:02d}", k, dim, source, passed,
                                subject=subj, attribute=attr)
                    )  # fmt: skip
    return out


P_FAIL = {
    "independent": dict.fromkeys(FACTS, 0.40),
    PRIMARY_CONDITION: dict.fromkeys(FACTS, 0.05),
    "random_context": dict.fromkeys(FACTS, 0.40),
    NO_IDENTITY: {**dict.fromkeys(FACTS, 0.05), "identity": 0.40},
}


@pytest.fixture
def synth(make_run: Callable[..., Path]) -> Path:
    return make_run(_rows(P_FAIL))


def test_effects_are_oriented_a_minus_b(synth: Path) -> None:
    report = analyze_run(synth, settings=Resampling(n_resamples=500))
    kinds = {(e.effect, e.condition_b) for e in report.effects}
    assert kinds == {
        ("memory_gain", "independent"),
        ("placebo_gain", "independent"),
        ("memory_vs_placebo", "random_context"),
        ("ablation", NO_IDENTITY),
    }
    by = {(e.effect, e.metric_kind, e.metric): e for e in report.effects}
    gain = by["memory_gain", "summary", "coherence"]
    assert gain.condition_a == PRIMARY_CONDITION and gain.diff > 0.25
    assert gain.ci_low is not None and gain.ci_low > 0
    assert gain.diff == pytest.approx(gain.a_score - gain.b_score)
    placebo = by["placebo_gain", "summary", "coherence"]
    assert placebo.diff == 0.0 and (placebo.ci_low, placebo.ci_high) == (0.0, 0.0)
    vs = by["memory_vs_placebo", "summary", "coherence"]
    assert vs.diff == pytest.approx(gain.diff)
    abl = by["ablation", "dimension", "identity"]
    assert abl.removes == "identity" and abl.diff > 0.2 and abl.ci_low is not None
    assert abl.ci_low > 0
    assert by["ablation", "dimension", "clothing"].diff == 0.0
    # the same numbers as vsb compare (same seed, same resamples), sign included
    comps = compare_run(
        synth, "m@random_context", "m@independent", settings=Resampling(n_resamples=500)
    )
    c = next(x for x in comps if x.metric == "coherence")
    assert (c.diff, c.ci_low, c.ci_high) == (placebo.diff, placebo.ci_low, placebo.ci_high)
    comps = compare_run(
        synth, f"m@{PRIMARY_CONDITION}", "m@independent", settings=Resampling(n_resamples=500)
    )
    c = next(x for x in comps if x.metric == "coherence")
    assert (c.diff, c.ci_low, c.ci_high) == (gain.diff, gain.ci_low, gain.ci_high)


def test_effects_from_scores_json_equal_the_analysis(synth: Path) -> None:
    """The site reads the effects from scores.json's comparisons, stored either way round."""
    scores = score_run(synth, settings=Resampling(n_resamples=300, n_draws=10))
    stored = {(c.a_condition, c.b_condition) for c in scores.comparisons}
    assert ("independent", "random_context") in stored  # b − a: must be flipped
    from_scores = effects_from_comparisons(scores.comparisons)
    direct = analyze_run(synth, settings=Resampling(n_resamples=300)).effects
    assert from_scores == direct
    order = [(e.effect, e.condition_a, e.condition_b) for e in direct]
    assert order == sorted(order, key=lambda t: EFFECTS.index(t))


def test_predicted_memory_effects(make_run: Callable[..., Path]) -> None:
    """predicted_gain and memory_vs_predicted: paired, oriented, the same in scores.json."""
    p = {
        "independent": dict.fromkeys(FACTS, 0.40),
        PRIMARY_CONDITION: dict.fromkeys(FACTS, 0.05),
        PREDICTED_CONDITION: dict.fromkeys(FACTS, 0.20),
    }
    run = make_run(_rows(p))
    report = analyze_run(run, settings=Resampling(n_resamples=500))
    by = {(e.effect, e.metric): e for e in report.effects if e.metric_kind == "summary"}
    gain, pred = by["memory_gain", "coherence"], by["predicted_gain", "coherence"]
    cost = by["memory_vs_predicted", "coherence"]
    assert (pred.condition_a, pred.condition_b) == (PREDICTED_CONDITION, "independent")
    assert (cost.condition_a, cost.condition_b) == (PRIMARY_CONDITION, PREDICTED_CONDITION)
    assert 0 < pred.diff < gain.diff and cost.diff > 0
    assert pred.diff + cost.diff == pytest.approx(gain.diff)
    for e in (pred, cost):
        assert e.ci_low is not None and e.ci_low > 0 and e.n_stories == 30
    # scores.json stores independent − predicted_memory: flipped, equal up to the last bits
    scores = score_run(run, settings=Resampling(n_resamples=500, n_draws=10))
    stored = effects_from_comparisons(scores.comparisons)
    assert [(e.effect, e.metric) for e in stored] == [(e.effect, e.metric) for e in report.effects]
    for a, b in zip(stored, report.effects, strict=True):
        assert (a.diff, a.ci_low, a.ci_high) == pytest.approx((b.diff, b.ci_low, b.ci_high))


def test_flipped_comparison_swaps_everything(make_run: Callable[..., Path]) -> None:
    p = {"independent": dict.fromkeys(FACTS, 0.05), "random_context": dict.fromkeys(FACTS, 0.4)}
    run = make_run(_rows(p))
    scores = score_run(run, settings=Resampling(n_resamples=300, n_draws=10))
    (raw,) = [
        c for c in scores.comparisons if c.metric == "coherence" and c.a_condition == "independent"
    ]
    (eff,) = [e for e in effects_from_comparisons(scores.comparisons) if e.metric == "coherence"]
    assert eff.effect == "placebo_gain" and eff.condition_a == "random_context"
    assert eff.diff == -raw.diff < 0
    assert (eff.ci_low, eff.ci_high) == (-raw.ci_high, -raw.ci_low)  # type: ignore[operator]
    assert (eff.a_score, eff.b_score) == (raw.b_score, raw.a_score)
    assert (eff.p_greater, eff.p_less) == (raw.p_less, raw.p_greater)


def test_fact_group_table(synth: Path) -> None:
    report = analyze_run(synth, settings=Resampling(n_resamples=500))
    rows = {(g.ablation, g.group): g for g in report.fact_groups}
    assert {g for _, g in rows} == set(GROUPS)
    mine = rows[NO_IDENTITY, "identity"]
    assert mine.removes == "identity" and mine.n_stories == 30
    assert mine.fault_full < 0.12 and mine.fault_ablated > 0.3
    assert mine.diff == pytest.approx(mine.fault_ablated - mine.fault_full)
    assert mine.ci_low is not None and mine.ci_low > 0
    for group in GROUPS[1:]:
        g = rows[NO_IDENTITY, group]
        assert g.diff == 0.0 and (g.ci_low, g.ci_high) == (0.0, 0.0), group


def test_prompt_checks_do_not_count_in_the_fact_groups(make_run: Callable[..., Path]) -> None:
    rows = _rows({PRIMARY_CONDITION: {}, NO_IDENTITY: {}})
    for r in rows:  # every prompt check of the ablation fails: no fact-group change
        if r["condition"] == NO_IDENTITY and r["source"] == "prompt":
            r.update(passed=False, failure="identity_drift")
    report = analyze_run(make_run(rows), settings=Resampling(n_resamples=200))
    assert all(g.diff == 0.0 for g in report.fact_groups)
    adherence = next(e for e in report.effects if e.metric == "adherence")
    assert adherence.diff > 0.9


def test_nothing_to_analyse_is_one_clear_error(make_run: Callable[..., Path]) -> None:
    run = make_run(_rows({"independent": {}, "previous_text": {}}))
    with pytest.raises(InputError, match="no pair of conditions to analyse"):
        analyze_run(run, settings=Resampling(n_resamples=100))
    with pytest.raises(InputError, match="evaluator"):
        analyze_run(run, evaluators="vlm", settings=Resampling(n_resamples=100))


def test_write_analysis_round_trips(synth: Path) -> None:
    report = analyze_run(synth, settings=Resampling(n_resamples=200))
    paths = write_analysis(synth, report)
    assert [p.name for p in paths] == ["analysis.json", "effects.csv", "fact_groups.csv"]
    again = AnalysisReport.model_validate(json.loads(paths[0].read_text()))
    assert again == report and again.version == "1.0"
    lines = paths[1].read_text().splitlines()
    assert lines[0].startswith("evaluator,model,effect,condition_a,condition_b")
    assert len(lines) == 1 + len(report.effects)
    assert len(paths[2].read_text().splitlines()) == 1 + len(report.fact_groups)


# --- the simulators end to end --------------------------------------------------------------

SIMS = ("procedural-drift-mid", "procedural-amnesiac", "procedural-sloppy")


@pytest.fixture(scope="module")
def control_run(tmp_path_factory: pytest.TempPathFactory, default_suite: list) -> Path:
    """The ten medium-a stories of the default suite, three simulators (the oracle injects
    nothing under any condition: tests/adapters), independent, structured memory, the
    placebo, the four ablations and predicted memory, through the rule checker (1,200
    images)."""
    from vsb.evaluators.evaluate import evaluate_run
    from vsb.generator.generate import write_suite
    from vsb.run.runner import RunConfig, run

    root = tmp_path_factory.mktemp("controls")
    write_suite([s for s in default_suite if s.id.endswith("medium-a")], root / "suite")
    conds = ["independent", PRIMARY_CONDITION, "random_context", *ABLATIONS, PREDICTED_CONDITION]
    cfg = RunConfig(
        suite_dir=root / "suite", models=list(SIMS), conditions=conds, out=root / "run",
        seed=0, workers=2, cache_dir=root / "cache",
    )  # fmt: skip
    run(cfg)
    evaluate_run(root / "run", workers=2, evaluators=("rules",))
    return root / "run"


def _excludes_zero(lo: float | None, hi: float | None) -> bool:
    assert lo is not None and hi is not None
    return lo > 0 or hi < 0


@pytest.mark.slow
def test_ablation_table_recovers_the_simulators_design(control_run: Path) -> None:
    from vsb.adapters.simulators import SIMULATORS

    report = analyze_run(control_run, settings=Resampling(n_resamples=1000))
    for model in SIMS:
        params = SIMULATORS[model]
        rows = [g for g in report.fact_groups if g.model == model]
        assert len(rows) == len(ABLATIONS) * len(GROUPS)
        for g in rows:
            if g.group != g.removes:  # no other group moves
                assert not _excludes_zero(g.ci_low, g.ci_high), g
                continue
            assert _excludes_zero(g.ci_low, g.ci_high), g
            # the sign the design gives: a fact without its context is drawn at p_memory
            # instead of p_adherence (sloppy follows its context worse than it remembers)
            assert np.sign(g.diff) == np.sign(params.p_memory - params.p_adherence), g


@pytest.mark.slow
def test_placebo_gives_no_gain_on_any_simulator(control_run: Path) -> None:
    report = analyze_run(control_run, settings=Resampling(n_resamples=1000))
    placebo = [e for e in report.effects if e.effect == "placebo_gain"]
    assert {e.model for e in placebo} == set(SIMS)
    assert {e.metric for e in placebo} >= {*DIMENSIONS, "coherence", "global"} - {"causal"}
    for e in placebo:
        assert e.diff == 0.0 and not _excludes_zero(e.ci_low, e.ci_high), e
    gain = {
        (e.model, e.metric_kind, e.metric): e.diff
        for e in report.effects
        if e.effect == "memory_gain"
    }
    for e in report.effects:
        if e.effect == "memory_vs_placebo":
            assert e.diff == pytest.approx(gain[e.model, e.metric_kind, e.metric])
    assert gain["procedural-amnesiac", "summary", "coherence"] > 0.3
    assert gain["procedural-sloppy", "summary", "coherence"] < 0


@pytest.mark.slow
def test_extraction_errors_cost_memory_coherence(control_run: Path) -> None:
    """Through images and the rule checker: a memory with 10 % of facts wrong loses part of
    the gain (the simulators follow their context), and the two effects add up."""
    report = analyze_run(control_run, settings=Resampling(n_resamples=1000))
    by = {
        (e.model, e.effect): e
        for e in report.effects
        if e.metric_kind == "summary" and e.metric == "coherence"
    }
    for model in SIMS:
        cost = by[model, "memory_vs_predicted"]
        assert cost.diff > 0 and _excludes_zero(cost.ci_low, cost.ci_high), cost
        gain, pred = by[model, "memory_gain"], by[model, "predicted_gain"]
        assert pred.diff + cost.diff == pytest.approx(gain.diff)
    assert by["procedural-amnesiac", "predicted_gain"].diff > 0.1
