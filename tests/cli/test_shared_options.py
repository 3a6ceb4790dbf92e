"""Options that several commands take are declared once (``vsb.cli.options``): each command
that takes one offers it under the same name, type and default."""

from __future__ import annotations

import click
import pytest

from vsb.cli.main import cli
from vsb.run.executors import executor_names


def _command(path: str) -> click.Command:
    cmd: click.Command = cli
    for name in path.split():
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


def _option(path: str, flag: str) -> click.Option:
    found = [p for p in _command(path).params if isinstance(p, click.Option) and flag in p.opts]
    assert len(found) == 1, f"{path} has {len(found)} {flag}"
    return found[0]


def _same(flag: str, paths: list[str]) -> None:
    opts = [_option(p, flag) for p in paths]
    first = opts[0]
    for o in opts[1:]:
        assert (o.name, o.default, repr(o.type), o.metavar) == (
            first.name, first.default, repr(first.type), first.metavar,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("flag", "paths"),
    [
        ("--workers", ["run", "evaluate", "release build"]),
        ("--judge", ["evaluate", "release build"]),
        ("--judge-batch", ["evaluate", "release build"]),
        ("--budget", ["evaluate", "release build", "run", "suite import"]),
        ("--base-url", ["evaluate", "release build", "run", "suite import"]),
        ("--dry-run", ["evaluate", "run", "suite import"]),
        ("--cache", ["evaluate", "run", "suite import"]),
        ("--executor", ["run", "evaluate"]),
        ("--ray-address", ["run", "evaluate"]),
        ("--model", ["evaluate", "compare-runs"]),
        ("--condition", ["evaluate", "compare-runs"]),
        ("--evaluator", ["evaluate", "score", "analysis", "validate-judge"]),
        ("--seed", ["score", "compare", "analysis", "compare-runs"]),
        ("--resamples", ["score", "compare", "analysis", "compare-runs"]),
    ],
)
def test_a_shared_option_is_the_same_everywhere(flag: str, paths: list[str]) -> None:
    _same(flag, paths)


def test_the_executor_choices_come_from_the_registry() -> None:
    for path in ("run", "evaluate"):
        choice = _option(path, "--executor").type
        assert isinstance(choice, click.Choice)
        assert list(choice.choices) == executor_names()


def test_every_evaluator_selection_goes_to_evaluators() -> None:
    for path in ("evaluate", "score", "analysis", "validate-judge"):
        assert _option(path, "--evaluator").name == "evaluators"
