"""``vsb human import | report | simulate``: thin wrappers over vsb.human."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from vsb.cli.options import bootstrap_options
from vsb.errors import InputError

if TYPE_CHECKING:  # the library is imported by each command (keeps `vsb --help` fast)
    from vsb.human.results import HumanReport

_DIR = click.Path(path_type=Path, file_okay=False)


def _console() -> Console:
    console = Console(highlight=False)
    return console if console.is_terminal else Console(width=120, highlight=False)


def _f(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


NO_OVERLAP = "not enough overlap"


def _ci(lo: float | None, hi: float | None, digits: int = 3) -> str:
    return "—" if lo is None or hi is None else f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def _table(title: str, *columns: str) -> Table:
    t = Table(title=Text(title), box=box.SIMPLE_HEAD)
    for i, c in enumerate(columns):
        t.add_column(Text(c), justify="left" if i == 0 else "right")
    return t


def _row(t: Table, *cells: object) -> None:
    t.add_row(*(Text(str(c)) for c in cells))  # Text: names from files are never markup


def print_report(report: HumanReport, console: Console) -> None:
    """The report as tables (the synthetic notice first and last when it applies)."""
    if report.synthetic:
        console.print(Text(report.notice, style="bold red"))
    kept = report.n_raters_kept
    n_raters = len({r.rater_id for r in report.raters})
    console.print(Text(f"{n_raters} rater(s) in {len(report.raters)} session(s), {kept} rater(s) "
                       f"kept; releases: {', '.join(report.releases)}"))  # fmt: skip
    raters = _table("sessions (each judged apart)", "rater", "session", "items", "controls",
                    "median s", "retest |Δ|", "kept")  # fmt: skip
    for r in report.raters:
        ctrl = f"{r.n_control_correct}/{r.n_control}" if r.n_control else "—"
        why = "yes" if not r.excluded else "no: " + "; ".join(r.reasons)
        _row(raters, r.rater_id, r.session_id[:8], r.n_items, ctrl, _f(r.median_time_s, 1),
             _f(r.repeat_abs_diff, 2), why)  # fmt: skip
    console.print(raters)
    if kept == 0:
        console.print(Text("no rater remains: every session was excluded (reasons above)"))
    rel = _table("Krippendorff's alpha", "dimension", "nominal", "ordinal", "interval", "units")
    for a in report.alpha:
        if a.n_units == 0:
            _row(rel, a.dimension, NO_OVERLAP, "", "", 0)
            continue
        _row(rel, a.dimension, _f(a.nominal), _f(a.ordinal), _f(a.interval), a.n_units)
    console.print(rel)
    icc = _table("ICC on the largest complete block", "dimension", "ICC(2,1)", "ICC(2,k)", "k",
                 "targets")  # fmt: skip
    for i in report.icc:
        if i.n_targets == 0:
            _row(icc, i.dimension, NO_OVERLAP, "", i.k, 0)
            continue
        _row(icc, i.dimension, _f(i.icc2_1), _f(i.icc2_k), i.k, i.n_targets)
    console.print(icc)
    means = _table("mean overall rating (95% CI, story bootstrap)", "model", "condition", "mean",
                   "CI", "stories")  # fmt: skip
    for m in report.model_means:
        if m.dimension == "overall":
            _row(means, m.model, m.condition, _f(m.mean, 2), _ci(m.ci_low, m.ci_high, 2),
                 m.n_stories)  # fmt: skip
    console.print(means)
    if report.bradley_terry:
        bt = _table("Bradley-Terry (lmarena scale)", "model", "rating", "CI", "comparisons")
        for b in report.bradley_terry:
            _row(bt, b.model, _f(b.rating, 0), _ci(b.ci_low, b.ci_high, 0), b.n_comparisons)
        console.print(bt)
    mm = report.mixed_model
    if mm is not None:
        mt = _table(f"{mm.formula} (vs {mm.reference})", "model", "effect", "CI", "p", "true")
        for e in mm.effects:
            _row(mt, e.model, _f(e.estimate), _ci(e.ci_low, e.ci_high), _f(e.p, 4),
                 _f(e.true_effect))  # fmt: skip
        console.print(mt)
        console.print(Text(f"variance: story {_f(mm.var_story)}, rater {_f(mm.var_rater)}, "
                           f"residual {_f(mm.var_residual)}; " + "; ".join(mm.notes)))  # fmt: skip
    if report.agreement is not None:
        ag = _table("model ranking vs humans (Kendall τ-b)", "evaluator", "condition", "τ",
                    "models")  # fmt: skip
        for g in report.agreement.rankings:
            _row(ag, g.evaluator, g.condition, _f(g.kendall_tau), g.n_models)
        console.print(ag)
    if report.synthetic:
        console.print(Text(report.notice, style="bold red"))


@click.group()
def human() -> None:
    """Human evaluation: import ratings from /evaluate, print reports, simulate raters."""


@human.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=_DIR, help="Report directory (written).")
@click.option(
    "--release",
    type=_DIR,
    help="Release the ratings are of: needed for the evaluate page's exports (format 2.0, "
    "opaque targets); refuses files of another release; adds judge-human agreement.",
)
@bootstrap_options("Seed of the bootstraps.", resamples=1000)
def import_(
    files: tuple[Path, ...], out: Path, release: Path | None, seed: int,
    resamples: int,
) -> None:  # fmt: skip
    """Validate rating files (all or nothing) and write the report with its CSVs to OUT."""
    from vsb.human.load import RatingImportError, load_rating_files
    from vsb.human.report import build_report
    from vsb.human.write import write_report
    from vsb.scores.stats.bootstrap import Resampling

    try:
        loaded = load_rating_files(files, release)
        settings = Resampling(seed=seed, n_resamples=resamples)
        report = build_report(loaded, release_dir=release, settings=settings)
    except RatingImportError as err:
        for line in err.problems:
            click.echo(f"error: {line}", err=True)
        raise InputError(f"nothing written: {len(err.problems)} problem(s)") from None
    write_report(out, report, loaded)
    print_report(report, _console())
    click.echo(f"wrote {out}")
    if report.n_raters_kept == 0:
        raise InputError(
            f"no rater remains: all {len(report.raters)} session(s) were excluded "
            f"(reasons in {out / 'raters.csv'})"
        )


@human.command("report")
@click.argument("directory", type=click.Path(path_type=Path))
def report_(directory: Path) -> None:
    """Print the human report in DIRECTORY (written by `vsb human import`)."""
    from vsb.human.write import load_report

    print_report(load_report(directory), _console())


@human.command("simulate")
@click.option("--release", required=True, type=_DIR, help="Frozen release to rate.")
@click.option("--raters", "n_raters", required=True, type=click.IntRange(1, 1000))
@click.option("--seed", required=True, type=int)
@click.option("--out", "out", required=True, type=_DIR, help="Where the rating files go.")
@click.option("--careless", default=0.25, show_default=True, type=click.FloatRange(0, 1),
              help="Share of careless raters (fast, failing controls).")  # fmt: skip
def simulate(release: Path, n_raters: int, seed: int, out: Path, careless: float) -> None:
    """Write SYNTHETIC rating files (labelled so) to check the import pipeline."""
    from vsb.human.simulate import simulate_raters, write_simulated

    files = simulate_raters(release, n_raters, seed, careless_share=careless)
    paths = write_simulated(out, files, release)
    n_bad = sum(1 for f in files if f.truth is not None and f.truth.careless)
    click.echo(f"wrote {len(paths)} SYNTHETIC rating file(s) ({n_bad} careless) to {out}")


@human.command("verify")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--model", required=True, help="The model whose frames people verify.")
@click.option("--items", "n_items", default=600, show_default=True, type=click.IntRange(1),
              help="Questions in the sample.")  # fmt: skip
@click.option("--out", "out", type=_DIR, help="Where the items, pictures and page go.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--evaluator", default=None, help="The judged evaluator (default: the only one).")
@click.option("--dry-run", is_flag=True,
              help="Say how many items a corrected global within --half-width needs; "
              "write nothing.")  # fmt: skip
@click.option("--half-width", default=0.03, show_default=True, type=click.FloatRange(0.001, 0.5),
              help="With --dry-run: the 95% interval's half-width to plan for.")  # fmt: skip
def verify(run_dir: Path, model: str, n_items: int, out: Path | None, seed: int,
           evaluator: str | None, dry_run: bool, half_width: float) -> None:  # fmt: skip
    """Draw a verification sample of MODEL's judged frames: OUT/items.jsonl (one question a
    line: item_id, image, sha256, question) and OUT/evaluate.html (serve it with `vsb human
    serve OUT`), blind; the sample itself goes to RUN_DIR/verification/. `vsb score
    --corrected` then corrects MODEL with the judge's error measured on the answers."""
    if dry_run:
        from vsb.validation.correct.sizing import sample_size

        size = sample_size(run_dir, model, half_width, evaluator)
        stories = "—" if size.story_half_width is None else f"±{size.story_half_width:.3f}"
        more = max(0, size.items - size.verified)
        click.echo(f"{model}: {size.items} verified items for a corrected global within "
                   f"±{half_width:g} (95%; {size.rows} judged single-frame rows; planned "
                   f"from {size.planned_from}; widest: {size.cell}); the sampling of "
                   f"stories adds {stories}, which no number of items narrows")  # fmt: skip
        if size.verified:
            click.echo(f"{size.verified} answered already: {more} more (vsb human verify "
                       f"--items {more} --seed <another>)")  # fmt: skip
        elif size.if_assumed is not None:
            click.echo(f"if the judge erred on {model}'s frames as on simulator frames, "
                       f"{size.if_assumed} would do: answer that many first, import them, "
                       "and --dry-run again plans the rest from the answers")  # fmt: skip
        return
    if out is None:
        raise click.UsageError("--out is required (or --dry-run)")
    from vsb.human.verify.sample import ITEMS_FILE, draw_sample

    sample = draw_sample(run_dir, model, n_items, out, seed=seed, evaluator=evaluator)
    click.echo(f"sample {sample.sample_id}: {len(sample.items)} items of {model} in "
               f"{out / ITEMS_FILE} and {out / 'evaluate.html'} (vsb human serve {out}); "
               f"import the answers with vsb human verify-import {run_dir} FILE")  # fmt: skip


