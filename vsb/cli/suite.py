"""``vsb suite``: generate, validate and summarise story suites."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

import click
from rich.console import Console
from rich.table import Table

from vsb.cli.options import (
    base_url_option,
    budget_option,
    cache_option,
    dry_run_option,
    report_waits,
    stories_options,
    timeout_option,
)
from vsb.story.models import (
    CATEGORIES,
    DIFFICULTIES,
    DIMENSIONS,
    MAX_SEED,
    PROMPT_STYLES,
    PromptStyle,
)


@click.group()
def suite() -> None:
    """Generate, validate and summarise story suites."""


@suite.command()
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write <story>.json files and suite.json into.",
)
@click.option(
    "--seed", default=0, show_default=True, type=click.IntRange(0, MAX_SEED),
    help="Suite seed (same seed, same bytes).",
)  # fmt: skip
@click.option(
    "--text-style",
    type=click.Choice(PROMPT_STYLES),
    default=None,
    help="How scene texts are worded: plain (default); paraphrase (other words, same facts); "
    "implicit (an event with a cause is told without its effect, and the requirements that "
    "check the effect are marked inferred).",
)
@click.option("--paraphrase", is_flag=True, help="Same as --text-style paraphrase.")
@click.option(
    "--per-cell",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="N stories in every category x difficulty cell (30·N stories) instead of the default "
    "suite; more stories narrow every CI (see the minimum detectable difference on the "
    "comparisons page).",
)
def generate(
    out_dir: Path, seed: int, text_style: str | None, paraphrase: bool, per_cell: int | None
) -> None:
    """Generate the default suite: 10 categories x (easy, medium x2, hard) = 40 stories
    (or, with --per-cell N, N stories per category x difficulty)."""
    from vsb.generator.generate import generate_suite, write_suite

    if paraphrase and text_style not in (None, "paraphrase"):
        raise click.UsageError(f"--paraphrase contradicts --text-style {text_style}")
    style = cast("PromptStyle | None", text_style)
    stories = generate_suite(seed, paraphrase=paraphrase, per_cell=per_cell, text_style=style)
    index = write_suite(stories, out_dir, seed=seed)
    n_scenes = sum(e.scenes for e in index.stories)
    n_reqs = sum(e.requirements for e in index.stories)
    n_inferred = sum(r.inferred for s in stories for sc in s.scenes for r in sc.requirements)
    extra = f" ({n_inferred} inferred)" if index.prompt_style == "implicit" else ""
    click.echo(
        f"wrote {len(index.stories)} stories, {n_scenes} scenes, {n_reqs} requirements{extra} "
        f"to {out_dir}"
    )


@suite.command("index")
@click.argument("suite_dir", type=click.Path(path_type=Path))
@click.option(
    "--seed",
    type=click.IntRange(0, MAX_SEED),
    default=None,
    help="Seed recorded in suite.json (default: kept, else 0).",
)
def index_cmd(suite_dir: Path, seed: int | None) -> None:
    """Write SUITE_DIR/suite.json for a directory of story files (hand-written stories):
    every *.json story is validated and listed with its id, category, difficulty, counts
    and SHA-256. Rerun it after editing a story."""
    from vsb.story.index import index_suite

    index = index_suite(suite_dir, seed=seed)
    n_scenes = sum(e.scenes for e in index.stories)
    n_reqs = sum(e.requirements for e in index.stories)
    click.echo(
        f"indexed {len(index.stories)} stories, {n_scenes} scenes, {n_reqs} requirements "
        f"-> {suite_dir / 'suite.json'}"
    )


@suite.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Check story files (or suite directories): schema, state machine, story invariants
    and the requirements re-derived from the events.

    Prints one line per problem (file: JSON pointer: what was expected) and exits 1 if any.
    A directory is also checked as a suite: suite.json names files inside it that exist and
    hold the listed ids, every story file is listed, and no story id is used twice.
    """
    from vsb.errors import InputError
    from vsb.story.io import check_suite

    n_files = n_bad = n_suite = 0
    for root in paths:
        try:
            per_file, suite_problems = check_suite(root)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            n_bad += 1
            continue
        for problems in per_file.values():
            n_files += 1
            for p in problems:
                click.echo(str(p), err=True)
            n_bad += bool(problems)
        for sp in suite_problems:
            click.echo(str(sp), err=True)
        n_suite += len(suite_problems)
    extra = f"; {n_suite} suite problem{'s' * (n_suite != 1)}" if n_suite else ""
    click.echo(f"{max(n_files - n_bad, 0)} of {n_files} story files valid{extra}")
    if n_bad or n_suite:
        sys.exit(1)


