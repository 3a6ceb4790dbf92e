"""``vsb run``: generate a run directory (a thin wrapper over ``vsb.run.runner.run``).

Exit status: 0 when every requested model ran to the end (single images may have failed:
they count as failed in the scores); 3 when a requested model was skipped (no credential,
quota spent), every request of a model failed, or the run stopped at ``--budget`` — the
lines on stderr name which; 1 on bad input (one line, no traceback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from vsb.cli.options import (
    base_url_option,
    budget_option,
    cache_option,
    dry_run_option,
    executor_from,
    local_adapters,
    local_model_options,
    report_waits,
    stories_options,
    timeout_option,
    workers_option,
)
from vsb.store.cache import failed_checks_note

#: Exit status of a run that is not whole (a model skipped or all failed, a budget stop).
INCOMPLETE = 3


@click.command("run")
@click.option(
    "--suite", "suite_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Suite directory (suite.json + <story>.json).",
)  # fmt: skip
@click.option(
    "--model", "models", required=True,
    help="Model name(s), comma-separated: registered names (`vsb models`) or patterns "
    "openai:MODEL, replicate:OWNER/NAME[:VERSION], stability:MODEL, imagen:MODEL, "
    "stored:SOURCE, diffusers:MODEL_ID_OR_DIR, python:MODULE:FUNCTION (a function of the "
    "request returning a PIL image or PNG bytes; MODULE on PYTHONPATH).",
)  # fmt: skip
@click.option(
    "--condition",
    "conditions",
    required=True,
    help="Condition name(s), comma-separated; all = the six main ones, ablations = the four "
    "structured_memory-no_* variants, predicted_memory[-errNN] = structured memory as an "
    "extractor reads it, NN % of facts wrong (e.g. all,random_context,ablations).",
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", default=0, show_default=True, help="Run seed (same seed, same images).")
@workers_option(
    "Processes for simulators and stored samples (and threads for adapters that set no "
    "concurrency of their own)."
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=None,
    help="Requests at a time, per model (default: the adapter's: 8 for HTTP providers; "
    "--workers for the others).",
)  # fmt: skip
@cache_option("Generation cache directory.")
@click.option(
    "--pricing", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Pricing file (default: config/pricing.json).",
)  # fmt: skip
@dry_run_option(
    "Send nothing: print, per model, the requests not yet cached and their estimated "
    "cost (config/pricing.json, with its as-of date; unknown prices stay unknown)."
)
@budget_option(
    "Stop before a paid request that could take this run's spending past USD "
    "(everything done so far is saved; a rerun reuses it from the cache)."
)
@base_url_option(
    "openai: models: an OpenAI-compatible images endpoint (default: OPENAI_BASE_URL, "
    "else https://api.openai.com/v1; a loopback server needs no key)."
)
@click.option(
    "--max-attempts", type=click.IntRange(min=1), default=5, show_default=True,
    help="Attempts per request on transient failures (timeouts, 408/409/429/5xx).",
)  # fmt: skip
@click.option(
    "--retry-delay", type=click.FloatRange(min=0), default=1.0, show_default=True,
    help="First backoff in seconds (doubling, with jitter; Retry-After is a floor).",
)  # fmt: skip
@click.option(
    "--samples", "samples_dir", default=None, type=click.Path(file_okay=False, path_type=Path),
    help="For stored:SOURCE models: directory of images made elsewhere "
    "(<dir>/<SOURCE>/<condition>/<story>/scene_<kk>.png).",
)  # fmt: skip
@click.option(
    "--layout", type=click.Choice(["vsb", "vinabench"]), default="vsb", show_default=True,
    help="How --samples DIR/SOURCE is laid out: vsb's (<condition>/<story>/scene_<kk>.png) "
    "or VinaBench's inference output (<index>_<tid>.jpg, one image per scene for every "
    "condition). vinabench:gold reads VinaBench's annotations folder as --samples DIR.",
)  # fmt: skip
@click.option(
    "--samples-source", default=None,
    help="With --model stored: the source (the same as --model stored:SOURCE).",
)  # fmt: skip
@stories_options
@timeout_option
@local_model_options
@click.pass_context
def run(
    ctx: click.Context,
    suite_dir: Path,
    models: str,
    conditions: str,
    out_dir: Path,
    seed: int,
    workers: int,
    concurrency: int | None,
    cache_dir: Path,
    pricing: Path | None,
    dry_run: bool,
    budget: float | None,
    base_url: str | None,
    max_attempts: int,
    retry_delay: float,
    samples_dir: Path | None,
    samples_source: str | None,
    layout: str,
    timeout_s: float | None,
    stories: str | None,
    limit: int | None,
    **model_options: Any,
) -> None:
    """Generate every (story, scene, model, condition) image into OUT (resumable via the cache).

    One run at a time per OUT (a second one fails at once, naming the pid holding OUT); runs
    on different OUTs may share --cache and never generate the same image twice. Every
    adapter call — every attempt — is in OUT/ledger.sqlite before it is sent, even after a
    kill (see `vsb ledger`). Exit status 3 when a model was skipped, all of a model's
    requests failed, or --budget stopped the run."""
    from vsb.adapters.registry import get_adapter, resolve_models
    from vsb.conditions import resolve_conditions
    from vsb.run.runner import RunConfig
    from vsb.run.runner import run as run_suite
    from vsb.run.selection import chosen_ids, parse_ids, subset_suite
    from vsb.store.calls import RetryPolicy

    # --stories / --limit: a suite of those stories alone, removed when the command ends
    ids = chosen_ids(suite_dir, parse_ids(stories), limit)
    suite_dir = ctx.with_resource(subset_suite(suite_dir, ids))

    names = resolve_models(models)
    if samples_source:  # the older spelling: --model stored --samples-source SOURCE
        names = [f"stored:{samples_source}" if n == "stored" else n for n in names]
    config = RunConfig(
        suite_dir=suite_dir,
        models=list(dict.fromkeys(names)),
        conditions=resolve_conditions(conditions),
        out=out_dir,
        seed=seed,
        workers=max(workers, model_options["batch_size"]),
        executor=executor_from(model_options),
        cache_dir=cache_dir,
        pricing=pricing,
        concurrency=concurrency,
        budget_usd=budget,
        retry=RetryPolicy(max_attempts=max_attempts, base_delay_s=retry_delay),
    )
    given: dict[str, Any] = {}
    for m in config.models:
        if m.startswith("stored:"):
            given[m] = get_adapter(m, root=samples_dir, layout=layout)
        elif m.startswith("vinabench:"):
            given[m] = get_adapter(m, root=samples_dir)
        elif m.startswith("openai:") and base_url:
            given[m] = get_adapter(m, base_url=base_url, client=_client(ctx, timeout_s))
        elif timeout_s is not None and (
            m.split(":")[0] in _HTTP_PROVIDERS or _plugin_takes_client(m)
        ):
            given[m] = get_adapter(m, client=_client(ctx, timeout_s))
    given.update(local_adapters(config.models, **model_options))
    if dry_run:
        _print_plan(config, given)
        return
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

        paid = any(m.split(":")[0] in _HTTP_PROVIDERS for m in config.models)
        with report_waits(timeout_s, paid):
            result = run_suite(config, progress, adapters=given)
    for model, conds in result.not_supported.items():
        click.echo(
            f"not run: {model} under {', '.join(conds)} (the model takes no image input)",
            err=True,
        )
    refused = f", {result.refused} of them refused" if result.refused else ""
    checks = failed_checks_note(result.failed_checks)
    click.echo(
        f"{result.images} images ({result.calls} generated, {result.hits} from cache, "
        f"{result.failures} failed{refused}{checks}) in {result.seconds:.1f} s -> {out_dir}"
    )
    if cut := result.cut_lines():
        click.echo(f"prompts cut by the text encoder: {', '.join(cut)}")
    if failed := result.failed_line():
        click.echo(failed)
    for model, (n, first) in result.errors.items():
        click.echo(f"{model}: {n} failed; first: {first}", err=True)
    problems = result.problems()
    for line in problems:
        click.echo(line, err=True)
    if problems:
        click.echo(f"incomplete run: exit status {INCOMPLETE}", err=True)
        ctx.exit(INCOMPLETE)


#: The model prefixes of HTTP providers (their client takes ``--timeout``).
_HTTP_PROVIDERS = ("openai", "replicate", "stability", "imagen")


def _plugin_takes_client(name: str) -> bool:
    """Whether plug-in model ``name``'s factory takes ``client=`` (an httpx.Client, which then
    carries ``--timeout``); a warning says so when it does not (a built-in: False, silent)."""
    import inspect

    from vsb.adapters.registry import adapter_entry, get_factory

    entry = adapter_entry(name)
    if entry is None or entry.source == "vsb":
        return False
    if "client" in inspect.signature(get_factory(name)).parameters:
        return True
    click.echo(
        f"warning: --timeout does not reach {name}: its factory takes no client= (an "
        "httpx.Client, docs/PLUGINS.md), so its requests wait as long as it lets them",
        err=True,
    )
    return False


def _client(ctx: click.Context, timeout_s: float | None) -> Any:
    """An HTTP provider's client under ``--timeout`` (closed with the command), or None
    (the adapter makes its own)."""
    if timeout_s is None:
        return None
    from vsb.adapters.providers._http import default_client

    http = default_client(timeout_s)
    ctx.call_on_close(http.close)
    return http


def _print_plan(config: Any, given: dict[str, Any]) -> None:
    from vsb.run.plan import plan_run

    plan = plan_run(config, given)

    def usd(x: float | None, digits: int = 4) -> str:
        return "unknown" if x is None else f"{x:.{digits}f}"

    click.echo(f"dry run: nothing sent (prices: {plan.pricing or 'none'})")
    header = ("model", "requests", "cached", "to send", "USD/image", "as of", "estimate USD")
    rows = [header]
    for p in plan.models:
        if p.skipped is not None:
            click.echo(f"would be skipped now: {p.model}: {p.skipped}", err=True)
        for c in p.not_supported:
            click.echo(f"not run: {p.model} under {c} (the model takes no image input)", err=True)
        rows.append(
            (p.model, str(p.requests), str(p.cached + p.refused), str(p.to_send),
             usd(p.usd_per_image, 3), p.price_as_of or "—", usd(p.estimate_usd))
        )  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                             enumerate(zip(r, widths, strict=True))))  # fmt: skip
    click.echo(f"total estimate: {usd(plan.total_usd)} USD")
