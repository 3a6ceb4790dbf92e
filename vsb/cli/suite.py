"""``vsb suite``: generate, validate and summarise story suites."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import click
from rich.console import Console
from rich.table import Table

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