@suite.command()
@click.argument("suite_dir", type=click.Path(path_type=Path))
def stats(suite_dir: Path) -> None:
    """Print counts by category, difficulty, dimension and source."""
    from vsb.story.io import load_suite
    from vsb.story.stats import suite_stats

    st = suite_stats(load_suite(suite_dir))
    console = Console()
    t = st["totals"]
    console.print(
        f"[bold]{t['stories']}[/] stories, [bold]{t['scenes']}[/] scenes, "
        f"[bold]{t['requirements']}[/] requirements"
    )
    table = Table(title="Stories by category and difficulty")
    table.add_column("category")
    for d in DIFFICULTIES:
        table.add_column(d, justify="right")
    for c in CATEGORIES:
        table.add_row(c, *(str(st["category_difficulty"][f"{c}/{d}"]) for d in DIFFICULTIES))
    dims = Table(title="Requirements by dimension and source")
    for col in ("dimension", "prompt", "memory", "total"):
        dims.add_column(col, justify="left" if col == "dimension" else "right")
    for d in DIMENSIONS:
        p, m = st["dimension_source"][f"{d}/prompt"], st["dimension_source"][f"{d}/memory"]
        dims.add_row(d, str(p), str(m), str(p + m))
    dims.add_row(
        "[bold]all[/]", str(st["source"]["prompt"]), str(st["source"]["memory"]),
        str(t["requirements"]),
    )  # fmt: skip
    console.print(table)
    console.print(dims)


@suite.command("prompts")
@click.argument("suite_dir", type=click.Path(path_type=Path))
@click.option(
    "--condition", "conditions", required=True, metavar="NAME[,NAME…]",
    help="Condition name(s), comma-separated, as for vsb run (all = the six main ones).",
)  # fmt: skip
@click.option(
    "--out", "out_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (JSON lines; --format csv for CSV).",
)  # fmt: skip
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True,
    help="jsonl keeps every prompt exact; csv quotes a cell that starts like a formula.",
)  # fmt: skip
@click.option(
    "--source", default="mine", show_default=True,
    help="The folder every path starts with: serve the images back with --model "
    "stored:SOURCE --samples DIR.",
)  # fmt: skip
@click.option(
    "--max-tokens", type=click.IntRange(min=2), default=None, metavar="N",
    help="Add tokens (the prompt's CLIP tokens, start and end included: Stable Diffusion "
    "1.5's and SDXL's tokenizer) and cut (tokens > N) to every row; 77 for those encoders.",
)  # fmt: skip
@stories_options
def prompts(
    suite_dir: Path, conditions: str, out_file: Path, fmt: str, source: str,
    max_tokens: int | None, stories: str | None, limit: int | None,
) -> None:  # fmt: skip
    """Export the exact request of every (story, scene, condition) for a pipeline outside vsb.

    One row each: story_id, scene, condition, prompt (what a text-only model is sent, context
    included), context (as sent, empty without one), scene_text, reference (previous_image:
    the frame handed along, a path relative to DIR), path (where --model stored:SOURCE
    --samples DIR expects the image, relative to DIR: it starts with SOURCE) and same_as
    (the path of an earlier row with the same request: stored: serves that one file for both,
    so make only the rows whose same_as is empty). With --max-tokens N, also tokens and cut."""
    from vsb.conditions import resolve_conditions
    from vsb.run.prompts import suite_prompts, write_prompts
    from vsb.run.selection import chosen_ids, parse_ids, subset_suite

    ids = chosen_ids(suite_dir, parse_ids(stories), limit)
    with subset_suite(suite_dir, ids) as suite:
        rows = list(suite_prompts(suite, resolve_conditions(conditions), source, max_tokens))
    write_prompts(rows, out_file, fmt)
    distinct = sum(r.same_as is None for r in rows)
    click.echo(
        f"wrote {len(rows)} prompts ({distinct} distinct images to make) to {out_file}; "
        f"put each image at DIR/<path>, then: vsb run --model stored:{source} --samples DIR"
    )
    if max_tokens is not None:
        cut = sum(bool(r.cut) for r in rows)
        click.echo(f"{cut} of {len(rows)} prompts are over {max_tokens} CLIP tokens (cut: true)")


