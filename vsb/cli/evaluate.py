"""``vsb evaluate``: judge a run directory (a thin wrapper over ``evaluate_run``).

Exit status: 0 when the evaluation was written; 1 on bad input or a judge that cannot be
reached (one line, no traceback); 3 when ``--budget`` stopped the judge (as ``vsb run``:
the answers received are cached, nothing is written); 4 when more than
``--max-parse-failures`` of the judge's answers could not be parsed (the evaluation is
written, the unparsable answers are not cached, so a rerun asks them again).
"""

from __future__ import annotations

import time
from dataclasses import fields
from itertools import pairwise
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from vsb.cli.options import (
    cache_option,
    cells_options,
    dry_run_option,
    evaluators_option,
    executor_options,
    judge_options,
    report_waits,
    run_dir_argument,
    timeout_option,
    workers_option,
)
from vsb.store.cache import failed_checks_note


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    return names or None


def _usd(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.4f} USD"


#: Exit status of a judge pass that --budget stopped (the same as ``vsb run``'s).
INCOMPLETE = 3
#: Exit status of a judge pass whose answers could mostly not be parsed.
UNPARSABLE = 4
#: Seconds between progress lines when stderr is not a terminal.
PROGRESS_EVERY_S = 30.0


class _Lines:
    """Progress as a line on stderr every ``PROGRESS_EVERY_S`` (stderr not a terminal)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.t0 = self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S and done < total:
            self.last = now
            click.echo(f"{self.what}: {done} of {total} calls, {now - self.t0:.0f} s", err=True)


def _classes(args: list[str]) -> list[type[Any]]:
    """The built-in evaluators' classes and those of the plug-ins ``--evaluator`` names."""
    from vsb.evaluators.registry import BUILTINS, evaluator_info

    named = [b if a == "--evaluator" else a.partition("=")[2] for a, b in pairwise([*args, ""])
             if a == "--evaluator" or a.startswith("--evaluator=")]  # fmt: skip
    wanted = dict.fromkeys([*BUILTINS, *",".join(named).split(",")])
    return [evaluator_info(n.strip()).load() for n in wanted if n.strip()]


