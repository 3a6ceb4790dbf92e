"""Implicit effects: how much of a model's failure on causal effects is inference, not memory.

The implicit text style (``vsb suite generate --text-style implicit``) tells an event with a
stated cause and never its effect; the requirements that check the effect are ``inferred``.
The plain suite of the same seed holds the same stories and requirements with the effect
spelled out. ``compare_implicit`` pairs a plain run (A) with an implicit run (B) of the same
stories and, for every (model, condition) evaluated in both, gives the pass rate on the
inferred requirements in each (the same requirement ids, judged in both runs) and the
difference implicit − explicit, with a story-clustered percentile bootstrap CI (one weight
row per resample from ``numpy.random.default_rng(seed)``, shared by every cell; each rate is
a ratio of summed passes to summed checks under the weights). A CI below 0 says the model
fails more when it has to infer the effect than when it is told.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from vsb.errors import InputError
from vsb.fsio import STRICT, load_json
from vsb.scores.compare import choose_evaluator
from vsb.scores.compute import ScoringInput
from vsb.scores.inputs import NOT_APPLICABLE, RequirementRows
from vsb.scores.models import Resampled, RunIdentity
from vsb.scores.stats.bootstrap import Resampling, nan_to_none
from vsb.scores.write import write_report_files
from vsb.story.io import load_suite_index

IMPLICIT_FILE = "sensitivity/implicit_effects.json"

#: (story id, scene, subject, attribute): one requirement of one story.
ReqKey = tuple[str, int, str, str]


class ImplicitRow(BaseModel):
    """One (model, condition): pass rates on the inferred requirements, told vs implicit."""

    model_config = STRICT
    evaluator: str
    model: str
    condition: str
    explicit_pass: float = Field(description="Pass rate in the plain run (effect stated).")
    implicit_pass: float = Field(description="Pass rate in the implicit run (effect inferred).")
    diff: float = Field(description="implicit_pass − explicit_pass.")
    ci_low: float | None = Field(description="Story-clustered percentile bootstrap CI of diff.")
    ci_high: float | None
    p_less: float | None = Field(description="Share of resamples with diff < 0.")
    n_checks: int = Field(ge=0, description="Inferred requirement checks paired (per run).")
    n_stories: int = Field(ge=0)


class ImplicitReport(Resampled):
    """``implicit_effects.json``: a plain and an implicit run, on their inferred checks."""

    version: Literal["1.0"] = "1.0"
    run_a: RunIdentity = Field(description="The plain (explicit) run.")
    run_b: RunIdentity = Field(description="The implicit run.")
    evaluator: str
    inferred_requirements: int = Field(description="Inferred requirements in the suite.")
    stories: list[str] = Field(description="Stories with an inferred requirement.")
    rows: list[ImplicitRow]


def inferred_requirements(suite: Path) -> set[ReqKey]:
    """Every inferred requirement of a suite directory, read from the story files as JSON."""
    out: set[ReqKey] = set()
    for entry in load_suite_index(suite).stories:
        path = suite / entry.file
        doc = load_json(path)
        try:
            for scene in doc["scenes"]:
                for r in scene["requirements"]:
                    if r.get("inferred") is True:
                        out.add((entry.id, int(scene["index"]), r["subject"], r["attribute"]))
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"not a story file: no {err}", file=path) from err
    return out


def _outcomes(
    rows: RequirementRows, keys: set[ReqKey]
) -> dict[tuple[str, str], dict[ReqKey, bool]]:
    """Per (model, condition): pass/fail of each judged inferred requirement."""
    out: dict[tuple[str, str], dict[ReqKey, bool]] = {}
    for m, c, s, k, subj, attr, v, ok in zip(
        rows.model, rows.condition, rows.story_id, rows.scene, rows.subject, rows.attribute,
        rows.verdict, rows.passed, strict=True,
    ):  # fmt: skip
        key = (s, k, subj, attr)
        if v != NOT_APPLICABLE and key in keys:
            out.setdefault((m, c), {})[key] = ok
    return out


def compare_implicit(
    plain: ScoringInput,
    implicit: ScoringInput,
    *,
    evaluator: str | None = None,
    conditions: Sequence[str] | None = None,
    settings: Resampling = Resampling(),
) -> ImplicitReport:
    """The implicit-effects report of two loaded runs (``implicit``'s suite marks the
    inferred requirements; the plain run needs only the same stories). ``InputError`` when
    the implicit suite has no inferred requirement or no cell is evaluated in both runs."""
    label = choose_evaluator(implicit, evaluator)
    keys = inferred_requirements(implicit.root / "suite")
    if not keys:
        raise InputError(
            "the run's suite has no inferred requirement (generate it with --text-style implicit)",
            file=implicit.root / "suite",
        )
    a = _outcomes(plain.evaluator_rows(label), keys)
    b = _outcomes(implicit.evaluator_rows(label), keys)
    cells = [cell for cell in b if cell in a and (not conditions or cell[1] in conditions)]
    if not cells:
        raise InputError("the runs have no (model, condition) with inferred checks in both")
    order = {m: i for i, m in enumerate(implicit.model_order)}
    corder = {c: i for i, c in enumerate(implicit.condition_order)}
    cells.sort(key=lambda mc: (order.get(mc[0], len(order)), corder.get(mc[1], len(corder)), mc))
    stories = sorted({k[0] for k in keys})
    index = {s: i for i, s in enumerate(stories)}
    weights = settings.weights(len(stories))
    tail = (1 - settings.confidence) / 2 * 100
    rows: list[ImplicitRow] = []
    for m, c in cells:
        shared = [k for k in a[(m, c)] if k in b[(m, c)]]
        n = np.zeros(len(stories))
        pa, pb = np.zeros(len(stories)), np.zeros(len(stories))
        for k in shared:
            i = index[k[0]]
            n[i] += 1
            pa[i] += a[(m, c)][k]
            pb[i] += b[(m, c)][k]
        if not n.sum():
            continue
        total = weights @ n
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (weights @ pb - weights @ pa) / total
        boot = boot[total > 0]
        low, high = np.percentile(boot, [tail, 100 - tail]) if boot.size else (np.nan, np.nan)
        rows.append(
            ImplicitRow(
                evaluator=label, model=m, condition=c,
                explicit_pass=float(pa.sum() / n.sum()), implicit_pass=float(pb.sum() / n.sum()),
                diff=float((pb.sum() - pa.sum()) / n.sum()),
                ci_low=nan_to_none(low), ci_high=nan_to_none(high),
                p_less=float((boot < 0).mean()) if boot.size else None,
                n_checks=int(n.sum()), n_stories=int((n > 0).sum()),
            )
        )  # fmt: skip
    return ImplicitReport(
        run_a=plain.run,
        run_b=implicit.run,
        evaluator=label,
        **settings.report_fields(),
        inferred_requirements=len(keys),
        stories=stories,
        rows=rows,
    )


IMPLICIT_HEADER = tuple(ImplicitRow.model_fields)


def write_implicit(out_dir: str | Path, report: ImplicitReport) -> list[Path]:
    """Write ``implicit_effects.json`` and ``implicit_effects.csv`` into ``out_dir``."""
    return write_report_files(out_dir, "implicit_effects", report, IMPLICIT_HEADER, report.rows)
