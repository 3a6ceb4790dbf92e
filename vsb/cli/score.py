"""``vsb score`` and ``vsb compare``: thin wrappers over vsb.scores that print rich tables
(``vsb validate-judge`` lives in vsb/cli/validate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.console import Console
from rich.table import Table

from vsb.cli.options import bootstrap_options, evaluators_option, run_dir_argument

if TYPE_CHECKING:
    from vsb.scores.models import ScoresReport

#: Display names of the summary metrics (the dimension ``adherence`` keeps its key).
_SUMMARY_NAMES = {
    "adherence": "prompt adherence",
    "coherence": "memory coherence",
    "conditional_coherence": "conditional coherence",
    "global": "global",
}
#: Caption of every leaderboard: what the two coherence columns count.
_CAPTION = (
    "coherence: memory requirements, strict (a missing subject fails every remembered "
    "attribute); cond. coherence: only subjects found in the image (a missing subject "
    "fails once)"
)


def _console() -> Console:
    """A console; when the output is not a terminal (pipes, files, tests) one wide enough
    that no table is cut (tables take their natural width, never the console's)."""
    console = Console()
    return console if console.is_terminal else Console(width=400)


def _table(title: str, columns: tuple[str, ...]) -> Table:
    """A table whose cells are never cut short: on a terminal too narrow for it a long
    model name or interval folds onto a second line instead of ending in "…"."""
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
    return table


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "—" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"


def _rank(rank: int, low: int | None, high: int | None) -> str:
    """A rank with its bootstrap range when the data cannot pin it ("2 (1–3)")."""
    if low is None or high is None or low == high:
        return str(rank)
    return f"{rank} ({low}–{high})"


def _shown_conditions(conditions: list[str], spec: str | None, primary: str) -> list[str]:
    """The conditions to print (primary first): all, or the one ``spec`` names (any case)."""
    from vsb.errors import UnknownNameError

    ordered = sorted(conditions, key=lambda c: c != primary)
    if spec is None or spec.lower() == "all":
        return ordered
    hit = next((c for c in conditions if c.lower() == spec.lower()), None)
    if hit is None:
        raise UnknownNameError("condition", spec, conditions)
    return [hit]


def _leaderboard(report: ScoresReport, evaluator: str, cond: str) -> Table | None:
    rows = [r for r in report.scores if r.evaluator == evaluator and r.condition == cond]
    if not rows:
        return None
    title = cond + (" (primary)" if cond == report.primary_condition else "")
    if len(report.evaluators) > 1 or evaluator != "rules":
        title += f" — evaluator {evaluator}"
    columns = ("model", "# (95% range)", "global [95% CI]", "adherence",
               "coherence [95% CI]", "cond. coherence")  # fmt: skip
    table = _table(title, columns)
    table.caption = _CAPTION
    for r in rows:
        g, a, c, k = r.global_score, r.adherence, r.coherence, r.conditional_coherence
        table.add_row(
            r.model,
            _rank(r.rank, r.rank_low, r.rank_high),
            f"{_pct(g.score)} {_ci(g.ci_low, g.ci_high)}" if g else "—",
            _pct(a.score if a else None),
            f"{_pct(c.score)} {_ci(c.ci_low, c.ci_high)}" if c else "—",
            _pct(k.score if k else None),
        )
    return table


def _corrected_board(report: ScoresReport, evaluator: str, cond: str) -> Table | None:
    """Raw and corrected side by side, ranked by the corrected global score."""
    rows = [
        r
        for r in report.scores
        if r.evaluator == evaluator and r.condition == cond and r.corrected is not None
    ]
    if not rows:
        return None
    table = _table(
        f"{cond} — evaluator {evaluator}, corrected for the judge's error",
        ("model", "# corrected (95% range)", "global raw", "global corrected [95% CI]",
         "coherence raw", "coherence corrected [95% CI]", "basis"),
    )  # fmt: skip

    def cell(e: Any) -> str:
        if e is None:
            return "—"
        if e.score is None:
            return e.reason or "not correctable"
        return f"{_pct(e.score)} {_ci(e.ci_low, e.ci_high)}"

    rank = {r.model: r.corrected.rank for r in rows if r.corrected is not None}
    rows.sort(key=lambda r: (rank[r.model] is None, rank[r.model] or 0, r.model))
    for r in rows:
        c = r.corrected
        assert c is not None
        table.add_row(
            r.model,
            "—" if c.rank is None else _rank(c.rank, c.rank_low, c.rank_high),
            _pct(r.global_score.score if r.global_score else None),
            cell(c.global_score),
            _pct(r.coherence.score if r.coherence else None),
            cell(c.coherence),
            c.basis or "—",
        )
    return table


def _assumption_lines(report: ScoresReport) -> list[str]:
    """One line per model whose verified frames tested the assumption (issue 46)."""
    seen = {
        (r.evaluator, r.model, r.corrected.assumption_test)
        for r in report.scores
        if r.corrected is not None and r.corrected.assumption_test
    }
    return [f"{e}, {m}: the judge's error on its verified frames vs the simulator frames': {t}"
            for e, m, t in sorted(seen)]  # fmt: skip


def _notes(report: ScoresReport, evaluator: str, cond: str) -> list[str]:
    """Rank stability and verdict counts of one leaderboard, one line each."""
    out = []
    for s in report.rank_stability:
        if s.evaluator == evaluator and s.condition == cond and s.tau_mean is not None:
            out.append(
                f"rank stability ({cond}, {s.n_draws} Dirichlet draws): Kendall τ mean "
                f"{s.tau_mean:.3f} [5%: {s.tau_p05:.3f}, 95%: {s.tau_p95:.3f}]"
            )
    rows = [r for r in report.scores if r.evaluator == evaluator and r.condition == cond]
    unsure = sum(r.n_unsure for r in rows)
    parse = sum(r.n_parse_failure for r in rows)
    na = sum(r.n_not_applicable for r in rows)
    if unsure or parse or na:
        out.append(
            f"{evaluator}: {unsure} unsure and {parse} unparsable answers (counted as not "
            f"passed), {na} checks not applicable (left out)"
        )
    return out


def _judge_swap(report: ScoresReport, shown: list[str]) -> Table | None:
    swaps = [s for s in report.judge_swap if s.condition in shown]
    if not swaps:
        return None
    table = _table(
        "judge swap: rankings by global score under two evaluators",
        ("condition", "evaluators", "models", "Kendall τ", "flips", "flips, CIs apart"),
    )
    for s in swaps:
        apart = [f"{p.model_x}/{p.model_y}" for p in s.pairs if p.separated]
        table.add_row(
            s.condition,
            f"{s.evaluator_a} vs {s.evaluator_b}",
            str(len(s.models)),
            _pct(s.kendall_tau),
            str(s.n_flips),
            f"{s.n_separated_flips}" + (f" ({', '.join(apart)})" if apart else ""),
        )
    return table


@click.command()
@run_dir_argument
@bootstrap_options("Bootstrap / perturbation seed.")
@click.option(
    "--condition", default=None, help="Only print this condition's leaderboard (or 'all')."
)
@evaluators_option("Only score these evaluators (default: every one in the run).")
@click.option(
    "--corrected", is_flag=True,
    help="Also correct each judged evaluator's pass rates for the judge's own error, as "
    "measured on the run's oracle frames (shown beside the raw scores; written into "
    "scores.json and scores/judge_error.*; see docs/validation.md).",
)  # fmt: skip
def score(
    run_dir: Path,
    seed: int,
    resamples: int,
    condition: str | None,
    evaluators: str | None,
    corrected: bool,
) -> None:
    """Score a run: per-dimension pass rates with story-bootstrap CIs, comparisons, rank
    stability and judge-swap stability, per evaluator, written to RUN_DIR/scores/."""
    from vsb.release.manifest import refuse_frozen
    from vsb.scores.axis import advice
    from vsb.scores.compute import Resampling, load_scoring_input, score_input
    from vsb.scores.models import PRIMARY_CONDITION
    from vsb.scores.write import write_scores

    refuse_frozen(
        run_dir,
        "scores/",
        "work on a copy (cp -r RELEASE DIR, then vsb release freeze DIR to publish it)",
    )
    settings = Resampling(seed=seed, n_resamples=resamples)
    if evaluators is not None and evaluators.strip() == "vinabench":  # VinaBench's table alone
        _vinabench(run_dir, settings, required=True)
        return
    inp = load_scoring_input(run_dir)
    shown = _shown_conditions(inp.conditions, condition, PRIMARY_CONDITION)
    report = score_input(inp, evaluators=evaluators, settings=settings)
    errors = None
    if corrected:
        from vsb.validation.correct.apply import correct_report

        report, errors = correct_report(inp, report, settings, required=True)
    paths = write_scores(run_dir, report)
    if evaluators is None or "vinabench" in evaluators.split(","):
        paths += _vinabench(run_dir, settings, required=False)
    from vsb.validation.correct.apply import remove_correction, write_correction

    if errors is not None:
        paths += write_correction(Path(run_dir) / "scores", report, errors)
    else:
        remove_correction(Path(run_dir) / "scores")
    for na in report.not_applicable:
        click.echo(f"warning: {advice(na, str(run_dir))}", err=True)
    console = _console()
    for evaluator in report.evaluators:
        for cond in shown:
            table = _leaderboard(report, evaluator, cond)
            if table is not None:
                console.print(table)
                fixed = _corrected_board(report, evaluator, cond)
                if fixed is not None:
                    console.print(fixed)
                for line in _notes(report, evaluator, cond):
                    console.print(line)
    swap = _judge_swap(report, shown)
    if swap is not None:
        console.print(swap)
    if errors is not None:
        console.print(f"corrected: {errors.assumption}", soft_wrap=True)
        for line in _assumption_lines(report):
            console.print(line, soft_wrap=True)
    click.echo(f"wrote {len(paths)} files to {Path(run_dir) / 'scores'}")


def _vinabench(run_dir: Path, settings: Any, *, required: bool) -> list[Path]:
    """Write and print VinaBench's table (``scores/vinabench.csv``) of the run's
    ``vinabench`` signals; ``required``: none is an error."""
    from vsb.errors import InputError
    from vsb.scores.inputs import load_signals
    from vsb.scores.peer.vinabench import (
        COLUMNS,
        reference_note,
        vinabench_rows,
        write_vinabench,
    )

    signals = load_signals(run_dir)
    paths = write_vinabench(Path(run_dir) / "scores", signals, settings)
    if not paths:
        if required:
            raise InputError(
                "the run has no vinabench signals: run `vsb evaluate RUN --evaluator vinabench "
                "--judge … --vinabench-file FILE` (and --evaluator vinabench_ref for FID and "
                "CLIP-I) first"
            )
        return paths
    rows = vinabench_rows(signals, settings)
    table = _table("VinaBench's metrics", ("model", "condition", "portion", *COLUMNS))
    for r in rows:
        table.add_row(r["model"], r["condition"], r["portion"], *(_pct(r[c]) for c in COLUMNS))
    _console().print(table)
    note = reference_note(rows)
    if note is not None:
        click.echo(f"note: {note}", err=True)
    if required:
        click.echo(f"wrote {paths[0]}")
    return paths


@click.command()
@run_dir_argument
@click.option(
    "--a",
    "a",
    required=True,
    help="MODEL[@CONDITION] on the left of a − b (e.g. openai:gpt-image-1@independent).",
)
@click.option("--b", "b", required=True, help="MODEL[@CONDITION] on the right of a − b.")
@click.option(
    "--evaluator",
    default=None,
    help="Whose verdicts to compare (default: rules if present, else the only evaluator).",
)
@bootstrap_options()
@click.option(
    "--corrected", is_flag=True,
    help="Compare the scores corrected for the judge's own error (a judged --evaluator).",
)  # fmt: skip
def compare(
    run_dir: Path,
    a: str,
    b: str,
    evaluator: str | None,
    seed: int,
    resamples: int,
    corrected: bool,
) -> None:
    """Paired story-level bootstrap comparison a − b on every metric (a condition left out
    is taken from the other side, else the primary condition). Model names may hold colons,
    so write a side as MODEL@CONDITION, e.g. --a openai:gpt-image-1@structured_memory
    (the older MODEL:CONDITION is refused, naming the @ form). `vsb models` and
    `vsb conditions` list the names."""
    from vsb.scores.compare import compare_run
    from vsb.scores.compute import Resampling

    settings = Resampling(seed=seed, n_resamples=resamples)
    left_out: dict[str, str] = {}
    if corrected:
        from vsb.validation.correct.compare import compare_corrected

        rows, left_out = compare_corrected(run_dir, a, b, evaluator=evaluator, settings=settings)
    else:
        rows = compare_run(run_dir, a, b, evaluator=evaluator, settings=settings)
    first = rows[0] if rows else None
    title = (
        f"{first.a_model}@{first.a_condition} − {first.b_model}@{first.b_condition} "
        f"(evaluator {first.evaluator}{', corrected' if corrected else ''})"
        if first
        else f"{a} − {b}"
    )
    table = _table(
        title, ("metric", "a", "b", "Δ", "95% CI", "P(Δ>0)", "P(Δ=0)", "P(Δ<0)", "win", "n")
    )
    for r in rows:
        name = r.metric if r.metric_kind == "dimension" else _SUMMARY_NAMES[r.metric]
        table.add_row(
            name,
            _pct(r.a_score),
            _pct(r.b_score),
            f"{r.diff:+.3f}",
            _ci(r.ci_low, r.ci_high),
            _pct(r.p_greater),
            _pct(r.p_equal),
            _pct(r.p_less),
            _pct(r.win_rate),
            str(r.n_stories),
        )
    _console().print(table)
    for metric, why in left_out.items():
        click.echo(f"{_SUMMARY_NAMES.get(metric, metric)}: {why}")
