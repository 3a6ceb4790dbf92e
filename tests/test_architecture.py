"""The data flows one way: each layer imports only the layers below it, no module imports
itself through others, and the layout stays readable (ast scan of every import statement,
lazy ones inside functions too; the circle test counts those under ``if TYPE_CHECKING`` too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1] / "vsb"
LEAVES = {"vsb", "vsb.story.vocab", "vsb.errors", "vsb.registry", "vsb.fsio"}


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
    forbidden = (
        "vsb.adapters",
        "vsb.render",
        "vsb.run.runner",
        "vsb.store.cache",
        "vsb.validation",
    )
    paths = _modules("vsb.evaluators")
    assert len(paths) >= 5  # the scan is not vacuous
    for path in paths:
        bad = {m for m in _imports(path) if m.startswith(forbidden)}
        assert not bad, f"{_module(path)} imports {sorted(bad)}"


def test_only_the_cli_imports_the_cli_and_prints() -> None:
    for path in ROOT.rglob("*.py"):
        name = _module(path)
        if name.startswith("vsb.cli") or name == "vsb.__main__":  # python -m vsb: the CLI
            continue
        assert not {m for m in _imports(path) if m.startswith("vsb.cli")}, name
        tree = ast.parse(path.read_text())
        prints = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
        ]
        assert not prints, f"{name} calls print() at lines {prints}"


# --- structure: no circle, short modules, small folders -----------------------------------

MAX_LINES = 450
MAX_LOOSE = 5
MAX_FOLDER = 14


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The vsb modules an import statement of module ``name`` (file ``path``) loads."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    base = node.module or ""
    if node.level:  # relative: from the package of ``name``
        package = name.split(".")
        keep = len(package) - node.level + (1 if path.name == "__init__.py" else 0)
        base = ".".join(package[:keep] + ([base] if base else []))
    return {base} | {f"{base}.{a.name}" for a in node.names}


def import_graph(typing: bool = False) -> dict[str, set[str]]:
    """Module -> the vsb modules it imports anywhere in its body (under TYPE_CHECKING only
    with ``typing``)."""
    paths = {_module(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text())
        typing_only = {
            id(x)
            for n in ast.walk(tree)
            if not typing and isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
            for x in ast.walk(n)
        }
        found: set[str] = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Import | ast.ImportFrom) and id(n) not in typing_only:
                found |= _targets(name, path, n)
        # importing a package's submodule runs the package's __init__ first: not an edge back
        graph[name] = {
            t for t in found if t in paths and t != name and not name.startswith(t + ".")
        }
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    circles.append(sorted(comp))
    return circles


def test_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_counting_lazy_and_type_checking_imports() -> None:
    graph = import_graph(typing=True)
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300  # not vacuous
    assert "vsb.release.stages" in graph["vsb.release.build"]  # lazy imports are counted
    assert import_circles(graph) == []


def test_no_module_over_450_lines() -> None:
    long = {
        _module(p): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"split along the data flow: {long}"


def test_at_most_five_loose_modules_at_the_top() -> None:
    loose = sorted(
        p.name for p in ROOT.glob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )
    assert len(loose) <= MAX_LOOSE, f"{len(loose)} loose modules in vsb/: {loose}"


def test_no_folder_with_more_than_14_modules() -> None:
    folders = [ROOT, *(d for d in ROOT.rglob("*") if d.is_dir() and d.name != "__pycache__")]
    crowded = {
        d.relative_to(ROOT.parent).as_posix(): n
        for d in folders
        if (n := sum(1 for p in d.glob("*.py") if p.name != "__init__.py")) > MAX_FOLDER
    }
    assert not crowded, f"folders with more than {MAX_FOLDER} modules: {crowded}"


#: The layers, lowest first: a module imports only modules of its own layer or below (the
#: longest matching prefix names a module's layer). ARCHITECTURE.md draws the same picture.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("vsb", "vsb.errors", "vsb.fsio", "vsb.registry"),
    ("vsb.tables",),  # the evaluation tables on disk (Parquet; older runs' JSON lines)
    ("vsb.story", "vsb.state"),
    ("vsb.generator", "vsb.conditions"),
    ("vsb.render",),
    ("vsb.adapters.base", "vsb.run.ray_session"),  # the adapter interface; a Ray connection
    ("vsb.store",),
    ("vsb.adapters",),
    ("vsb.run",),
    ("vsb.evaluators",),
    ("vsb.scores",),
    ("vsb.validation",),
    ("vsb.narrative",),  # narratives imported through the judge's call machinery
    # the format, and running work in a process of its own (the site's helper uses it too)
    ("vsb.release.manifest", "vsb.release.signing", "vsb.release.config", "vsb.release.isolate"),
    ("vsb.site.data",),  # reading a release for display
    ("vsb.human",),
    ("vsb.site",),
    ("vsb.release",),
    ("vsb.api",),  # vsb from Python (notebooks): the functions the commands call
    ("vsb.cli", "vsb.__main__"),
)


def layer_of(module: str) -> int:
    best, layer = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, layer = len(p), i
    assert layer >= 0, f"{module} is in no layer"
    return layer


def test_layer_of_takes_the_longest_prefix() -> None:
    assert layer_of("vsb.adapters.base") < layer_of("vsb.store.cache") < layer_of("vsb.adapters")
    assert layer_of("vsb.release.manifest") < layer_of("vsb.human.report")
    assert layer_of("vsb.human.report") < layer_of("vsb.release.build")


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    graph = import_graph()
    upward = sorted(
        f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)})"
        for m, targets in graph.items()
        for t in targets
        if layer_of(t) > layer_of(m)
    )
    assert len(graph) > 100  # not vacuous
    assert not upward, "\n".join(upward)
