"""``vsb ledger``: per-model calls, cache hits, failures, latency, tokens and cost of a run.

*interrupted* counts calls begun but never finished (the run was killed during them);
*tokens in / out* are what a judge's service reported (``—``: none reported); *price* is the
list price from ``config/pricing.json`` (per image for generation models, per million input /
output tokens for judges), shown even when every call failed (failed calls cost 0: an error
answer is not billed). Off a terminal the table is never cut: it takes ``COLUMNS`` when set,
else the width it needs."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

#: Width of the table off a terminal without ``COLUMNS``: wide enough never to cut a cell.
_UNBOUNDED = 1000


def _cost(value: float | None, unknown: int) -> str:
    return f"unknown ({unknown} unpriced)" if value is None else f"${value:.4f}"


def _tokens(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _console() -> Console:
    """A console that honours ``COLUMNS``, and off a terminal never cuts the table."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return Console(width=int(columns))
    probe = Console()
    return probe if probe.is_terminal else Console(width=_UNBOUNDED)


def _price(model: str) -> str:
    """The list price of a ledger model (``judge:NAME`` rows are judges, ``import:NAME``
    the importer's LLM), or ``unknown``: the price the calls were costed at, looked up by the
    model's pricing key as ``vsb run`` does (``openai:gpt-image-1`` is priced as
    ``openai/gpt-image-1``)."""
    from vsb.evaluators.vlm.store import JudgePricing
    from vsb.store.ledger import Pricing

    role, _, name = model.partition(":")
    if role in ("judge", "import"):
        jp = JudgePricing.load().price(name)
        if jp is None:
            return "unknown"
        return f"${jp.usd_per_mtok_input:g} / ${jp.usd_per_mtok_output:g} per Mtok"
    prices = Pricing.load()
    p = prices.price(_pricing_key(model))
    if p is None:
        p = prices.price(model)
    return "unknown" if p is None else f"${p:g}/image"


def _pricing_key(model: str) -> str:
    """The model's entry in the price list (its adapter's ``pricing_key``), else its name."""
    from vsb.adapters.registry import get_adapter
    from vsb.errors import VsbError

    if model.partition(":")[0] not in ("openai", "replicate", "stability", "imagen"):
        return model  # not an HTTP provider: priced by its name (nothing heavy imported)
    try:
        return str(getattr(get_adapter(model), "pricing_key", model))
    except (VsbError, TypeError, ValueError, OSError):  # a model no longer known here
        return model


@click.command("ledger")
@click.argument("run_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--all-sessions", is_flag=True, help="Sum every run into RUN_DIR, not the last.")
def ledger(run_dir: Path | None, all_sessions: bool) -> None:
    """Summarise the cost ledger of RUN_DIR (default: the current directory)."""
    from vsb.store.ledger import LEDGER_NAME, Ledger

    path = (run_dir or Path(".")) / LEDGER_NAME
    with Ledger.open_existing(path) as led:
        rows = led.summary(all_sessions=all_sessions)
    console = _console()
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
            "tokens in",
            "tokens out",
            "price",
            "cost",
        )
    ):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        lat = "—" if r.mean_latency_s is None else f"{r.mean_latency_s * 1000:.1f} ms"
        table.add_row(
            r.model, str(r.requests), str(r.hits), str(r.calls), str(r.failures),
            str(r.interrupted), lat, _tokens(r.input_tokens), _tokens(r.output_tokens),
            _price(r.model), _cost(r.cost_usd, r.unknown_cost),
        )  # fmt: skip
    console.print(table)
