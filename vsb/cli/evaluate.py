"""``vsb evaluate``: evaluate a run directory (a thin wrapper over ``evaluate_run``)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@click.command("evaluate")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--workers", default=1, show_default=True, help="Parallel worker processes.")
def evaluate(run_dir: Path, workers: int) -> None:
    """Run the extractor, rule checker and pairwise signals over RUN_DIR's images."""
    from vsb.evaluators.evaluate import evaluate_run

    console = Console(stderr=True)
    columns = (
        TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
    )  # fmt: skip
    # auto_refresh=False: no refresh thread while the worker pool forks.
    with Progress(*columns, console=console, auto_refresh=False, transient=True) as bar:
        task = bar.add_task("evaluate", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, refresh=True)

        result = evaluate_run(run_dir, progress=progress, workers=workers)
    rate = result.passed / result.requirements if result.requirements else 0.0
    click.echo(
        f"{result.images} images, {result.requirements} requirement checks "
        f"({rate:.1%} passed), {result.signals} signals -> {result.out_dir}"
    )
