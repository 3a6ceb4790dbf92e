"""Writing ``RUN/validation/``: ``judge.json`` plus long-format CSV tables (atomic writes).

``taxonomy.csv`` / ``taxonomy_by_model.csv``: one row per evaluator (× model) × label, strict
and root-cause columns side by side; ``verdicts.csv``: verdict counts and UNSURE /
parse-failure rates per evaluator, overall (model ``all``) and per model; ``auroc.csv`` and
``correlations.csv``: every signal with its evaluator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vsb.fsio import atomic_write_json, atomic_write_text, csv_text
from vsb.validation.models import (
    JudgeReport,
    SignalAuroc,
    SignalCorrelation,
    TaxonomyMetrics,
    VerdictCounts,
)

VALIDATION_DIR = "validation"
#: The ``model`` cell of a whole-evaluator row in ``verdicts.csv``.
ALL_MODELS = "all"


def _cells(m: Any, model: type[Any]) -> list[Any]:
    return [getattr(m, h) for h in model.model_fields]


def write_judge(run_dir: str | Path, report: JudgeReport) -> list[Path]:
    """Write ``judge.json``, ``taxonomy.csv``, ``auroc.csv``, ``correlations.csv``,
    ``taxonomy_by_model.csv`` and ``verdicts.csv``; returns their paths in that order."""
    out = Path(run_dir) / VALIDATION_DIR
    tax_h = list(TaxonomyMetrics.model_fields)
    ver_h = list(VerdictCounts.model_fields)
    secs = report.evaluators
    tables: list[tuple[str, list[str], list[list[Any]]]] = [
        (
            "taxonomy.csv",
            ["evaluator", *tax_h],
            [[s.evaluator, *_cells(t, TaxonomyMetrics)] for s in secs for t in s.taxonomy],
        ),
        (
            "auroc.csv",
            list(SignalAuroc.model_fields),
            [_cells(a, SignalAuroc) for a in report.auroc],
        ),
        (
            "correlations.csv",
            list(SignalCorrelation.model_fields),
            [_cells(c, SignalCorrelation) for c in report.correlations],
        ),
        (
            "taxonomy_by_model.csv",
            ["evaluator", "model", *tax_h],
            [
                [s.evaluator, m, *_cells(t, TaxonomyMetrics)]
                for s in secs
                for m, rows in s.taxonomy_by_model.items()
                for t in rows
            ],
        ),
        (
            "verdicts.csv",
            ["evaluator", "judge_model", "model", *ver_h],
            [
                [s.evaluator, s.judge_model, m, *_cells(v, VerdictCounts)]
                for s in secs
                for m, v in [(ALL_MODELS, s.verdicts), *s.verdicts_by_model.items()]
            ],
        ),
    ]
    paths = [out / "judge.json"]
    atomic_write_json(paths[0], report.model_dump(mode="json"))
    for name, header, rows in tables:
        atomic_write_text(out / name, csv_text(header, rows))
        paths.append(out / name)
    return paths