#: Exit status of an import that rejected some stories (the others are written).
SOME_REJECTED = 2
#: Exit status of an import that --budget stopped (as ``vsb run`` and ``vsb evaluate``).
INCOMPLETE = 3


@suite.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--llm", default=None, metavar="KIND:MODEL",
    help="The model that extracts each story's state: openai-compatible:MODEL, "
    "anthropic:MODEL, replay:DIR (a previous import's OUT/import) or mock (reads vsb's own "
    "sentence shapes only). Needed with --constraints llm.",
)  # fmt: skip
@click.option(
    "--constraints", type=click.Choice(["llm", "gold"]), default="llm", show_default=True,
    help="llm: an LLM reads each narrative's state; gold: VinaBench's annotations are the "
    "state (its annotation files only; no LLM call).",
)  # fmt: skip
@click.option(
    "--compare-gold", is_flag=True,
    help="With --constraints llm on VinaBench's files: also write the agreement of the LLM's "
    "reading with the gold annotations per field (OUT/import/gold-agreement.json, .csv).",
)  # fmt: skip
@base_url_option("The LLM's base URL (HTTP kinds).")
@click.option(
    "--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Where the suite is written (and, in OUT/import/, the report, the calls and the "
    "ledger).",
)  # fmt: skip
@budget_option("Stop before a call that could take spending past this (cached calls are free).")
@dry_run_option("Print the extraction calls not yet cached and their estimated cost; call nothing.")
@cache_option("Where the LLM's answers are cached (a rerun pays nothing).")
@click.option(
    "--concurrency", default=4, show_default=True, type=click.IntRange(min=1),
    help="LLM calls in flight at once.",
)  # fmt: skip
@timeout_option
def import_cmd(
    files: tuple[Path, ...], llm: str | None, constraints: str, compare_gold: bool,
    base_url: str | None, out_dir: Path, budget: float | None, dry_run: bool, cache_dir: Path,
    concurrency: int, timeout_s: float | None,
) -> None:  # fmt: skip
    """Import narratives (plain text, JSON, JSON lines; docs/IMPORT.md) as state-checked
    stories: an LLM extracts characters, objects, events, place and time; the extraction is
    replayed through the state machine (a contradiction is sent back once) and the
    requirements are derived from the replayed state. VinaBench's annotation files are read
    as released; with --constraints gold their annotations give the state (no LLM call).
    Exit status 2 when some stories were rejected (the others are written), 3 when --budget
    stopped the calls."""
    from vsb.evaluators.vlm.execute import JudgeOptions
    from vsb.evaluators.vlm.store import JudgePricing
    from vsb.evaluators.vlm.transports import default_client
    from vsb.narrative.importer import (
        IMPORT_DIR,
        LEDGER_NAME,
        build_llm,
        check_llm,
        import_narratives,
        plan_import,
        previous_import,
        write_import,
    )  # fmt: skip
    from vsb.narrative.sources import read_narratives
    from vsb.store.calls import BudgetExceeded

    narratives = read_narratives(files)
    if constraints == "gold" or compare_gold:
        _check_gold(narratives, constraints, llm, compare_gold)
    if constraints == "gold":
        _import_gold(narratives, out_dir, dry_run)
        return
    if llm is None:
        raise click.UsageError("--llm KIND:MODEL is needed with --constraints llm (the default)")
    http = default_client(timeout_s)
    click.get_current_context().call_on_close(http.close)
    model = build_llm(llm, base_url=base_url, client=http)
    options = JudgeOptions(
        concurrency=concurrency, budget_usd=budget, cache_dir=cache_dir,
        pricing=JudgePricing.load(),
    )  # fmt: skip
    if dry_run:
        plan = plan_import(narratives, model, options)
        cost = "unknown" if plan.estimated_usd is None else f"{plan.estimated_usd:.4f} USD"
        click.echo(
            f"{model.judge_model}: {plan.calls} extraction calls, {plan.cached} cached, "
            f"{plan.to_make} to make, estimated cost {cost} (an answer that fails is sent "
            "back once: at most as many calls again)"
        )
        return
    check_llm(model)
    previous_import(out_dir)  # refuse a folder that holds something else before any call
    try:
        with report_waits(timeout_s):
            report, transcript = import_narratives(
                narratives, model, options, ledger_path=out_dir / IMPORT_DIR / LEDGER_NAME,
                progress=lambda msg: click.echo(msg, err=True),
            )  # fmt: skip
    except BudgetExceeded as err:
        click.echo(f"error: {err} (nothing written)", err=True)
        sys.exit(INCOMPLETE)
    write_import(out_dir, report, transcript, model.judge_model)
    if compare_gold:
        from vsb.narrative.agreement import summary_line, write_agreement

        click.echo(summary_line(write_agreement(out_dir / IMPORT_DIR, report)))
    _imported(report, out_dir)


