"""The adapter interface: request keys, prompts, credentials, the registry, layering."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vsb.adapters.base import GenerationRequest, Privileged, require_env
from vsb.adapters.registry import get_adapter, model_names, resolve_models
from vsb.conditions import ConditionContext
from vsb.errors import CredentialMissing, UnknownNameError
from vsb.generator.generate import generate_story

VSB = Path(__file__).parents[2] / "vsb"
SIMS = [
    "procedural-oracle",
    "procedural-drift-low",
    "procedural-drift-mid",
    "procedural-amnesiac",
    "procedural-sloppy",
]


def _req(**kw: object) -> GenerationRequest:
    base: dict[str, object] = {
        "model": "m", "version": "1", "prompt": "a scene", "seed": 0,
        "context": ConditionContext("independent"), "parameters": {"a": 1, "b": 2},
    }  # fmt: skip
    base.update(kw)
    return GenerationRequest(**base)  # type: ignore[arg-type]


def test_key_covers_every_field_and_sorts_parameters() -> None:
    k = _req().key()
    assert len(k) == 64 and k == _req().key()
    assert _req(parameters={"b": 2, "a": 1}).key() == k
    for change in (
        {"model": "n"}, {"version": "2"}, {"prompt": "another"}, {"seed": 1},
        {"parameters": {"a": 1, "b": 3}}, {"reference_images": (b"png",)},
        {"context": ConditionContext("previous_text", text="before")},
        {"context": ConditionContext("structured_memory", data={"x": 1})},
    ):  # fmt: skip
        assert _req(**change).key() != k, change
    assert _req(reference_images=(b"png",)).key() != _req(reference_images=(b"gif",)).key()
    # the condition's name alone does not change what is sent
    assert _req(context=ConditionContext("full_context")).key() == k


def test_simulators_key_on_story_scene_and_condition() -> None:
    story = generate_story("counting", "easy", "c", seed=0)
    p = Privileged(story, "abc", 1, "independent")
    k = _req(privileged=p).key()
    assert k != _req().key()
    assert _req(privileged=Privileged(story, "abc", 2, "independent")).key() != k
    assert _req(privileged=Privileged(story, "abd", 1, "independent")).key() != k
    assert _req(privileged=Privileged(story, "abc", 1, "previous_text")).key() != k


def test_full_prompt() -> None:
    assert _req().full_prompt() == "a scene"
    text = _req(
        context=ConditionContext("x", text="earlier", data={"b": 1, "a": [1]})
    ).full_prompt()
    assert text == (
        'State so far (JSON): {"a":[1],"b":1}\n\nStory so far: earlier\n\nDraw this scene: a scene'
    )


def test_require_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VSB_NOPE_KEY", raising=False)
    with pytest.raises(CredentialMissing, match="VSB_NOPE_KEY"):
        require_env("VSB_NOPE_KEY", "some-model")
    monkeypatch.setenv("VSB_NOPE_KEY", "k")
    assert require_env("VSB_NOPE_KEY", "some-model") == "k"


def test_registry() -> None:
    assert model_names()[:5] == SIMS
    assert resolve_models("procedural-oracle, procedural-sloppy") == [
        "procedural-oracle",
        "procedural-sloppy",
    ]
    readers = ["procedural-reader", "procedural-reader-77"]  # local too: see only the prompt
    assert resolve_models("all") == [*SIMS, *readers]  # local models only, never a paid one
    adapter = get_adapter("procedural-drift-mid")
    assert adapter.name == "procedural-drift-mid" and adapter.privileged
    assert adapter.process_safe and adapter.accepts_reference_image
    with pytest.raises(UnknownNameError) as info:
        get_adapter("procedural-drift")
    assert "unknown model 'procedural-drift'" in str(info.value)
    assert all(s in str(info.value) for s in SIMS)


def _imports(path: Path) -> set[str]:
    package = list(path.relative_to(VSB.parent).with_suffix("").parts[:-1])
    return _imports_of(path.read_text(), package)


def _imports_of(source: str, package: list[str]) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            base = ".".join(package[: len(package) - node.level + 1])
            mod = f"{base}.{node.module}" if node.module else base
            out |= {mod} | {f"{mod}.{a.name}" for a in node.names}
        elif (  # importlib.import_module("vsb.adapters…") / __import__(…)
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__",
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):  # fmt: skip
            out.add(str(node.args[0].value))
    return out


def test_import_scan_sees_every_form() -> None:
    src = (
        "import vsb.render\nfrom ..adapters.oracle import write_faults\n"
        "from ..run import runner\nimport importlib\nimportlib.import_module('vsb.adapters')\n"
    )
    found = _imports_of(src, ["vsb", "evaluators"])
    assert {"vsb.render", "vsb.adapters.oracle", "vsb.run.runner", "vsb.adapters"} <= found


def test_evaluators_cannot_import_the_oracle_writer() -> None:
    """No module under vsb/evaluators imports vsb.adapters (the oracle writer, the
    simulators), vsb.render or vsb.run.runner — directly, relatively or through importlib."""
    forbidden = ("vsb.adapters", "vsb.render", "vsb.run.runner")
    for path in sorted((VSB / "evaluators").rglob("*.py")):
        for name in _imports(path):
            assert not name.startswith(forbidden), f"{path} imports {name}"
    oracle = VSB / "adapters" / "oracle.py"
    assert oracle.is_file() and "faults.jsonl" in oracle.read_text()
