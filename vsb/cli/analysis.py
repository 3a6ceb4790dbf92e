"""``vsb analysis RUN``: memory gain, placebo, predicted memory and field ablations with
paired CIs (thin)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.console import Console
from rich.table import Table

from vsb.cli.options import RUN_PATH, bootstrap_options, evaluators_option, run_dir_argument

if TYPE_CHECKING:
    from vsb.scores.analysis import AnalysisReport, Effect

#: Short column headings of the ablation table (the metric names are long).
_SHORT = {
    "identity": "ident.", "clothing": "cloth.", "object_persistence": "obj.pers.",
    "object_state": "obj.state", "spatial": "spatial", "environment": "env.",
    "causal": "causal", "chronology": "chron.", "action": "action", "adherence": "adher.",
    "coherence": "COHER.", "global": "GLOBAL",
}  # fmt: skip


def _console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=140)


def _table(title: str, columns: tuple[str, ...], caption: str = "") -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, caption=caption or None)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    return table


def _delta(lo: float | None, hi: float | None, d: float) -> str:
    """Δ with a star when its CI excludes 0."""
    star = "*" if lo is not None and hi is not None and (lo > 0 or hi < 0) else ""
    return f"{d:+.3f}{star}"


def _ci(e: Effect | None) -> tuple[str, str]:
    if e is None:
        return "—", "—"
    if e.ci_low is None or e.ci_high is None:
        return f"{e.diff:+.3f}", "—"
    return f"{e.diff:+.3f}", f"[{e.ci_low:+.3f}, {e.ci_high:+.3f}]"


#: The two gain tables: (effects shown, column labels, title, caption).
_GAIN_TABLES = (
    (
        ("memory_gain", "placebo_gain", "memory_vs_placebo"),
        ("memory gain", "placebo gain", "memory − placebo"),
        "structured_memory − independent, random_context − independent, structured_memory − "
        "random_context",
        "paired story-level bootstrap; a gain that is memory shows a placebo gain near 0",
    ),
    (
        ("memory_gain", "predicted_gain", "memory_vs_predicted"),
        ("memory gain", "predicted gain", "memory − predicted"),
        "memory gain under imperfect extraction: structured_memory − independent, "
        "predicted_memory − independent, structured_memory − predicted_memory",
        "paired story-level bootstrap; memory − predicted near 0: the gain survives extraction",
    ),
)


def _gains(report: AnalysisReport, evaluator: str, metric: str) -> list[Table]:
    effects = [e for e in report.effects if e.evaluator == evaluator and e.metric == metric]
    out = []
    for i, (kinds, labels, title, caption) in enumerate(_GAIN_TABLES):
        # the first table shows the memory gain alone too; the second needs a predicted run
        shown = kinds if i == 0 else kinds[1:]
        models = list(dict.fromkeys(e.model for e in effects if e.effect in shown))
        if not models:
            continue
        cols = [c for label in labels for c in (label, "95% CI")]
        table = _table(f"{metric}: {title} (evaluator {evaluator})", ("model", *cols), caption)
        for m in models:
            by: dict[str, Effect] = {e.effect: e for e in effects if e.model == m}
            table.add_row(m, *(x for kind in kinds for x in _ci(by.get(kind))))
        out.append(table)
    return out


def _ablations(report: AnalysisReport, evaluator: str, model: str) -> list[Table]:
    from vsb.story.models import DIMENSIONS

    effects = [
        e
        for e in report.effects
        if e.evaluator == evaluator and e.model == model and e.effect == "ablation"
    ]
    if not effects:
        return []
    metrics = [*DIMENSIONS, "coherence", "global"]
    shown = [m for m in metrics if any(e.metric == m for e in effects)]
    dims = _table(
        f"{model}: what remembering each group buys, structured_memory − ablation",
        ("removed", *(_SHORT.get(m, m) for m in shown)),
        "dimensions, then coherence and global; * paired 95% CI excludes 0; every CI is in "
        "RUN/analysis/effects.csv",
    )
    for abl in dict.fromkeys(e.condition_b for e in effects):
        by = {e.metric: e for e in effects if e.condition_b == abl}
        cells = [_delta(by[m].ci_low, by[m].ci_high, by[m].diff) if m in by else "—" for m in shown]
        dims.add_row(abl.rsplit("-no_", 1)[-1], *cells)
    out = [dims]
    groups = [g for g in report.fact_groups if g.evaluator == evaluator and g.model == model]
    if groups:
        names = list(dict.fromkeys(g.group for g in groups))
        table = _table(
            f"{model}: fault-rate change of each fact group, ablation − structured_memory "
            "(memory checks)",
            ("removed", *names),
            "* paired 95% CI excludes 0; memory in use: only the removed group changes",
        )
        for abl in dict.fromkeys(g.ablation for g in groups):
            by_g = {g.group: g for g in groups if g.ablation == abl}
            table.add_row(
                abl.rsplit("-no_", 1)[-1],
                *(
                    _delta(by_g[n].ci_low, by_g[n].ci_high, by_g[n].diff) if n in by_g else "—"
                    for n in names
                ),
            )
        out.append(table)
    return out


@click.command()
@run_dir_argument
@evaluators_option("Only these evaluators (default: every one that applied).")
@click.option(
    "--metric",
    default="coherence",
    show_default=True,
    help="Metric of the gain table: coherence, adherence, conditional_coherence, global, "
    "or a dimension.",
)
@click.option(
    "--out",
    "out_dir",
    type=RUN_PATH,
    default=None,
    help="Write the tables here (default: RUN_DIR/analysis/; use it for a frozen release).",
)
@bootstrap_options()
def analysis(
    run_dir: Path,
    evaluators: str | None,
    metric: str,
    out_dir: Path | None,
    seed: int,
    resamples: int,
) -> None:
    """Is the memory gain really memory? Memory gain, placebo gain (random_context), the gain
    under imperfect extraction (predicted_memory) and the field ablations
    (structured_memory-no_*), each a paired story-level difference with its CI, written to
    RUN_DIR/analysis/ (analysis.json, effects.csv, fact_groups.csv).

    Run the conditions first, e.g. vsb run … --condition
    all,random_context,predicted_memory,ablations."""
    from vsb.errors import InputError
    from vsb.scores.analysis import analyze_run, write_analysis
    from vsb.scores.compute import Resampling
    from vsb.scores.stats.aggregate import ALL_METRICS

    if metric not in ALL_METRICS:
        raise InputError(f"unknown metric {metric!r}; metrics: {', '.join(ALL_METRICS)}")
    from vsb.release.manifest import refuse_frozen

    if out_dir is None:
        refuse_frozen(run_dir, "analysis/", "pass --out DIR")
    settings = Resampling(seed=seed, n_resamples=resamples)
    report = analyze_run(run_dir, evaluators=evaluators, settings=settings)
    paths = write_analysis(run_dir, report, out_dir)
    console = _console()
    for ev in report.evaluators:
        for gains in _gains(report, ev, metric):
            console.print(gains)
        for model in dict.fromkeys(e.model for e in report.effects if e.evaluator == ev):
            for table in _ablations(report, ev, model):
                console.print(table)
    click.echo(f"wrote {len(paths)} files to {paths[0].parent}")
