"""``vsb score``: from a run's evaluations to a typed ``ScoresReport`` (no scipy needed).

Each evaluator present in the requirements table (``vsb.scores.axis``) is scored on its own
rows, as if it were the only one: its own story table, bootstrap, comparisons and rank
stability (``vsb.scores.cells``, which also describes the seeding). Judge-swap stability
(``vsb.scores.stats.judge_swap``) then sets the evaluators side by side. How each model's
prompts fit its text budget comes from the run's records (``prompt_cuts``): a model whose
prompts were cut was scored on what its encoder kept, and every view of its scores says so.
Records of an older run, without those fields, give no entry: unknown, never "not cut".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsb.errors import InputError, RunError
from vsb.fsio import iter_jsonl, sha256_file
from vsb.scores.axis import (
    evaluator_labels,
    is_all,
    not_applicable_models,
    ordered_evaluators,
    refusal,
    select_evaluators,
    unparsable_refusal,
    unreadable_cells,
    verdict_counts,
)
from vsb.scores.cells import Part, all_pairs, compare_cells, score_one
from vsb.scores.horizon import StoryInfo
from vsb.scores.inputs import (
    DEFAULT_EVALUATOR,
    NOT_APPLICABLE,
    EvaluationTables,
    RequirementRows,
    SignalRows,
    load_signals,
    load_tables,
    read_manifest,
    release_name,
    require_run_dir,
)
from vsb.scores.models import ConditionCut, NotApplicable, PromptCut, RunIdentity, ScoresReport
from vsb.scores.signals import SignalScore, signal_scores
from vsb.scores.stats.bootstrap import DEFAULT_DRAWS, DEFAULT_RESAMPLES, Resampling
from vsb.scores.stats.judge_swap import judge_swap
from vsb.scores.table import CONDITION_ORDER, StoryTable, build_story_table, ordered_names
from vsb.story.models import DIMENSIONS
from vsb.tables import requirements_file

__all__ = [
    "DEFAULT_DRAWS",
    "DEFAULT_RESAMPLES",
    "Resampling",
    "ScoringInput",
    "all_pairs",
    "compare_cells",
    "load_scoring_input",
    "run_identity",
    "score_input",
    "score_run",
    "score_table",
]


@dataclass(frozen=True)
class ScoringInput:
    """A run's requirement rows, each with its scored evaluator, and the run's identity."""

    root: Path
    rows: RequirementRows
    labels: list[str]
    """Per row: its scored evaluator (``vsb.scores.axis.evaluator_labels``)."""
    run: RunIdentity
    model_order: tuple[str, ...]
    condition_order: tuple[str, ...]
    stories: dict[str, StoryInfo] = field(default_factory=dict)
    """Difficulty and scene count of each story (from ``RUN/suite/suite.json``; empty when
    the run has no readable suite index)."""
    signals: SignalRows | None = None
    """The run's signal rows when loaded with the requirement rows (else read on use)."""
    prompts: list[PromptCut] = field(default_factory=list)
    """How each model's prompts fit its text budget (``RUN/records.jsonl``)."""

    @property
    def evaluators(self) -> list[str]:
        """Every evaluator present (the rule checker first)."""
        return ordered_evaluators(self.labels)

    @property
    def conditions(self) -> list[str]:
        """Every condition present, in display order (manifest, then canonical)."""
        return list(ordered_names(self.rows.condition, (*self.condition_order, *CONDITION_ORDER)))

    def evaluator_rows(self, evaluator: str) -> RequirementRows:
        """The rows of one scored evaluator."""
        return self.rows.view([x == evaluator for x in self.labels])

    def table(self, evaluator: str) -> StoryTable:
        """One evaluator's story table (not_applicable rows left out)."""
        rows = self.evaluator_rows(evaluator)
        return build_story_table(rows, self.model_order, self.condition_order)

    def applied(self) -> dict[str, set[str]]:
        """Per model: the evaluators that judged at least one of its checks."""
        out: dict[str, set[str]] = defaultdict(set)
        for e, m, v in zip(self.labels, self.rows.model, self.rows.verdict, strict=True):
            if v != NOT_APPLICABLE:
                out[m].add(e)
        return out

    def applicable(self) -> list[str]:
        """The evaluators that applied to at least one check."""
        verdicts = self.rows.verdict
        return ordered_evaluators(
            [x for x, v in zip(self.labels, verdicts, strict=True) if v != NOT_APPLICABLE]
        )


