"""Which injected faults VinaBench's metrics catch: each metric against the sealed oracle.

From every VinaBench question asked of the simulators' frames (``vsb.validation.vina.ask``)
and the oracle's visual faults (``oracle/faults.jsonl``), per simulator (and all pooled):

- a metric's **unit** is what VinaBench gives one value: a scene for the five alignment
  metrics (entity alignment: the share of its entities answered yes), and, for the three
  consistency metrics, one question (style: the story's images; character: the images of
  one character; location: the images at one place). A unit **fails** when its value is
  below 1 (an entity, a count, a yes missed);
- a unit **carries** a fault label when a visual fault of that label was injected in one
  of the images it shows (a consistency question shows several: it carries the labels of
  each, whatever character or place it asks about);
- **recall** of (metric, label): of the metric's units that carry the label, the share that
  fail; **precision**: of the metric's units that fail, the share that carry the label (a
  unit may carry several labels, so a metric's precisions over labels may add up past 1;
  the row ``any`` counts units carrying at least one fault, and ``false_alarm_rate`` is the
  share of units carrying none that fail); **recall alone**: the recall over the units that
  carry this label and no other, free of the faults injected beside it (a sloppy frame
  carries several: a metric that sees one of them fails every unit it shows);
- **correlation**: per story run (model × condition × story), the metric's story value as
  VinaBench aggregates it (the mean of its units) against vsb's memory coherence (the rule
  checker's pass rate over the story's memory requirements), Spearman's ρ over the story runs.

Written as ``validation/vinabench_validity.json`` (``VinaValidityReport``) and
``validation/vinabench_validity.csv`` (one row per simulator, metric and label).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from vsb.evaluators.vina.questions import METRICS, SAMPLE_METRICS
from vsb.fsio import atomic_write_json, atomic_write_text, csv_text
from vsb.story.models import TAXONOMY
from vsb.validation.matching import Fault, Frame

VALIDITY_JSON = "validation/vinabench_validity.json"
VALIDITY_CSV = "validation/vinabench_validity.csv"
VALIDITY_FORMAT_VERSION = "1.0"
#: The pooled row's model name.
ALL = "all"
#: The label row of units carrying any fault.
ANY = "any"
CSV_HEADER = ("model", "metric", "label", "units", "caught", "recall", "failed", "precision",
              "alone", "caught_alone", "recall_alone")  # fmt: skip

Unit = tuple[str, str, str, str, tuple[int, ...], str]
"""(model, condition, story_id, metric, scenes shown, what it asks about)."""


class LabelValidity(BaseModel):
    """One metric against one fault label on one simulator's frames (or all pooled)."""

    model_config = ConfigDict(extra="forbid")
    model: str = Field(description="Simulator, or 'all'.")
    metric: str = Field(description="VinaBench metric (entity_align … location_consist).")
    label: str = Field(description="Fault label (taxonomy), or 'any'.")
    units: int = Field(ge=0, description="The metric's units carrying a fault of the label.")
    caught: int = Field(ge=0, description="Of those, the units that fail.")
    recall: float | None = Field(description="caught / units (null: no unit).")
    failed: int = Field(ge=0, description="The metric's units that fail, whatever they carry.")
    precision: float | None = Field(description="caught / failed (null: none failed).")
    alone: int = Field(ge=0, description="Units carrying this label and no other.")
    caught_alone: int = Field(ge=0, description="Of those, the units that fail.")
    recall_alone: float | None = Field(
        description="caught_alone / alone: the recall free of the faults injected beside it."
    )


class MetricValidity(BaseModel):
    """One metric on one simulator's frames (or all pooled): its units and correlation."""

    model_config = ConfigDict(extra="forbid")
    model: str
    metric: str
    unit: str = Field(description="'scene' (alignment) or 'question' (consistency).")
    units: int = Field(ge=0, description="Units asked.")
    failed: int = Field(ge=0, description="Units that fail.")
    clean: int = Field(ge=0, description="Units carrying no visual fault.")
    false_alarms: int = Field(ge=0, description="Clean units that fail.")
    false_alarm_rate: float | None = Field(description="false_alarms / clean.")
    spearman: float | None = Field(
        description="Spearman ρ of the story value with memory coherence (rules); null: fewer "
        "than 3 story runs, or either side constant."
    )
    stories: int = Field(ge=0, description="Story runs with both values.")


class VinaValidityReport(BaseModel):
    """``validation/vinabench_validity.json``."""

    model_config = ConfigDict(extra="forbid")
    version: str = Field(default=VALIDITY_FORMAT_VERSION)
    judge: str = Field(description="The reference judge asked (literal: vsb's extractor).")
    models: list[str] = Field(description="The simulators whose frames were asked about.")
    conditions: list[str]
    questions: int = Field(ge=0, description="Questions asked (answered without a call too).")
    metrics: list[MetricValidity]
    labels: list[LabelValidity] = Field(description="Rows with at least one unit carrying it.")

    def pools(self) -> list[str]:
        """The simulators, then 'all' when there are several."""
        return list(dict.fromkeys(m.model for m in self.metrics))

    def metric(self, model: str, metric: str) -> MetricValidity | None:
        """The row of ``metric`` on ``model``'s frames."""
        return next((m for m in self.metrics if (m.model, m.metric) == (model, metric)), None)

    def label(self, model: str, metric: str, label: str) -> LabelValidity | None:
        """The row of ``metric`` against ``label`` on ``model``'s frames."""
        key = (model, metric, label)
        return next((r for r in self.labels if (r.model, r.metric, r.label) == key), None)

    def matrix(self, model: str) -> list[tuple[str, list[LabelValidity | None]]]:
        """Fault label x metric on ``model``'s frames (labels in taxonomy order, then
        'any'): each label carried by some unit, with its row per metric of ``METRICS``."""
        rows = {(r.label, r.metric): r for r in self.labels if r.model == model}
        labels = [x for x in (*TAXONOMY, ANY) if any(k[0] == x for k in rows)]
        return [(x, [rows.get((x, m)) for m in METRICS]) for x in labels]


