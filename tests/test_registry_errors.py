"""Registries list known names on a miss; errors format as FILE: LOCATION: MESSAGE."""

from __future__ import annotations

import pytest

from vsb.errors import TransitionError, UnknownNameError, VsbError
from vsb.fsio import atomic_write_json, canonical_json
from vsb.registry import Registry


def test_unknown_name_lists_known_and_suggests() -> None:
    reg: Registry[int] = Registry("model")
    reg.add("procedural-oracle", 1)
    reg.add("procedural-amnesiac", 2)
    with pytest.raises(UnknownNameError) as info:
        reg.get("procedural-oracel")
    msg = str(info.value)
    assert "did you mean 'procedural-oracle'" in msg
    assert "known: procedural-amnesiac, procedural-oracle" in msg


def test_duplicate_registration_is_refused() -> None:
    reg: Registry[int] = Registry("condition")
    reg.add("a", 1)
    with pytest.raises(ValueError, match="registered twice"):
        reg.add("a", 2)


def test_error_format() -> None:
    assert str(VsbError("bad", file="x.json", location="/a/0")) == "x.json: /a/0: bad"
    assert str(VsbError("bad")) == "bad"
    err = TransitionError("give_not_held", "Bo does not hold it", story="s", scene=2, event=1)
    assert (
        str(err)
        == "story s scene 2 event 1: impossible transition (give_not_held): Bo does not hold it"
    )


def test_canonical_json_and_atomic_write(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert canonical_json({"b": 1, "a": [1, 2]}) == b'{"a":[1,2],"b":1}'
    target = tmp_path / "out.json"
    atomic_write_json(target, {"x": 1})
    atomic_write_json(target, {"x": 2})
    assert target.read_text() == '{\n  "x": 2\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temp files left behind


def test_a_command_exit_code_reaches_the_caller() -> None:
    """``ctx.exit(3)`` inside a command: main() returned 0 before (the code was dropped)."""
    import click

    from vsb.cli.main import cli, main

    @cli.command("exit-probe", hidden=True)
    @click.pass_context
    def probe(ctx: click.Context) -> None:
        ctx.exit(3)

    try:
        assert main(["exit-probe"]) == 3
    finally:
        cli.commands.pop("exit-probe", None)
