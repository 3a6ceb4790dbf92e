"""``vsb models`` and ``vsb conditions``: what can be run, read from the registries
(thin wrappers over ``vsb.run.catalog``)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=160)


def _usd(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.3f}"


@click.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per model).")
@click.option(
    "--pricing",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Pricing file (default: config/pricing.json).",
)
def models(as_json: bool, pricing: Path | None) -> None:
    """List every registered model: kind, whether its credential is set (never its value),
    whether it accepts a reference image (the previous_image condition), and its list price
    per image with the price's as-of date (unknown prices say so)."""
    from vsb.run.catalog import PriceList, list_models, list_patterns

    prices = PriceList.load(pricing)
    infos = list_models(prices)
    patterns = list_patterns(prices)
    if as_json:
        doc = {
            "models": [asdict(i) | {"ready": i.ready} for i in infos],
            "patterns": [asdict(p) for p in patterns],
        }
        click.echo(json.dumps(doc, indent=2))
        return
    table = Table(title="Models (vsb run --model NAME)", box=box.SIMPLE_HEAD)
    for col in ("model", "kind", "credential", "reference image", "USD/image", "as of", "about"):
        table.add_column(col, no_wrap=col != "about")
    for i in infos:
        if i.env_var is None:
            cred = "--samples DIR" if i.kind == "stored" else "none needed"
        else:
            cred = _credential(i.env_var, i.credential_present)
        cells = (
            i.name,
            i.kind,
            cred,
            "yes" if i.accepts_reference_image else "no",
            _usd(i.usd_per_image),
            i.price_as_of or "—",
            i.description,
        )
        table.add_row(*(escape(c) for c in cells))  # names may hold [brackets]
    console = _console()
    console.print(table)
    if patterns:
        more = Table(title="Model families (vsb run --model PATTERN)", box=box.SIMPLE_HEAD)
        for col in ("pattern", "credential", "reference image", "USD/image (as of)", "about"):
            more.add_column(col, no_wrap=col in ("pattern", "credential"))
        for p in patterns:
            params = ", ".join(f"{k}={v}" for k, v in p.parameters.items())
            if p.env_var is not None:
                cred = _credential(p.env_var, p.credential_present)
            else:
                cred = p.needs or "none needed"
            listed = "; ".join(
                f"{k.split('/', 1)[-1]} {_usd(usd)} ({as_of or '—'})"
                for k, (usd, as_of) in p.prices.items()
            )
            family = (
                p.pattern,
                cred,
                p.image_input or "—",
                listed or "unknown",
                p.description + (f" ({params})" * bool(params)),
            )
            more.add_row(*(escape(c) for c in family))
        console.print(more)
    click.echo("`vsb run --model all` runs every simulator (never a paid provider).")


def _credential(env_var: str, present: bool | None) -> str:
    return f"{env_var} {'set' if present else 'NOT set'}"


@click.command("conditions")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per condition).")
def conditions(as_json: bool) -> None:
    """List every prompting condition: what context the model gets besides the scene text
    (which never changes across conditions)."""
    from vsb.run.catalog import list_conditions

    infos = list_conditions()
    if as_json:
        click.echo(json.dumps([asdict(i) for i in infos], indent=2))
        return
    table = Table(title="Conditions (vsb run --condition NAME[,NAME…] or all)", box=box.SIMPLE_HEAD)
    for col in ("condition", "kind", "context", "description"):
        table.add_column(col, no_wrap=col != "description")
    for i in infos:
        name = i.name + (" (primary)" if i.primary and "primary" not in i.description else "")
        table.add_row(*(escape(c) for c in (name, i.kind, i.context, i.description)))
    _console().print(table)
