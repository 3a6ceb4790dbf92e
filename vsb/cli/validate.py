"""``vsb validate-judge``: a thin wrapper over vsb.validation that prints one table section
per evaluator, then the signals grouped by evaluator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table

from vsb.cli.options import evaluators_option, run_dir_argument
from vsb.errors import InputError
from vsb.validation.models import EvaluatorValidation, JudgeReport, TaxonomyMetrics


def _console() -> Console:
    """A console; 120 columns when the output is not a terminal (pipes, files, tests)."""
    console = Console()
    return console if console.is_terminal else Console(width=120)


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    return table


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "—" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"


def _worst(rows: list[TaxonomyMetrics], attr: str) -> str:
    vals = [(getattr(t, attr), t.taxonomy) for t in rows[:-1] if getattr(t, attr) is not None]
    return f"{min(vals)[0]:.3f} {min(vals)[1]}" if vals else "—"


def _with_ci(x: float | None, lo: float | None, hi: float | None) -> str:
    return "—" if x is None else f"{x:.3f} {_ci(lo, hi)}"


def _print_section(console: Console, s: EvaluatorValidation) -> None:
    name = s.evaluator + (f" ({s.judge_model})" if s.judge_model else "")
    console.rule(f"evaluator {name}")
    tax = _table(
        f"{name} vs oracle per taxonomy: strict (same image, subject, label), 95% CI; "
        "rc = root cause",
        ("taxonomy", "faults", "recall", "detections", "precision", "rc recall", "rc precision"),
    )
    for t in s.taxonomy:
        if t.n_faults or t.n_detections or t.n_detections_root_cause:
            tax.add_row(
                t.taxonomy,
                str(t.n_faults),
                _with_ci(t.recall, t.recall_ci_low, t.recall_ci_high),
                str(t.n_detections),
                _with_ci(t.precision, t.precision_ci_low, t.precision_ci_high),
                _f(t.recall_root_cause),
                _f(t.precision_root_cause),
            )
    console.print(tax)
    pm = _table(
        f"{name} per model: strict, worst label; rc = root cause recall/precision",
        ("model", "faults", "recall", "precision", "min recall", "min precision", "rc R/P"),
    )
    for model, rows in s.taxonomy_by_model.items():
        total = rows[-1]
        pm.add_row(
            model,
            str(total.n_faults),
            _f(total.recall),
            _f(total.precision),
            _worst(rows, "recall"),
            _worst(rows, "precision"),
            f"{_f(total.recall_root_cause)}/{_f(total.precision_root_cause)}",
        )
    console.print(pm)
    vt = _table(
        f"{name} verdicts (rates over checks; not applicable rows excluded from every figure)",
        ("model", "checks", "unsure", "unsure rate", "parse failures", "rate", "not applicable"),
    )
    for model, v in [("all", s.verdicts), *s.verdicts_by_model.items()]:
        vt.add_row(
            model,
            str(v.n_checks),
            str(v.n_unsure),
            _f(v.unsure_rate),
            str(v.n_parse_failure),
            _f(v.parse_failure_rate),
            str(v.n_not_applicable),
        )
    console.print(vt)
    a, c = s.pass_rate, s.coherence
    console.print(
        f"{name}: AUROC of {a.signal} {_f(a.auroc)} ({a.n_frames} frames, {a.n_faulty} faulty); "
        f"{c.signal} vs oracle coherence: Spearman ρ {_f(c.spearman)}, "
        f"Kendall τ {_f(c.kendall)} ({c.n_units} units)"
    )
    g = s.agreement
    ci = (
        "—"
        if g.error_rate_ci_low is None
        else f"[{_f(g.error_rate_ci_low)}, {_f(g.error_rate_ci_high)}]"
    )
    console.print(
        f"{name}: error rate against the oracle {_f(g.error_rate)} {ci} "
        f"({g.n_wrong} of {g.n_answers} answers wrong: {g.n_false_pass} false passes, "
        f"{g.n_false_fail} false fails)"
    )


def _grouped(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows (item, cells…) grouped by the item's evaluator, groups in order of first
    appearance (stable within)."""
    first = {e: i for i, e in reversed(list(enumerate(r[0].evaluator for r in rows)))}
    return sorted(rows, key=lambda r: first[r[0].evaluator])


def print_report(console: Console, report: JudgeReport) -> None:
    """Every evaluator's section, then the AUROC and correlation tables by evaluator."""
    if report.n_frames_without_oracle:
        console.print(
            f"left out {report.n_frames_without_oracle} frames of models without an oracle "
            f"(their faults are unknown): {', '.join(report.models_without_oracle)}"
        )
    for s in report.evaluators:
        _print_section(console, s)
    console.rule("signals")
    signal_tables = (
        (
            "AUROC of −signal for 'frame has ≥1 injected visual fault'",
            ("AUROC", "frames", "faulty"),
            [(x, _f(x.auroc), str(x.n_frames), str(x.n_faulty)) for x in report.auroc],
        ),
        (
            "story-level rank correlation with oracle coherence",
            ("Spearman ρ", "Kendall τ", "units"),
            [(c, _f(c.spearman), _f(c.kendall), str(c.n_units)) for c in report.correlations],
        ),
    )
    for title, columns, rows in signal_tables:
        table = _table(title, ("evaluator", "signal", *columns))
        for x, *cells in _grouped(rows):
            table.add_row(x.evaluator, x.signal, *cells)
        console.print(table)


@click.command("validate-judge")
@run_dir_argument
@evaluators_option(
    "Validate only these evaluators (requirement or signal evaluators: rules, vlm, "
    "pairwise…); judge.json then holds only them. Default: every evaluator present."
)
def validate_judge(run_dir: Path, evaluators: str | None) -> None:
    """Validate every evaluator and signal against the sealed oracle of a simulator run
    (strict matching: same image, subject and label; root-cause view beside it); writes
    RUN_DIR/validation/."""
    from vsb.release.manifest import refuse_frozen
    from vsb.validation.judge import validate_run, write_judge

    refuse_frozen(
        run_dir,
        "validation/",
        "work on a copy (cp -r RELEASE DIR, then vsb release freeze DIR to publish it)",
    )
    names = None
    if evaluators is not None:
        names = [n.strip() for n in evaluators.split(",") if n.strip()]
        if not names:
            raise InputError("--evaluator needs at least one name (NAME[,NAME])")
    report = validate_run(run_dir, evaluators=names)
    paths = write_judge(run_dir, report)
    print_report(_console(), report)
    click.echo(f"wrote {len(paths)} files to {Path(run_dir) / 'validation'}")