def load_scoring_input(
    run_dir: str | Path, release: str | None = None, tables: EvaluationTables | None = None
) -> ScoringInput:
    """Read a run's requirement rows and manifest (models/conditions in manifest order);
    ``tables``: the run's evaluation tables already loaded (not read again)."""
    root = require_run_dir(run_dir)
    manifest = read_manifest(root)
    tables = tables if tables is not None else load_tables(root)
    rows = tables.requirements
    models = tuple(str(m) for m in manifest.get("models", []))
    return ScoringInput(
        root=root,
        rows=rows,
        signals=tables.signals,
        labels=evaluator_labels(rows),
        run=run_identity(root, release),
        model_order=models,
        condition_order=tuple(str(c) for c in manifest.get("conditions", [])),
        stories=suite_stories(root),
        prompts=read_prompt_cuts(root, sorted(set(models) | set(rows.model))),
    )


def suite_stories(run_dir: Path) -> dict[str, StoryInfo]:
    """Difficulty and scene count per story id from the run's ``suite/suite.json`` ({} when
    it is absent or unreadable: the long-horizon view then infers lengths)."""
    from vsb.story.io import read_suite_index

    try:
        index = read_suite_index(run_dir / "suite")
    except (InputError, OSError):
        return {}
    if index is None:
        return {}
    return {e.id: StoryInfo(e.difficulty, e.scenes) for e in index.stories}


def _report(
    run: RunIdentity,
    parts: dict[str, Part],
    judge_models: dict[str, str],
    not_applicable: list[NotApplicable],
    cfg: Resampling,
    model_order: Sequence[str],
    condition_order: Sequence[str],
    signals: Sequence[SignalScore] = (),
    prompts: Sequence[PromptCut] = (),
) -> ScoresReport:
    evaluators = list(parts)
    scores = [r for p in parts.values() for r in p.scores]
    models = ordered_names((r.model for r in scores), model_order)
    conditions = ordered_names((r.condition for r in scores), condition_order)
    return ScoresReport(
        run=run,
        **cfg.report_fields(),
        evaluators=evaluators,
        primary_evaluator=evaluators[0],
        judge_models={e: judge_models.get(e, "") for e in evaluators},
        dimensions=list(DIMENSIONS),
        models=list(models),
        conditions=list(conditions),
        scores=scores,
        stories=[r for p in parts.values() for r in p.stories],
        comparisons=[r for p in parts.values() for r in p.comparisons],
        rank_stability=[r for p in parts.values() for r in p.stability],
        horizon=[h for p in parts.values() for h in p.horizon],
        not_applicable=not_applicable,
        judge_swap=judge_swap(scores, evaluators, conditions, models),
        signals=list(signals),
        prompts=[p for m in models for p in prompts if p.model == m],
    )


def score_table(
    table: StoryTable,
    run: RunIdentity,
    *,
    evaluator: str = DEFAULT_EVALUATOR,
    settings: Resampling = Resampling(),
    progress: Callable[[str], None] | None = None,
) -> ScoresReport:
    """Every statistic of ``vsb score`` for one evaluator's in-memory StoryTable."""
    settings.check()
    part = score_one(table, evaluator, None, settings, progress or (lambda _msg: None))
    return _report(run, {evaluator: part}, {}, [], settings, table.models, table.conditions)


def score_input(
    inp: ScoringInput,
    *,
    evaluators: str | Sequence[str] | None = None,
    settings: Resampling = Resampling(),
    progress: Callable[[str], None] | None = None,
) -> ScoresReport:
    """Score every selected evaluator of a loaded run (default: every one present).

    A model every check of which an evaluator marked not_applicable is left out of that
    evaluator's scores and listed in ``not_applicable``. An explicitly selected evaluator
    that applied to no model raises ``InputError``; with the default selection such an
    evaluator is only listed, and ``RunError`` is raised when none applied at all. An
    evaluator most of whose judged verdicts are ``parse_failure`` raises ``InputError``
    (``axis.MOSTLY_UNPARSABLE``): its judge's answers could not be read, and ranking every
    model at 0 would be a result.
    """
    settings.check()
    note = progress or (lambda _msg: None)
    chosen = select_evaluators(inp.evaluators, evaluators)
    applied = inp.applied()
    judge_models: dict[str, str] = {}
    for e, j in zip(inp.labels, inp.rows.judge_model, strict=True):
        judge_models.setdefault(e, j)
    parts: dict[str, Part] = {}
    not_applicable: list[NotApplicable] = []
    for e in chosen:
        sub = inp.evaluator_rows(e)
        garbage = unparsable_refusal(sub, e, str(inp.root))
        if garbage is not None:
            raise InputError(garbage)
        nas = not_applicable_models(sub, e, inp.model_order, applied)
        not_applicable += nas
        if len(nas) == len(set(sub.model)):
            if not is_all(evaluators):
                raise InputError(refusal(e, nas, str(inp.root)))
            continue
        keep, empty = unreadable_cells(sub, e, inp.model_order, applied)
        sub, not_applicable = sub.view(keep), not_applicable + empty  # not ranked there
        table = build_story_table(sub, inp.model_order, inp.condition_order)
        parts[e] = score_one(table, e, verdict_counts(sub), settings, note, sub, inp.stories)
    if not parts:
        first = [n for n in not_applicable if n.evaluator == chosen[0]]
        raise RunError(refusal(chosen[0], first, str(inp.root)))
    order = (*inp.condition_order, *CONDITION_ORDER)
    signals = inp.signals if inp.signals is not None else load_signals(inp.root)
    sig = signal_scores(signals, settings, model_order=inp.model_order, condition_order=order)
    return _report(
        inp.run, parts, judge_models, not_applicable, settings, inp.model_order, order, sig,
        inp.prompts,
    )  # fmt: skip