@human.command("verify-import")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("files", nargs=-1, required=True,
                type=click.Path(path_type=Path, exists=True, dir_okay=False))  # fmt: skip
def verify_import(run_dir: Path, files: tuple[Path, ...]) -> None:
    """Import answers to a verification sample (JSON lines {"item_id", "answer": YES | NO |
    UNSURE}, or the page's export), each checked against the sample (all or nothing)."""
    from vsb.human.verify.answers import import_answers

    for got in import_answers(run_dir, list(files)):
        click.echo(f"sample {got.sample_id}: {len(got.answers)} answers stored")


@human.command("serve")
@click.argument("site_dir", type=_DIR)
@click.option("--port", default=8000, show_default=True, help="Port on 127.0.0.1.")
def serve(site_dir: Path, port: int) -> None:
    """Serve SITE_DIR's blinded rating page alone on http://127.0.0.1:PORT/ until
    interrupted: the page, its script and styles and its opaque pictures; every other path
    (leaderboard, story pages, images under model names, downloads) answers 404. Give raters
    this address, never `vsb site serve`'s."""
    from vsb.site.serve import make_rating_server, serve_until_interrupted

    server = make_rating_server(site_dir, port)
    host, bound = server.server_address[:2]
    click.echo(f"rating page of {site_dir} at http://{host!s}:{bound}/ (Ctrl-C to stop)")
    serve_until_interrupted(server)
