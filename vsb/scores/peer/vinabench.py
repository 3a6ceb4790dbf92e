"""VinaBench's table (``scores/vinabench.csv``): a row per model, condition and VinaBench
portion, its metrics averaged as VinaBench's scripts average them, with story-bootstrap CIs.

The ``vinabench`` evaluator writes one signal row per unit (``vsb.evaluators.vinabench``:
a scene for the alignment metrics, the sample for the consistency ones); VinaBench's score
of a metric in a portion is the mean of its units' values there (its ``np.mean`` over the
list it appends to per scene or per sample), so a story of many scenes weighs more in an
alignment metric than a short one, as in VinaBench. ``clip_t`` and ``clip_t_mrr`` are the
means over frames of the ``clip`` evaluator's ``clip_text`` and ``clip_image_rr`` signals of
the portion's stories (VinaBench's CLIP-T and CLIP-T-MRR; comparable with its figures under
ViT-L/14), empty when the run has none. ``clip_i`` is the mean over pairs of the
``vinabench_ref`` evaluator's per-frame cosines with the gold image
(``vsb.evaluators.vina.reference``), averaged and bootstrapped as the other columns; ``fid``
is that evaluator's set row of the (model, condition, portion), FID of all its pairs, with
no interval: FID is a statistic of the whole set, biased in the number of images, and a
story bootstrap, which repeats images, shrinks the features' covariance and moves FID away
from the estimate, so a percentile interval of resampled FIDs would not be centred on it
(and costs a 2048-dimensional matrix root per draw). Both are empty (``reference_note``
says how to fill them) when the run has no ``vinabench_ref`` rows.

Intervals: the story bootstrap of every other score (``Resampling.weights``: stories drawn
with replacement within the portion), each metric's resampled value the ratio of the drawn
stories' sums and counts; percentile intervals.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from vsb.evaluators.vina.questions import METRICS, PREFIX, parse_signal
from vsb.evaluators.vina.reference import EVALUATOR as REFERENCE
from vsb.evaluators.vina.reference import REFERENCE_METRICS
from vsb.fsio import atomic_write_text, csv_text
from vsb.scores.inputs import SignalRows
from vsb.scores.stats.bootstrap import Resampling, nan_to_none, percentile_interval

#: The table's metric columns, in VinaBench's order (each with ``_ci_low``/``_ci_high``).
COLUMNS = ("fid", "clip_i", "clip_t", "clip_t_mrr", *METRICS)
#: The CLIP signals behind ``clip_t`` and ``clip_t_mrr``: column -> (evaluator, signal).
CLIP = {"clip_t": ("clip", "clip_text"), "clip_t_mrr": ("clip", "clip_image_rr")}
HEADER = ("model", "portion", *(f"{c}{s}" for c in COLUMNS for s in ("", "_ci_low", "_ci_high")),
          "condition", "stories")  # fmt: skip
FILE = "vinabench.csv"

Cell = tuple[str, str, str]  # (model, condition, portion)
Sums = dict[Cell, dict[str, dict[str, list[float]]]]


def _reference(name: str) -> tuple[str, str] | None:
    """(portion, metric) of a ``vinabench_ref`` signal (None: not one)."""
    portion, _, metric = name.removeprefix(PREFIX).partition(".")
    ok = name.startswith(PREFIX) and metric in REFERENCE_METRICS
    return (portion, metric) if ok else None


def _sums(signals: SignalRows) -> tuple[Sums, dict[Cell, float]]:
    """(model, condition, portion) -> column -> story -> [sum, count]; and each cell's FID
    (its set row)."""
    portion_of: dict[tuple[str, str, str], str] = {}
    acc: Sums = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: [0.0, 0.0])))
    fids: dict[Cell, float] = {}
    cols = zip(signals.model, signals.condition, signals.story_id, signals.signal,
               signals.value, signals.evaluator, strict=True)  # fmt: skip
    clip_rows = []
    for m, c, s, name, v, ev in cols:
        ref = _reference(name) if ev == REFERENCE else None
        if ref is not None and ref[1] == "fid":
            fids[(m, c, ref[0])] = v
            acc[(m, c, ref[0])]  # the cell has a row
            continue
        if ref is not None:
            portion_of[(m, c, s)] = ref[0]
            cell = acc[(m, c, ref[0])][ref[1]][s]
            cell[0] += v
            cell[1] += 1
            continue
        if ev != "vinabench":
            if (ev, name) in CLIP.values():
                clip_rows.append((m, c, s, name, v, ev))
            continue
        found = parse_signal(name)
        if found is None:
            continue
        portion, metric = found
        portion_of[(m, c, s)] = portion
        cell = acc[(m, c, portion)][metric][s]
        cell[0] += v
        cell[1] += 1
    by_signal = {v: k for k, v in CLIP.items()}
    for m, c, s, name, v, ev in clip_rows:
        found_portion = portion_of.get((m, c, s))
        if found_portion is not None:
            cell = acc[(m, c, found_portion)][by_signal[(ev, name)]][s]
            cell[0] += v
            cell[1] += 1
    return acc, fids


def vinabench_rows(signals: SignalRows, settings: Resampling | None = None) -> list[dict[str, Any]]:
    """One row per (model, condition, portion) with VinaBench's columns (``HEADER``)."""
    settings = settings or Resampling()
    rows = []
    cells, fids = _sums(signals)
    for (model, condition, portion), by_col in sorted(cells.items()):
        stories = sorted({s for col in by_col.values() for s in col})
        weights = settings.weights(len(stories))
        row: dict[str, Any] = {"model": model, "portion": portion, "condition": condition,
                               "stories": len(stories)}  # fmt: skip
        for col in COLUMNS:
            got = by_col.get(col)
            if not got:
                row.update({col: None, f"{col}_ci_low": None, f"{col}_ci_high": None})
                continue
            sums = np.array([got[s][0] if s in got else 0.0 for s in stories])
            counts = np.array([got[s][1] if s in got else 0.0 for s in stories])
            num, den = weights @ sums, weights @ counts
            with np.errstate(invalid="ignore", divide="ignore"):
                dist = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
            low, high = percentile_interval(dist[:, None], settings.confidence)
            row[col] = float(sums.sum() / counts.sum())
            row[f"{col}_ci_low"] = nan_to_none(float(low[0]))
            row[f"{col}_ci_high"] = nan_to_none(float(high[0]))
        row["fid"] = fids.get((model, condition, portion))  # a set statistic: no interval
        rows.append(row)
    return rows


def reference_note(rows: list[dict[str, Any]]) -> str | None:
    """Why ``fid`` and ``clip_i`` are empty, when they are in every row (None: filled)."""
    if not rows or any(r["fid"] is not None or r["clip_i"] is not None for r in rows):
        return None
    return (
        "fid and clip_i are empty: the run has no vinabench_ref rows; `vsb evaluate RUN "
        "--evaluator vinabench_ref --vinabench-file FILE` computes them against vinabench:gold "
        "(pip install 'vsb[fid,embed]', the FID Inception weights and "
        "openai/clip-vit-large-patch14; docs/vinabench.md)"
    )


def write_vinabench(
    scores_dir: str | Path, signals: SignalRows, settings: Resampling | None = None
) -> list[Path]:
    """Write ``scores_dir/vinabench.csv`` when the run has ``vinabench`` signals (and remove
    an older one when it has none); the paths written."""
    path = Path(scores_dir) / FILE
    rows = vinabench_rows(signals, settings)
    if not rows:
        path.unlink(missing_ok=True)
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, csv_text(HEADER, ([r[h] for h in HEADER] for r in rows)))
    return [path]
