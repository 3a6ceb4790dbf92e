"""The ``vsb`` command group; subcommands live in their own modules."""

from __future__ import annotations

import sys

import click

from vsb import __version__
from vsb.errors import VsbError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vsb")
def cli() -> None:
    """Visual Story Benchmark: does a text-to-image model stay coherent across a story?

    Typical flow: ``vsb suite generate`` -> ``vsb run`` -> ``vsb evaluate`` -> ``vsb score``
    -> ``vsb release freeze`` -> ``vsb site build``; ``vsb release build`` does it all.
    """


def _register() -> None:
    from vsb.cli import suite

    cli.add_command(suite.suite)
    from vsb.cli import score

    cli.add_command(score.score)
    cli.add_command(score.compare)
    from vsb.cli import validate

    cli.add_command(validate.validate_judge)
    from vsb.cli import ledger, run

    cli.add_command(run.run)
    cli.add_command(ledger.ledger)
    from vsb.cli import release, site

    cli.add_command(release.release)
    cli.add_command(site.site)
    from vsb.cli import evaluate

    cli.add_command(evaluate.evaluate)
    from vsb.cli import human

    cli.add_command(human.human)
    from vsb.cli import models

    cli.add_command(models.models)
    cli.add_command(models.conditions)
    from vsb.cli import analysis, compare_runs

    cli.add_command(analysis.analysis)
    cli.add_command(compare_runs.compare_runs)


_register()


def main(argv: list[str] | None = None) -> int:
    """Entry point: any ``VsbError`` becomes one line on stderr and exit status 1."""
    try:
        # Without standalone mode click returns a ctx.exit(code)'s code instead of exiting.
        rv = cli.main(args=argv, prog_name="vsb", standalone_mode=False)
    except VsbError as err:
        click.echo(f"error: {err}", err=True)
        return 1
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except click.exceptions.Exit as err:
        return err.exit_code
    except SystemExit as err:
        return err.code if isinstance(err.code, int) else 1
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
