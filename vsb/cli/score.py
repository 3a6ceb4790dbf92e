"""``vsb score`` and ``vsb compare``: thin wrappers over vsb.scores that print rich tables
(``vsb validate-judge`` lives in vsb/cli/validate.py)."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

_RUN = click.Path(path_type=Path)
#: Display names of the summary metrics (the dimension ``adherence`` keeps its key).
_SUMMARY_NAMES = {
    "adherence": "prompt adherence",
    "coherence": "memory coherence",
    "global": "global",
}


def _console() -> Console:
    """A console; 120 columns when the output is not a terminal (pipes, files, tests)."""
    console = Console()
    return console if console.is_terminal else Console(width=120)


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    return table


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "—" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"


@click.command()
@click.argument("run_dir", type=_RUN)
@click.option("--seed", default=0, show_default=True, help="Bootstrap / perturbation seed.")
@click.option("--resamples", default=2000, show_default=True, help="Bootstrap resamples.")
@click.option("--condition", default=None, help="Only print this condition's leaderboard.")
def score(run_dir: Path, seed: int, resamples: int, condition: str | None) -> None:
    """Score a run: per-dimension pass rates with story-bootstrap CIs, comparisons and rank
    stability, written to RUN_DIR/scores/."""
    from vsb.scores.compute import score_run
    from vsb.scores.write import write_scores

    report = score_run(run_dir, seed=seed, n_resamples=resamples)
    paths = write_scores(run_dir, report)
    console = _console()
    primary_first = sorted(report.conditions, key=lambda c: c != report.primary_condition)
    for cond in primary_first:
        if condition is not None and cond != condition:
            continue
        rows = [r for r in report.scores if r.condition == cond]
        title = cond + (" (primary)" if cond == report.primary_condition else "")
        table = _table(
            title, ("model", "#", "global", "95% CI", "adherence", "coherence", "coherence CI")
        )
        for r in rows:
            g, a, c = r.global_score, r.adherence, r.coherence
            table.add_row(
                r.model,
                str(r.rank),
                _pct(g.score if g else None),
                _ci(g.ci_low, g.ci_high) if g else "—",
                _pct(a.score if a else None),
                _pct(c.score if c else None),
                _ci(c.ci_low, c.ci_high) if c else "—",
            )
        console.print(table)
    stab = next((s for s in report.rank_stability if s.primary), None)
    if stab is not None and stab.tau_mean is not None:
        console.print(
            f"rank stability ({stab.condition}, {stab.n_draws} Dirichlet draws): "
            f"Kendall τ mean {stab.tau_mean:.3f} [5%: {stab.tau_p05:.3f}, 95%: {stab.tau_p95:.3f}]"
        )
    click.echo(f"wrote {len(paths)} files to {Path(run_dir) / 'scores'}")


@click.command()
@click.argument("run_dir", type=_RUN)
@click.option("--a", "a", required=True, help="MODEL[:CONDITION] on the left of a − b.")
@click.option("--b", "b", required=True, help="MODEL[:CONDITION] on the right of a − b.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@click.option("--resamples", default=2000, show_default=True, help="Bootstrap resamples.")
def compare(run_dir: Path, a: str, b: str, seed: int, resamples: int) -> None:
    """Paired story-level bootstrap comparison a − b on every metric (a condition left out
    is taken from the other side, else the primary condition)."""
    from vsb.scores.compute import compare_run

    rows = compare_run(run_dir, a, b, seed=seed, n_resamples=resamples)
    first = rows[0] if rows else None
    title = (
        f"{first.a_model}:{first.a_condition} − {first.b_model}:{first.b_condition}"
        if first
        else f"{a} − {b}"
    )
    table = _table(title, ("metric", "a", "b", "Δ", "95% CI", "P(Δ>0)", "win", "n"))
    for r in rows:
        name = r.metric if r.metric_kind == "dimension" else _SUMMARY_NAMES[r.metric]
        table.add_row(
            name,
            _pct(r.a_score),
            _pct(r.b_score),
            f"{r.diff:+.3f}",
            _ci(r.ci_low, r.ci_high),
            _pct(r.p_greater),
            _pct(r.win_rate),
            str(r.n_stories),
        )
    _console().print(table)