class _EvaluateCommand(click.Command):
    """``vsb evaluate``: its own options, then each evaluator's (``cli_options``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["vsb.evaluators"] = _classes(args)
        return super().parse_args(ctx, args)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        *own, help_ = super().get_params(ctx)
        mine = [
            p
            for c in ctx.meta.setdefault("vsb.evaluators", _classes([]))
            for p in getattr(c, "cli_options", ())
        ]
        return [*own, *{p.name: p for p in mine}.values(), help_]


def _own_options(chosen: list[str], values: dict[str, Any], **shared: Any) -> dict[str, Any]:
    """Evaluator name -> its options, made of its command-line options' values (and the
    ``shared`` values its options type has fields for), for every chosen evaluator
    that has command-line options."""
    out = {}
    for cls in click.get_current_context().meta["vsb.evaluators"]:
        mine = {p.name: values[p.name] for p in getattr(cls, "cli_options", ())}
        unused = (
            [p.opts[0] for p in cls.cli_options if p.default is None and mine[p.name] is not None]
            if cls.name not in chosen
            else []
        )
        if unused:
            raise click.UsageError(f"{unused[0]} is only used by the {cls.name} evaluator")
        if cls.name in chosen and mine and getattr(cls, "Options", None) is not None:
            names = {f.name for f in fields(cls.Options)}
            given = {k: v for k, v in {**shared, **mine}.items() if k in names and v is not None}
            out[cls.name] = cls.Options(**given)
    return out


@click.command("evaluate", cls=_EvaluateCommand)
@run_dir_argument
@evaluators_option(
    "Evaluators to run: rules, pairwise, vlm, clip, dino. Default: rules and pairwise, plus "
    "vlm when --judge is given. Only the named evaluators' rows are replaced; others are kept."
)
@cells_options
@judge_options
@click.option(
    "--max-parse-failures",
    default=0.1,
    show_default=True,
    type=click.FloatRange(min=0, max=1),
    metavar="FRACTION",
    help="Exit with status 4 when more than this share of the judge's answers cannot be "
    "parsed (a broken judge or prompt format); they count as parse_failure, never a pass.",
)
@dry_run_option("Print the judge calls not yet cached and their estimated cost; call nothing.")
@cache_option("Where judge answers and embeddings are cached (a rerun pays nothing).")
@click.option(
    "--extraction-cache",
    is_flag=True,
    help="Also keep what the extractor read from each image under --cache (by the image's "
    "bytes, the vocabulary and the extractor's code): re-evaluating a run, or another run with "
    "the same images, decodes and extracts none of them again. Same rows either way.",
)
@workers_option("Worker processes for the local evaluators (rules, pairwise), as in vsb run.")
@executor_options(
    "Where the rules/pairwise tasks and the clip/dino models run: local processes, or "
    "a Ray cluster (pip install 'vsb[ray]'; the models on GPU workers with --device cuda)."
)
@timeout_option
def evaluate(
    run_dir: Path,
    evaluators: str | None,
    models: str | None,
    conditions: str | None,
    judge: str | None,
    base_url: str | None,
    judge_batch: int,
    judge_concurrency: int,
    budget: float | None,
    max_parse_failures: float,
    dry_run: bool,
    cache_dir: Path,
    extraction_cache: bool,
    workers: int,
    executor: str,
    ray_address: str | None,
    timeout_s: float | None,
    **evaluator_options: Any,
) -> None:
    """Judge RUN_DIR's images: the extractor + rule checker and pairwise signals on renders,
    and the VLM judge on any image (one call per scene, cached, priced, in the ledger);
    CLIP and DINOv2 embedding signals on any image with --evaluator clip,dino (vsb[embed]).

    \b
    Examples:
      vsb evaluate run
      vsb evaluate run --evaluator vlm --judge openai-compatible:gpt-4o --budget 5 --dry-run
      vsb evaluate run --evaluator vlm --judge openai-compatible:qwen2.5-vl \\
          --base-url http://127.0.0.1:8000/v1 --model stored:flux --condition independent
      vsb evaluate run --evaluator clip,dino --clip-model ./clip-vit-base-patch32 --device cuda

    Each evaluator adds options of its own (after --timeout); a plug-in's appear when
    --evaluator names it.
    """
    from vsb.evaluators.evaluate import evaluate_run, plan_judge
    from vsb.evaluators.vlm.store import JudgePricing
    from vsb.evaluators.vlm.transports import build_transport, default_client
    from vsb.evaluators.vlm_judge import JudgeOptions
    from vsb.release.manifest import refuse_frozen

    if not dry_run:
        refuse_frozen(
            run_dir,
            "evaluations/",
            "work on a copy (cp -r RELEASE DIR, then vsb release freeze DIR to publish it)",
        )
    transport = None
    if judge:
        http = default_client(timeout_s)
        click.get_current_context().call_on_close(http.close)  # no socket left open
        transport = build_transport(judge, base_url=base_url, client=http)
    if base_url and not judge:
        raise click.UsageError("--base-url is only used with --judge")
    if extraction_cache and executor == "ray":
        raise click.UsageError("--extraction-cache is for local workers, not --executor ray")
    options = JudgeOptions(
        batch=judge_batch,
        concurrency=judge_concurrency,
        budget_usd=budget,
        cache_dir=cache_dir,
        pricing=JudgePricing.load(),
    )
    model_list, cond_list = _names(models), _names(conditions)
    own = _own_options(_names(evaluators) or [], evaluator_options, cache_dir=cache_dir)
    if dry_run:
        if transport is None:
            raise click.UsageError("--dry-run plans judge calls: give --judge")
        plan = plan_judge(
            run_dir, transport, options, models=model_list, conditions=cond_list,
            evaluators=_names(evaluators), own=own,
        )  # fmt: skip
        dupes = f", {plan.duplicates} duplicates (sent once)" if plan.duplicates else ""
        click.echo(
            f"{transport.judge_model}: {plan.calls} calls, {plan.cached} cached{dupes}, "
            f"{plan.to_make} to make, estimated cost {_usd(plan.estimated_usd)}"
        )
        for (m, c), n in sorted(plan.per_cell.items()):
            click.echo(f"  {m} / {c}: {n} calls")
        return
    from vsb.store.calls import BudgetExceeded

    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    # auto_refresh=False: no refresh thread while the worker pool forks.
    quiet = not console.is_terminal
    with Progress(
        *columns, console=console, auto_refresh=False, transient=True, disable=quiet
    ) as bar:
        local = bar.add_task("evaluating", total=None)
        judged = bar.add_task("judging", total=None, visible=transport is not None)
        embedded = bar.add_task("embedding", total=None, visible=False)

        def frames_progress(done: int, total: int) -> None:
            bar.update(local, completed=done, total=total, refresh=True)

        lines = _Lines(f"judge {transport.judge_model}" if transport else "judge")

        def judge_progress(done: int, total: int) -> None:
            bar.update(judged, completed=done, total=total, refresh=True)
            if quiet:
                lines(done, total)

        def embed_progress(done: int, total: int) -> None:
            bar.update(embedded, completed=done, total=total, visible=True, refresh=True)

        try:
            with report_waits(timeout_s, transport is not None and transport.paid):
                result = evaluate_run(
                    run_dir,
                    progress={
                        "frames": frames_progress,
                        "calls": judge_progress,
                        "models": embed_progress,
                    },
                    workers=workers,
                    evaluators=_names(evaluators),
                    models=model_list,
                    conditions=cond_list,
                    options=own,
                    judge=transport,
                    judge_options=options,
                    executor=executor,
                    ray_address=ray_address,
                    extraction_cache=cache_dir if extraction_cache else None,
                )
        except BudgetExceeded as err:
            stopped: BudgetExceeded | None = err
        else:
            stopped = None
    if stopped is not None:
        click.echo(f"error: {stopped}", err=True)
        raise SystemExit(INCOMPLETE)
    for line in result.warnings:
        click.echo(f"warning: {line}", err=True)
    judged_rows = result.requirements - result.not_applicable
    # nothing applicable: no rate (0 of 0 is not 0.0 %, issue #36)
    rate = (
        f"{result.passed / judged_rows:.1%} of applicable passed"
        if judged_rows
        else "n/a: nothing applicable"
    )
    click.echo(
        f"{', '.join(result.evaluators)}: {result.images} images, {result.requirements} "
        f"requirement checks ({rate}, {result.not_applicable} "
        f"not applicable), {result.signals} signals -> {result.out_dir}"
    )
    if result.judge is not None:
        j = result.judge
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(j.verdicts.items()))
        at = f" at {j.endpoint}" if j.endpoint else ""
        click.echo(
            f"judge {j.judge_model}{at}: {j.calls} calls, {j.cache_hits} cached, "
            + (f"{j.duplicates} duplicates (judged once), " if j.duplicates else "")
            + f"cost {_usd(j.cost_usd)}; verdicts: {verdicts}{failed_checks_note(j.failed_checks)}"
        )
        bad = j.verdicts.get("parse_failure", 0)
        if bad:
            judged_n = sum(v for k, v in j.verdicts.items() if k != "not_applicable")
            click.echo(
                f"warning: {bad} of {judged_n} judge answers ({j.parse_failure_share:.1%}) "
                "could not be parsed: they count as parse_failure (not passed) and were not "
                "cached, so a rerun asks them again",
                err=True,
            )
        if j.parse_failure_share > max_parse_failures:
            click.echo(
                f"error: more than --max-parse-failures {max_parse_failures:g} of the judge's "
                f"answers are unparsable: check that {j.judge_model} answers in the asked "
                f"format (`vsb evaluate` writes its replies to {result.out_dir}/"
                "judge_calls.jsonl); exit status 4",
                err=True,
            )
            raise SystemExit(UNPARSABLE)
    ex = result.extraction
    if extraction_cache and ex:
        click.echo(
            f"extractor: {ex.get('extracted', 0)} images extracted, {ex.get('disk_hits', 0)} "
            f"read from the extraction cache in {cache_dir}, {ex.get('extract_hits', 0)} "
            f"repeats within a story{failed_checks_note(ex.get('failed_check', 0))}"
        )
    for e in result.embed:
        texts = ""
        if e.evaluator == "clip":
            ref = own["clip"].reference_model
            refs = (
                f"{e.references} {ref} reference images"
                if e.references
                else f"no clip_image_rr: no {ref} images in the run"
            )
            texts = f"; {e.texts} texts, {e.texts_computed} embedded; {refs}"
        click.echo(
            f"{e.evaluator} {e.model}: {e.images} images, {e.computed} embedded, "
            f"{e.cached} cached{texts}{failed_checks_note(e.failed_checks)}"
        )
