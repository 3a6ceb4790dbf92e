"""What memory buys, and whether it is really memory: condition effects with paired CIs.

Every effect is a paired story-level comparison of one model under two conditions, the
same statistic as ``vsb compare`` (``vsb.scores.cells.compare_cells``: story-clustered
bootstrap counts from ``numpy.random.default_rng(seed)``, so with the same seed and resample
count the numbers equal those in ``scores.json``):

=================  ========================================  ===============================
effect             a − b                                     reads
=================  ========================================  ===============================
memory_gain        structured_memory − independent           what the structured memory buys
placebo_gain       random_context − independent             what any long, well-formed
                                                             context buys (≈ 0 if the gain
                                                             is memory)
memory_vs_placebo  structured_memory − random_context        the memory gain net of placebo
predicted_gain     predicted_memory − independent            what the memory buys when an
                                                             extractor reads the state
memory_vs_         structured_memory − predicted_memory      what imperfect extraction
predicted                                                    costs (≈ 0: the gain survives)
ablation           structured_memory − structured_memory-    what remembering one group of
                   no_GROUP                                  facts buys, per dimension
=================  ========================================  ===============================

The fact-group table checks the ablations where they act: for each ablation, the fault rate
(share of memory-source checks not passed, macro-averaged over stories) of every fact group
(``vsb.conditions.fact_group``; ``other`` = presence, pose and order) under the ablation
minus under structured memory, with its paired CI. A model that uses its memory shows a
rise for the removed group only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from vsb.conditions import (
    ABLATIONS,
    FACT_GROUPS,
    PLACEBO_CONDITION,
    PREDICTED_CONDITION,
    PRIMARY_CONDITION,
    fact_group,
)
from vsb.errors import InputError
from vsb.fsio import STRICT, atomic_write_json, atomic_write_text, csv_text
from vsb.scores.axis import select_evaluators
from vsb.scores.cells import compare_cells
from vsb.scores.compute import ScoringInput, load_scoring_input
from vsb.scores.inputs import NOT_APPLICABLE, RequirementRows
from vsb.scores.models import Comparison, PairedDiff, Resampled, RunIdentity
from vsb.scores.stats.bootstrap import (
    Resampling,
    nan_mean,
    percentile_interval,
    weighted_means,
)
from vsb.scores.table import StoryTable, build_story_table

ANALYSIS_FORMAT_VERSION = "1.0"
ANALYSIS_DIR = "analysis"
EffectKind = Literal[
    "memory_gain",
    "placebo_gain",
    "memory_vs_placebo",
    "predicted_gain",
    "memory_vs_predicted",
    "ablation",
]
#: (effect, condition a, condition b) in display order; each effect is a − b.
EFFECTS: tuple[tuple[EffectKind, str, str], ...] = (
    ("memory_gain", PRIMARY_CONDITION, "independent"),
    ("placebo_gain", PLACEBO_CONDITION, "independent"),
    ("memory_vs_placebo", PRIMARY_CONDITION, PLACEBO_CONDITION),
    ("predicted_gain", PREDICTED_CONDITION, "independent"),
    ("memory_vs_predicted", PRIMARY_CONDITION, PREDICTED_CONDITION),
    *(("ablation", PRIMARY_CONDITION, name) for name in ABLATIONS),
)
#: Fact groups of the fact-group table: the ablatable ones, then the rest.
GROUPS: tuple[str, ...] = (*FACT_GROUPS, "other")


class _EffectKey(BaseModel):
    model_config = STRICT
    evaluator: str = Field(description="Who judged (rows of evaluators are never pooled).")
    model: str
    effect: EffectKind = Field(description="memory_gain, placebo_gain, memory_vs_placebo, …")
    condition_a: str
    condition_b: str


class Effect(PairedDiff, _EffectKey):
    """One effect of one model on one metric: a paired difference a − b with its CI."""

    p_less: float | None = Field(description="Share of resamples with Δ < 0.")
    n_stories: int = Field(ge=0)

    @property
    def removes(self) -> str | None:
        """The fact group an ablation effect removes (None for the other effects)."""
        return ABLATIONS.get(self.condition_b) if self.effect == "ablation" else None


class GroupEffect(BaseModel):
    """An ablation's change of one fact group's fault rate (memory-source checks)."""

    model_config = STRICT
    evaluator: str
    model: str
    ablation: str = Field(description="The ablated condition.")
    removes: str = Field(description="The fact group the ablation removes from the context.")
    group: str = Field(description="The fact group whose fault rate this row measures.")
    fault_full: float = Field(description="Fault rate under structured_memory.")
    fault_ablated: float = Field(description="Fault rate under the ablation.")
    diff: float = Field(description="fault_ablated − fault_full (> 0: the memory helped).")
    ci_low: float | None
    ci_high: float | None
    n_stories: int = Field(ge=0, description="Stories with checks of this group in both.")


class AnalysisReport(Resampled):
    """``RUN/analysis/analysis.json``: condition effects and the fact-group table."""

    version: Literal["1.0"] = "1.0"
    run: RunIdentity
    evaluators: list[str]
    effects: list[Effect]
    fact_groups: list[GroupEffect]


def _f(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _oriented(c: Comparison, kind: EffectKind, a: str, b: str) -> Effect:
    """The comparison as the effect a − b (flipped when it was stored as b − a)."""
    same = c.a_condition == a
    lo, hi = (c.ci_low, c.ci_high) if same else (_neg(c.ci_high), _neg(c.ci_low))
    return Effect(
        evaluator=c.evaluator,
        model=c.a_model,
        effect=kind,
        condition_a=a,
        condition_b=b,
        metric_kind=c.metric_kind,
        metric=c.metric,
        a_score=c.a_score if same else c.b_score,
        b_score=c.b_score if same else c.a_score,
        diff=c.diff if same else 0.0 - c.diff,  # never -0.0
        ci_low=lo,
        ci_high=hi,
        p_greater=c.p_greater if same else c.p_less,
        p_less=c.p_less if same else c.p_greater,
        n_stories=c.n_stories,
    )


def _neg(x: float | None) -> float | None:
    return None if x is None else 0.0 - x  # never -0.0


def effects_from_comparisons(comparisons: Iterable[Comparison]) -> list[Effect]:
    """The effects found among paired comparisons (e.g. ``scores.json``'s, either side
    order), in ``EFFECTS`` order, then by evaluator, model and metric as given."""
    wanted = {frozenset((a, b)): (kind, a, b) for kind, a, b in EFFECTS}
    order = {(a, b): i for i, (_, a, b) in enumerate(EFFECTS)}
    found: list[tuple[int, int, Effect]] = []
    for i, c in enumerate(comparisons):
        if c.kind != "condition" or c.a_model != c.b_model:
            continue
        spec = wanted.get(frozenset((c.a_condition, c.b_condition)))
        if spec is not None:
            found.append((order[spec[1], spec[2]], i, _oriented(c, *spec)))
    return [e for _, _, e in sorted(found, key=lambda t: (t[0], t[1]))]


def _pairs(table: StoryTable) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    out = []
    for _, a, b in EFFECTS:
        if a not in table.conditions or b not in table.conditions:
            continue
        ca, cb = table.conditions.index(a), table.conditions.index(b)
        for m in range(len(table.models)):
            if table.has_row(m, ca) and table.has_row(m, cb):
                out.append(("condition", (m, ca), (m, cb)))
    return out


def _group_rates(rows: RequirementRows, table: StoryTable) -> np.ndarray:
    """``(models, conditions, stories, len(GROUPS))`` fault rates over memory-source checks
    (not_applicable left out), NaN where a run has no check of that group."""
    mi = {x: i for i, x in enumerate(table.models)}
    ci = {x: i for i, x in enumerate(table.conditions)}
    si = {x: i for i, x in enumerate(table.stories)}
    shape = (len(table.models), len(table.conditions), len(table.stories), len(GROUPS))
    total, fails = np.zeros(shape), np.zeros(shape)
    gi = {g: i for i, g in enumerate(GROUPS)}
    cols = zip(
        rows.model, rows.condition, rows.story_id, rows.source, rows.subject, rows.attribute,
        rows.verdict, rows.passed, strict=True,
    )  # fmt: skip
    for m, c, s, src, subj, attr, verdict, passed in cols:
        if src != "memory" or verdict == NOT_APPLICABLE:
            continue
        key = (mi[m], ci[c], si[s], gi[fact_group(subj, attr) or "other"])
        total[key] += 1
        fails[key] += not passed
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, fails / total, np.nan)


def group_effects(
    rows: RequirementRows,
    table: StoryTable,
    weights: np.ndarray,
    evaluator: str,
    confidence: float = 0.95,
) -> list[GroupEffect]:
    """The fact-group table of one evaluator (``rows`` are its rows, ``table`` its story
    table; ``weights`` the bootstrap counts over ``table.stories``)."""
    if PRIMARY_CONDITION not in table.conditions:
        return []
    rates = _group_rates(rows, table)
    full = table.conditions.index(PRIMARY_CONDITION)
    out: list[GroupEffect] = []
    for name, removes in ABLATIONS.items():
        if name not in table.conditions:
            continue
        c = table.conditions.index(name)
        for m, model in enumerate(table.models):
            if not (table.has_row(m, full) and table.has_row(m, c)):
                continue
            a, b = rates[m, c], rates[m, full]  # (stories, groups)
            both = ~(np.isnan(a) | np.isnan(b))
            a, b = np.where(both, a, np.nan), np.where(both, b, np.nan)
            d = a - b
            low, high = percentile_interval(weighted_means(weights, d), confidence)
            pa, pb, pd = nan_mean(a, axis=0), nan_mean(b, axis=0), nan_mean(d, axis=0)
            for g, group in enumerate(GROUPS):
                if math.isnan(pd[g]):
                    continue
                out.append(
                    GroupEffect(
                        evaluator=evaluator, model=model, ablation=name, removes=removes,
                        group=group, fault_full=float(pb[g]), fault_ablated=float(pa[g]),
                        diff=float(pd[g]), ci_low=_f(low[g]), ci_high=_f(high[g]),
                        n_stories=int(both[:, g].sum()),
                    )
                )  # fmt: skip
    return out


def analyze_input(
    inp: ScoringInput,
    *,
    evaluators: str | Sequence[str] | None = None,
    settings: Resampling = Resampling(),
) -> AnalysisReport:
    """Every effect and the fact-group table of each selected evaluator (default: every
    evaluator that applied to something), each on its own bootstrap counts seeded as
    ``vsb score`` seeds them."""
    chosen = [e for e in select_evaluators(inp.evaluators, evaluators) if e in inp.applicable()]
    if not chosen:
        raise InputError("no selected evaluator applied to any check of this run")
    effects: list[Effect] = []
    groups: list[GroupEffect] = []
    for label in chosen:
        rows = inp.evaluator_rows(label)
        table = build_story_table(rows, inp.model_order, inp.condition_order)
        weights = settings.weights(len(table.stories))
        comps = compare_cells(table, _pairs(table), weights, settings.confidence, label)
        effects += effects_from_comparisons(comps)
        groups += group_effects(rows, table, weights, label, settings.confidence)
    if not effects and not groups:
        raise InputError(
            "the run has no pair of conditions to analyse (structured_memory with independent, "
            "random_context, predicted_memory or an ablation); run them with "
            "--condition independent,structured_memory,random_context,predicted_memory,ablations"
        )
    return AnalysisReport(
        run=inp.run,
        **settings.report_fields(),
        evaluators=chosen,
        effects=effects,
        fact_groups=groups,
    )


def analyze_run(
    run_dir: str | Path,
    *,
    evaluators: str | Sequence[str] | None = None,
    settings: Resampling = Resampling(),
) -> AnalysisReport:
    """``analyze_input`` of a run directory with evaluations."""
    return analyze_input(
        load_scoring_input(run_dir),
        evaluators=evaluators,
        settings=settings,
    )


EFFECT_HEADER = tuple(Effect.model_fields)
GROUP_HEADER = tuple(GroupEffect.model_fields)


def write_analysis(
    run_dir: str | Path, report: AnalysisReport, out_dir: str | Path | None = None
) -> list[Path]:
    """Write ``analysis.json``, ``effects.csv`` and ``fact_groups.csv`` into ``out_dir``
    (default ``RUN/analysis/``)."""
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / ANALYSIS_DIR
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "analysis.json", out / "effects.csv", out / "fact_groups.csv"]
    atomic_write_json(paths[0], report.model_dump(mode="json"))
    rows = ([getattr(e, k) for k in EFFECT_HEADER] for e in report.effects)
    atomic_write_text(paths[1], csv_text(EFFECT_HEADER, rows))
    grows = ([getattr(g, k) for k in GROUP_HEADER] for g in report.fact_groups)
    atomic_write_text(paths[2], csv_text(GROUP_HEADER, grows))
    return paths
