"""``vsb run``: generate a run directory (a thin wrapper over ``vsb.runner.run``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from vsb.cache import DEFAULT_CACHE_DIR
from vsb.cli.model_options import executor_from, local_adapters, local_model_options


@click.command("run")
@click.option(
    "--suite", "suite_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Suite directory (suite.json + <story>.json).",
)  # fmt: skip
@click.option("--model", "models", required=True, help="Model name(s), comma-separated.")
@click.option(
    "--condition",
    "conditions",
    required=True,
    help="Condition name(s), comma-separated; all = the six main ones, ablations = the four "
    "structured_memory-no_* variants (e.g. all,random_context,ablations).",
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", default=0, show_default=True, help="Run seed (same seed, same images).")
@click.option(
    "--workers", default=2, show_default=True, type=click.IntRange(min=1),
    help="Parallel workers (stories).",
)  # fmt: skip
@click.option(
    "--cache", "cache_dir", default=DEFAULT_CACHE_DIR, show_default=True,
    type=click.Path(file_okay=False, path_type=Path), help="Generation cache directory.",
)  # fmt: skip
@click.option(
    "--pricing", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Pricing file (default: config/pricing.json).",
)  # fmt: skip
@click.option(
    "--samples", "samples_dir", default=None, type=click.Path(file_okay=False, path_type=Path),
    help="For --model stored: directory of images made elsewhere "
    "(<dir>/<source>/<condition>/<story>/scene_<kk>.png).",
)  # fmt: skip
@click.option(
    "--samples-source", default=None, help="For --model stored: the model that made the samples."
)
@local_model_options
def run(
    suite_dir: Path,
    models: str,
    conditions: str,
    out_dir: Path,
    seed: int,
    workers: int,
    cache_dir: Path,
    pricing: Path | None,
    samples_dir: Path | None,
    samples_source: str | None,
    **model_options: Any,
) -> None:
    """Generate every (story, scene, model, condition) image into OUT (resumable via the cache).

    One run at a time per OUT (a second one fails at once, naming the pid holding OUT); runs
    on different OUTs may share --cache and never generate the same image twice. Every
    adapter call is in OUT/ledger.sqlite, even after a kill (see `vsb ledger`)."""
    from vsb.adapters.registry import get_adapter, resolve_models
    from vsb.conditions import resolve_conditions
    from vsb.runner import RunConfig
    from vsb.runner import run as run_suite

    config = RunConfig(
        suite_dir=suite_dir,
        models=resolve_models(models),
        conditions=resolve_conditions(conditions),
        out=out_dir,
        seed=seed,
        workers=max(workers, model_options["batch_size"]),
        executor=executor_from(model_options),
        cache_dir=cache_dir,
        pricing=pricing,
    )
    console = Console(stderr=True)
    columns = (
        TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
    )  # fmt: skip
    # auto_refresh=False: no refresh thread while the worker pool forks.
    # off a terminal the bar is disabled: even transient, it leaves a blank line on stderr.
    off = not console.is_terminal
    with Progress(
        *columns, console=console, auto_refresh=False, transient=True, disable=off
    ) as bar:
        task = bar.add_task("run", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, refresh=True)

        given = {}
        if samples_dir is not None or samples_source is not None:
            given["stored"] = get_adapter("stored", root=samples_dir, source=samples_source)
        given.update(local_adapters(config.models, **model_options))
        result = run_suite(config, progress, adapters=given)
    for model, reason in result.skipped.items():
        click.echo(f"skipped {model}: {reason}", err=True)
    click.echo(
        f"{result.images} images ({result.calls} generated, {result.hits} from cache, "
        f"{result.failures} failed) in {result.seconds:.1f} s -> {out_dir}"
    )