def _check_gold(narratives: list[Any], constraints: str, llm: str | None, compare: bool) -> None:
    """--constraints gold and --compare-gold read VinaBench's annotation files only."""
    if constraints == "gold" and (llm is not None or compare):
        raise click.UsageError(
            "--constraints gold calls no LLM: leave out --llm and --compare-gold"
        )
    bare = next((n for n in narratives if n.gold is None), None)
    if bare is not None:
        flag = "--constraints gold" if constraints == "gold" else "--compare-gold"
        raise click.UsageError(
            f"{flag} needs VinaBench's annotation files; {bare.source} has no annotations"
        )


def _import_gold(narratives: list[Any], out_dir: Path, dry_run: bool) -> None:
    """Every story built from its annotations (no call), written as an import."""
    from vsb.narrative.gold import GOLD, import_gold
    from vsb.narrative.importer import previous_import, write_import

    if dry_run:
        click.echo(f"{len(narratives)} stories from their annotations: no LLM call, cost 0")
        return
    previous_import(out_dir)
    report = import_gold(narratives)
    write_import(out_dir, report, [], GOLD)
    _imported(report, out_dir, " from their gold annotations", ", no LLM call")


def _imported(report: Any, out_dir: Path, source: str = "", note: str = "") -> None:
    """Name each rejected story on stderr, then count what was imported (``source``: where
    the state came from, ``note`` after the count); exit 2 when some were rejected."""
    for r in report.rejected:
        where = f"scene {r.scene}: " if r.scene else ""
        click.echo(f"rejected {r.narrative.id} ({r.narrative.source}): {where}{r.error}", err=True)
    n_reqs = sum(len(s.requirements) for st in report.imported for s in st.scenes)
    click.echo(
        f"imported {len(report.imported)} of {len(report.results)} stories{source} "
        f"({n_reqs} requirements{note}) to {out_dir}"
    )
    if report.rejected:
        sys.exit(SOME_REJECTED)
