"""The data flows one way: each layer imports only the layers below it (ast scan)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1] / "vsb"
LEAVES = {"vsb", "vsb.vocab", "vsb.errors", "vsb.registry", "vsb.fsio"}


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in out if m == "vsb" or m.startswith("vsb.")}


def _modules(prefix: str) -> list[Path]:
    return [p for p in ROOT.rglob("*.py") if _module(p).startswith(prefix)]


def _allowed(imported: str, allowed: set[str]) -> bool:
    return any(
        imported == a or imported.startswith(a + ".") for a in allowed | LEAVES - {"vsb"}
    ) or (imported == "vsb")


@pytest.mark.parametrize(
    ("layer", "allowed"),
    [
        ("vsb.story", {"vsb.story", "vsb.state"}),
        ("vsb.state", {"vsb.story", "vsb.state"}),
        ("vsb.generator", {"vsb.story", "vsb.state", "vsb.generator"}),
    ],
)
def test_story_layer_imports_nothing_above_it(layer: str, allowed: set[str]) -> None:
    for path in _modules(layer):
        bad = {m for m in _imports(path) if not _allowed(m, allowed)}
        assert not bad, f"{_module(path)} imports {sorted(bad)}"


def test_evaluators_cannot_reach_simulators_renderer_or_oracle() -> None:
    # The ledger is allowed: a paid judge records its calls there like generation does
    # (it holds costs and latencies, nothing about what a simulator injected).
    forbidden = ("vsb.adapters", "vsb.render", "vsb.runner", "vsb.cache", "vsb.validation")
    paths = _modules("vsb.evaluators")
    assert len(paths) >= 5  # the scan is not vacuous
    for path in paths:
        bad = {m for m in _imports(path) if m.startswith(forbidden)}
        assert not bad, f"{_module(path)} imports {sorted(bad)}"


def test_only_the_cli_imports_the_cli_and_prints() -> None:
    for path in ROOT.rglob("*.py"):
        name = _module(path)
        if name.startswith("vsb.cli"):
            continue
        assert not {m for m in _imports(path) if m.startswith("vsb.cli")}, name
        tree = ast.parse(path.read_text())
        prints = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
        ]
        assert not prints, f"{name} calls print() at lines {prints}"
