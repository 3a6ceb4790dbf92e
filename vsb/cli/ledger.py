"""``vsb ledger``: per-model calls, cache hits, failures, latency and cost of a run.

*interrupted* counts calls begun but never finished (the run was killed during them)."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table


def _cost(value: float | None, unknown: int) -> str:
    return f"unknown ({unknown} unpriced)" if value is None else f"${value:.4f}"


@click.command("ledger")
@click.argument("run_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--all-sessions", is_flag=True, help="Sum every run into RUN_DIR, not the last.")
def ledger(run_dir: Path | None, all_sessions: bool) -> None:
    """Summarise the cost ledger of RUN_DIR (default: the current directory)."""
    from vsb.ledger import LEDGER_NAME, Ledger

    path = (run_dir or Path(".")) / LEDGER_NAME
    with Ledger.open_existing(path) as led:
        rows = led.summary(all_sessions=all_sessions)
    console = Console() if Console().is_terminal else Console(width=120)
    table = Table(title=f"ledger: {path}", box=box.SIMPLE_HEAD)
    for i, col in enumerate(
        (
            "model",
            "requests",
            "cache hits",
            "calls",
            "failures",
            "interrupted",
            "mean latency",
            "cost",
        )
    ):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        lat = "—" if r.mean_latency_s is None else f"{r.mean_latency_s * 1000:.1f} ms"
        table.add_row(
            r.model, str(r.requests), str(r.hits), str(r.calls), str(r.failures),
            str(r.interrupted), lat, _cost(r.cost_usd, r.unknown_cost),
        )  # fmt: skip
    console.print(table)
