"""``vsb compare-runs RUN_A RUN_B``: prompt sensitivity between two runs of the same stories."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

from vsb.cli.options import RUN_PATH, bootstrap_options, cells_options


def _names(spec: str | None) -> list[str] | None:
    if spec is None:
        return None
    return [n.strip() for n in spec.split(",") if n.strip()] or None


@click.command("compare-runs")
@click.argument("run_a", type=RUN_PATH)
@click.argument("run_b", type=RUN_PATH)
@click.option(
    "--evaluator",
    default=None,
    help="Whose verdicts to compare (default: rules if present, else the only evaluator).",
)
@cells_options
@click.option(
    "--metric",
    "metrics",
    default="global,adherence,coherence",
    show_default=True,
    help="Metrics to print (comma-separated; dimensions too). Every metric is written.",
)
@click.option(
    "--out",
    "out_dir",
    type=RUN_PATH,
    default=None,
    help="Write prompt_sensitivity.json and .csv here (default: RUN_A/sensitivity/).",
)
@bootstrap_options()
def compare_runs(
    run_a: Path,
    run_b: Path,
    evaluator: str | None,
    models: str | None,
    conditions: str | None,
    metrics: str,
    out_dir: Path | None,
    seed: int,
    resamples: int,
) -> None:
    """Prompt sensitivity: RUN_A − RUN_B for every model and condition evaluated in both,
    paired by story (the runs must hold the same stories and requirements, e.g. the plain
    and --paraphrase suites of one seed), per score and dimension with its bootstrap CI.

    Example: vsb compare-runs run run-paraphrase --condition structured_memory"""
    from vsb.errors import InputError
    from vsb.release.manifest import refuse_frozen
    from vsb.scores.compute import Resampling
    from vsb.scores.sensitivity import SENSITIVITY_DIR, compare_runs, write_sensitivity
    from vsb.scores.stats.aggregate import ALL_METRICS

    if out_dir is None:
        refuse_frozen(run_a, f"{SENSITIVITY_DIR}/", "pass --out DIR")

    shown = _names(metrics) or []
    for m in shown:
        if m not in ALL_METRICS:
            raise InputError(f"unknown metric {m!r}; metrics: {', '.join(ALL_METRICS)}")
    report = compare_runs(
        run_a,
        run_b,
        evaluator=evaluator,
        models=_names(models),
        conditions=_names(conditions),
        settings=Resampling(seed=seed, n_resamples=resamples),
    )
    paths = write_sensitivity(out_dir or Path(run_a) / SENSITIVITY_DIR, report)
    console = Console()
    console = console if console.is_terminal else Console(width=140)
    table = Table(
        title=f"{run_a} − {run_b} (evaluator {report.evaluator})",
        box=box.SIMPLE_HEAD,
        caption="* paired 95% CI excludes 0: the wording moved the score",
    )
    for i, col in enumerate(("model", "condition", "metric", "A", "B", "Δ", "95% CI", "n")):
        table.add_column(col, justify="left" if i < 3 else "right", no_wrap=True)
    for r in report.rows:
        if r.metric not in shown or (r.metric == "adherence" and r.metric_kind == "dimension"):
            continue
        lo, hi = r.ci_low, r.ci_high
        star = "*" if lo is not None and hi is not None and (lo > 0 or hi < 0) else ""
        ci = "—" if lo is None or hi is None else f"[{lo:+.3f}, {hi:+.3f}]"
        table.add_row(
            r.model, r.condition, r.metric, f"{r.a_score:.3f}", f"{r.b_score:.3f}",
            f"{r.diff:+.3f}{star}", ci, str(r.n_stories),
        )  # fmt: skip
    console.print(table)
    for side, cells in (("A", report.only_a), ("B", report.only_b)):
        if cells:
            click.echo(f"only in run {side} (not compared): {', '.join(cells)}")
    click.echo(f"wrote {len(paths)} files to {paths[0].parent}")