def _units(answers: Iterable[dict[str, Any]]) -> dict[Unit, float]:
    """Unit -> its value (the mean of its questions' values: entities share a scene)."""
    acc: dict[Unit, list[float]] = defaultdict(list)
    for a in answers:
        metric = a["metric"]
        about = a["subject"] if metric in SAMPLE_METRICS else ""
        unit = (a["model"], a["condition"], a["story_id"], metric, tuple(a["scenes"]), about)
        acc[unit].append(float(a["value"]))
    return {u: sum(v) / len(v) for u, v in acc.items()}


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ (average ranks for ties); None for fewer than 3 pairs or a constant
    side. numpy only: the judging process loads no statistics library."""
    import numpy as np

    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None

    def ranks(v: Sequence[float]) -> Any:
        a = np.asarray(v, dtype=float)
        order = np.argsort(a, kind="mergesort")
        r = np.empty(len(a))
        r[order] = np.arange(1, len(a) + 1)
        for value in np.unique(a):  # ties: the mean of their ranks
            tied = a == value
            r[tied] = r[tied].mean()
        return r

    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def validity(
    answers: Sequence[dict[str, Any]],
    faults: Iterable[Fault],
    coherence: dict[tuple[str, str, str], float],
    judge: str = "literal",
) -> VinaValidityReport:
    """The report (module docstring) from the questions' answers, the oracle's faults and
    the rule checker's memory coherence per story run."""
    labels: dict[Frame, set[str]] = defaultdict(set)
    for f in faults:
        if f.visual:
            labels[f.frame].add(f.taxonomy)
    units = _units(answers)
    models = sorted({u[0] for u in units})
    pools = [*((m, [m]) for m in models), *([(ALL, models)] if len(models) > 1 else [])]
    carried = {u: set().union(*(labels.get((*u[:3], k), set()) for k in u[4])) for u in units}
    metrics, rows = [], []
    for name, members in pools:
        for metric in METRICS:
            mine = [u for u in units if u[3] == metric and u[0] in members]
            if not mine:
                continue
            failed = [u for u in mine if units[u] < 1.0]
            clean = [u for u in mine if not carried[u]]
            alarms = sum(units[u] < 1.0 for u in clean)
            stories = _story_values(mine, units)
            both = sorted(set(stories) & set(coherence))
            metrics.append(MetricValidity(
                model=name, metric=metric,
                unit="question" if metric in SAMPLE_METRICS else "scene",
                units=len(mine), failed=len(failed), clean=len(clean), false_alarms=alarms,
                false_alarm_rate=_ratio(alarms, len(clean)),
                spearman=spearman([stories[s] for s in both], [coherence[s] for s in both]),
                stories=len(both),
            ))  # fmt: skip
            for label in (*TAXONOMY, ANY):
                has = [u for u in mine if (carried[u] if label == ANY else label in carried[u])]
                if not has:
                    continue
                caught = sum(units[u] < 1.0 for u in has)
                alone = [u for u in has if label == ANY or len(carried[u]) == 1]
                caught_alone = sum(units[u] < 1.0 for u in alone)
                rows.append(LabelValidity(
                    model=name, metric=metric, label=label, units=len(has), caught=caught,
                    recall=_ratio(caught, len(has)), failed=len(failed),
                    precision=_ratio(caught, len(failed)), alone=len(alone),
                    caught_alone=caught_alone, recall_alone=_ratio(caught_alone, len(alone)),
                ))  # fmt: skip
    return VinaValidityReport(
        judge=judge,
        models=models,
        conditions=sorted({u[1] for u in units}),
        questions=len(answers),
        metrics=metrics,
        labels=rows,
    )


def _story_values(mine: list[Unit], units: dict[Unit, float]) -> dict[tuple[str, str, str], float]:
    """Story run -> the mean of its units' values (VinaBench's aggregation in one story)."""
    acc: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for u in mine:
        acc[u[:3]].append(units[u])
    return {s: sum(v) / len(v) for s, v in acc.items()}


def rules_coherence(rows: Any, models: Sequence[str]) -> dict[tuple[str, str, str], float]:
    """Memory coherence per story run of ``models`` (the rule checker's rows of a
    ``RequirementRows``; ``vsb.validation.signals.memory_coherence``)."""
    from vsb.validation.signals import memory_coherence

    wanted = set(models)
    keep = [e == "rules" and m in wanted for e, m in zip(rows.evaluator, rows.model, strict=True)]
    return memory_coherence(rows.view(keep))


def write_validity(release_dir: str | Path, report: VinaValidityReport) -> list[Path]:
    """Write ``VALIDITY_JSON`` and ``VALIDITY_CSV`` under ``release_dir`` atomically."""
    root = Path(release_dir)
    out_json, out_csv = root / VALIDITY_JSON, root / VALIDITY_CSV
    out_json.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out_json, report.model_dump(mode="json"))
    fmt = lambda v: None if v is None else f"{v:.4f}"  # noqa: E731
    atomic_write_text(out_csv, csv_text(CSV_HEADER, [
        [r.model, r.metric, r.label, r.units, r.caught, fmt(r.recall), r.failed, fmt(r.precision),
         r.alone, r.caught_alone, fmt(r.recall_alone)]
        for r in report.labels
    ]))  # fmt: skip
    return [out_json, out_csv]
