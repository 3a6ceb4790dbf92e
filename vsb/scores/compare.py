"""``vsb compare``: one paired comparison a − b, each side ``MODEL[@CONDITION]``.

Model names may hold colons (``openai:gpt-image-1``), so a cell is ``MODEL@CONDITION``
(``openai:gpt-image-1@structured_memory``), the one form everywhere (issue #36). The older
``MODEL:CONDITION`` is refused with a one-line error that names the ``@`` spelling.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vsb.errors import InputError, UnknownNameError
from vsb.scores.axis import (
    advice,
    not_applicable_models,
    refusal,
    select_evaluators,
    unparsable_refusal,
)
from vsb.scores.cells import compare_cells
from vsb.scores.compute import ScoringInput, load_scoring_input
from vsb.scores.inputs import DEFAULT_EVALUATOR
from vsb.scores.models import PRIMARY_CONDITION, Comparison
from vsb.scores.stats.aggregate import Cell
from vsb.scores.stats.bootstrap import Resampling
from vsb.scores.table import CONDITION_ORDER, StoryTable


def _condition(name: str, known: Sequence[str]) -> str | None:
    """The known condition ``name`` spells (any case), or None."""
    return next((c for c in known if c.lower() == name.lower()), None)


def split_side(spec: str, models: Sequence[str], conditions: Sequence[str]) -> tuple[str, str]:
    """``MODEL[@CONDITION]`` -> (model, condition or ''); unknown names raise (with a close
    match and the valid names); the older ``MODEL:CONDITION`` raises naming the ``@`` form.

    ``conditions`` are the run's; a canonical condition the run lacks is reported as an
    unknown condition rather than read as part of the model name.
    """
    if spec in models:
        return spec, ""
    known = [*conditions, *(c for c in CONDITION_ORDER if c not in conditions)]
    head, at, tail = spec.rpartition("@")
    if at:
        cond = _condition(tail, known)
        if cond is None and (head in models or not tail):
            raise UnknownNameError("condition", tail, conditions)
        if cond is not None:
            if head not in models:
                raise UnknownNameError("model", head, models)
            if cond not in conditions:
                raise UnknownNameError("condition", cond, conditions)
            return head, cond
    head, sep, tail = spec.rpartition(":")
    cond = _condition(tail, known) if sep else None
    if cond is not None:  # the older MODEL:CONDITION (ambiguous with openai:MODEL)
        raise InputError(
            f"{spec!r}: write a cell as MODEL@CONDITION ({head}@{cond}); the colon belongs "
            "to model names such as openai:gpt-image-1"
        )
    if sep and head in models:
        raise UnknownNameError("condition", tail, conditions)
    if spec not in models:
        raise UnknownNameError("model", spec, models)
    return spec, ""


def parse_cell(table: StoryTable, spec: str, default_condition: str | None) -> Cell:
    """``MODEL[@CONDITION]`` -> (model index, condition index); unknown names raise."""
    model, cond = split_side(spec, table.models, table.conditions)
    cond = cond or default_condition or ""
    if cond not in table.conditions:
        raise UnknownNameError("condition", cond, table.conditions)
    cell = (table.models.index(model), table.conditions.index(cond))
    if not table.has_row(*cell):
        raise InputError(f"model {model!r} has no evaluations in condition {cond!r}")
    return cell


def choose_evaluator(inp: ScoringInput, spec: str | None) -> str:
    """The one evaluator to compare under: ``spec``, else the rule checker if it applied to
    anything, else the only evaluator; ``InputError`` when that is ambiguous, absent, or
    did not apply to any model."""
    applicable = inp.applicable()
    if spec is not None:
        for name in select_evaluators(inp.evaluators, spec):
            if name not in applicable:
                rows = inp.evaluator_rows(name)
                nas = not_applicable_models(rows, name, inp.model_order, inp.applied())
                raise InputError(refusal(name, nas, str(inp.root)))
    if spec is None:
        if DEFAULT_EVALUATOR in applicable:
            return DEFAULT_EVALUATOR
        if len(applicable) == 1:
            return applicable[0]
        raise InputError(
            f"this run has several evaluators; choose one with --evaluator: {', '.join(applicable)}"
        )
    chosen = select_evaluators(applicable, spec)
    if len(chosen) != 1:
        raise InputError(
            f"--evaluator {spec!r} names several evaluators; choose one of: {', '.join(chosen)}"
        )
    return chosen[0]


def compare_sides(table: StoryTable, a: str, b: str) -> tuple[str, Cell, Cell]:
    """The cells of ``a`` and ``b`` (each ``MODEL[@CONDITION]``) and the comparison's kind
    (``model``: one condition; ``condition``: one model). A side without a condition takes the
    other side's; with neither, the primary condition (or the run's first condition if the
    primary was not run)."""
    _, cond_a = split_side(a, table.models, table.conditions)
    _, cond_b = split_side(b, table.models, table.conditions)
    default = cond_a or cond_b
    if not default:
        default = PRIMARY_CONDITION if PRIMARY_CONDITION in table.conditions else ""
        default = default or table.conditions[0]
    ca, cb = parse_cell(table, a, default), parse_cell(table, b, default)
    if ca == cb:
        raise InputError(f"--a and --b are the same: {a!r}")
    return ("model" if ca[1] == cb[1] else "condition"), ca, cb


def compare_run(
    run_dir: str | Path,
    a: str,
    b: str,
    *,
    evaluator: str | None = None,
    settings: Resampling = Resampling(),
) -> list[Comparison]:
    """Paired comparison of ``a`` − ``b`` (each ``MODEL[@CONDITION]``) on every metric,
    under one evaluator (``choose_evaluator``).

    A side without a condition takes the other side's; with neither, the primary condition
    (or the run's first condition if the primary was not run). Uses the same bootstrap
    counts as ``score_run`` with the same seed, so the numbers match ``scores.json``.
    """
    inp = load_scoring_input(run_dir)
    label = choose_evaluator(inp, evaluator)
    table = inp.table(label)
    rows = inp.evaluator_rows(label)
    garbage = unparsable_refusal(rows, label, str(inp.root))
    if garbage is not None:
        raise InputError(garbage)
    nas = {n.model: n for n in not_applicable_models(rows, label, inp.model_order, inp.applied())}
    for side in (a, b):
        model = next((m for m in nas if side == m or side.startswith((m + ":", m + "@"))), None)
        if model is not None:
            raise InputError(advice(nas[model], str(inp.root)))
    kind, ca, cb = compare_sides(table, a, b)
    weights = settings.weights(len(table.stories))
    return compare_cells(table, [(kind, ca, cb)], weights, settings.confidence, label)