def run_identity(run_dir: Path, release: str | None = None) -> RunIdentity:
    """Identity of a run directory (manifest fields, release name, evaluation hash); the
    release name is ``release`` if given, else read from a MANIFEST.json."""
    manifest = read_manifest(run_dir)
    seed = manifest.get("seed")
    return RunIdentity(
        run_dir=run_dir.resolve().name,
        release=release if release is not None else release_name(run_dir),
        suite=str(manifest["suite"]) if manifest.get("suite") is not None else None,
        suite_sha256=manifest.get("suite_sha256"),
        run_seed=int(seed) if isinstance(seed, int) else None,
        prompt_style=manifest.get("prompt_style"),
        requirements_sha256=sha256_file(requirements_file(run_dir)),
    )


def score_run(
    run_dir: str | Path,
    *,
    evaluators: str | Sequence[str] | None = None,
    settings: Resampling = Resampling(),
    progress: Callable[[str], None] | None = None,
    release: str | None = None,
    tables: EvaluationTables | None = None,
) -> ScoresReport:
    """Score a run directory (reads ``evaluations/``, unless ``tables`` holds them
    already loaded); writes nothing.

    ``evaluators``: names or a comma-separated string (default: every one present; see
    ``score_input`` for evaluators that did not apply).
    """
    return score_input(
        load_scoring_input(run_dir, release, tables),
        evaluators=evaluators,
        settings=settings,
        progress=progress,
    )


def prompt_cuts(records: Iterable[Mapping[str, Any]], models: Sequence[str]) -> list[PromptCut]:
    """How each model's prompts fit its text budget (issue #44), from the ``prompt_*`` fields
    of its records (docs/CONTRACTS.md): one ``PromptCut`` per model of ``models`` whose
    records say (in the order of ``models``); conditions in record order."""
    seen: dict[str, dict[str, Any]] = {}
    for r in records:
        if "prompt_unit" not in r or r.get("model") not in models:
            continue
        m = seen.setdefault(
            str(r["model"]),
            {"unit": str(r["prompt_unit"]), "budget": r.get("prompt_budget"), "chunked": 0,
             "by": {}},
        )  # fmt: skip
        n, cut = m["by"].get(str(r["condition"]), (0, 0))
        m["by"][str(r["condition"])] = (n + 1, cut + bool(r.get("prompt_cut")))
        m["chunked"] += r.get("prompt_encoded") == "chunked"
    out: list[PromptCut] = []
    for model in models:
        if model not in seen:
            continue
        m = seen[model]
        conds = [ConditionCut(condition=c, n_prompts=n, n_cut=k) for c, (n, k) in m["by"].items()]
        total = sum(c.n_prompts for c in conds)
        cut = sum(c.n_cut for c in conds)
        budget = m["budget"]
        out.append(
            PromptCut(
                model=model, unit=m["unit"], budget=budget if isinstance(budget, int) else None,
                n_prompts=total, n_cut=cut, cut_share=cut / total if total else 0.0,
                n_chunked=m["chunked"], conditions=conds,
            )
        )  # fmt: skip
    return out


def read_prompt_cuts(run_dir: Path, models: Sequence[str]) -> list[PromptCut]:
    """``prompt_cuts`` of ``RUN/records.jsonl`` (none when the run has no records file)."""
    path = run_dir / "records.jsonl"
    if not path.is_file():
        return []
    try:
        return prompt_cuts((r for _, r in iter_jsonl(path)), models)
    except (KeyError, TypeError) as err:
        raise InputError(f"a record lacks a field ({err})", file=path) from None
