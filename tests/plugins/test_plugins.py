"""Plug-ins by entry point: a third-party distribution (a real ``*.dist-info`` with
``entry_points.txt``, written by the test into a folder on the path) adds a model adapter
(group ``vsb.adapters``) and an evaluator (group ``vsb.evaluators``); both run through
``vsb run``, ``evaluate``, ``score``, ``validate-judge`` and the site, with no edit to vsb."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from demo_plugin import DIST, EVALUATOR, INK, MODEL, PACKAGE, write_plugin

from vsb.adapters import registry
from vsb.errors import InputError, UnknownNameError
from vsb.generator.generate import generate_suite, write_suite
from vsb.tables import iter_rows

ROOT = Path(__file__).resolve().parents[2]
SIMULATOR = "procedural-drift-mid"


def vsb(tmp: Path, *args: str, plugin: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m vsb ARGS`` in ``tmp`` with the plug-in folder (if any) on PYTHONPATH."""
    path = [str(plugin)] if plugin else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-m", "vsb", *args],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    stories = generate_suite(0)
    out = tmp_path_factory.mktemp("suite")
    write_suite([stories[0], stories[5]], out, seed=0)
    return out


def test_plugin_model_runs_through_the_pipeline(tmp_path: Path, small_suite: Path) -> None:
    plugin = write_plugin(tmp_path / "site-packages")
    assert MODEL in ok(vsb(tmp_path, "models", plugin=plugin))
    run = tmp_path / "run"
    ok(vsb(
        tmp_path, "run", "--suite", str(small_suite), "--model", f"{MODEL},{SIMULATOR}",
        "--condition", "independent,structured_memory", "--out", str(run),
        "--cache", str(tmp_path / "cache"), plugin=plugin,
    ))  # fmt: skip
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    mine = [r for r in records if r["model"] == MODEL]
    sims = [r for r in records if r["model"] == SIMULATOR]
    assert len(mine) == len(sims) > 0 and all(r["error"] is None for r in mine)
    assert all((run / r["path"]).read_bytes().startswith(b"\x89PNG") for r in mine)

    ok(vsb(tmp_path, "evaluate", str(run), "--evaluator", f"rules,pairwise,{EVALUATOR}",
           plugin=plugin))  # fmt: skip
    ev = run / "evaluations"
    rows = [r for _, r in iter_rows(ev / "requirements.parquet")]
    by = {(r["evaluator"], r["model"]) for r in rows}
    assert by == {(e, m) for e in ("rules", EVALUATOR) for m in (MODEL, SIMULATOR)}
    mine = [r for r in rows if r["evaluator"] == EVALUATOR]
    assert {r["verdict"] for r in mine} == {"passed", "failed"}  # it reads the images
    assert EVALUATOR in json.loads((ev / "manifest.json").read_text())["evaluators"]

    ok(vsb(tmp_path, "score", str(run), plugin=plugin))
    scores = (run / "scores/model_scores.csv").read_text()
    for name in (MODEL, SIMULATOR, f"{EVALUATOR},{MODEL}", f"{EVALUATOR},{SIMULATOR}"):
        assert name in scores

    ok(vsb(tmp_path, "validate-judge", str(run), plugin=plugin))
    judged = (run / "validation/judge.json").read_text()
    assert f'"{EVALUATOR}"' in judged and f'"{SIMULATOR}"' in judged

    ok(vsb(tmp_path, "release", "freeze", str(run), plugin=plugin))
    site = tmp_path / "site"
    ok(vsb(tmp_path, "site", "build", str(run), "--out", str(site), plugin=plugin))
    assert MODEL in (site / "index.html").read_text()
    cards = "".join(p.read_text() for p in (site / "models").glob("*.html"))
    assert "Paints sha256(prompt)" in cards  # the model page describes the plug-in's model
    board = site / "leaderboard" / f"{EVALUATOR}.html"
    assert board.is_file() and MODEL in board.read_text()  # a leaderboard by the plug-in


def test_plugin_evaluator_takes_options_of_its_own(tmp_path: Path, small_suite: Path) -> None:
    plugin, run = write_plugin(tmp_path / "site-packages"), tmp_path / "run"
    ok(vsb(
        tmp_path, "run", "--suite", str(small_suite), "--model", SIMULATOR, "--condition",
        "independent", "--out", str(run), "--cache", str(tmp_path / "cache"), plugin=plugin,
    ))  # fmt: skip
    assert "--ink-index" in ok(vsb(tmp_path, "evaluate", "--evaluator", INK, "-h", plugin=plugin))
    shares = {}
    for index in (None, "3"):
        given = ["--ink-index", index] if index else []
        ok(vsb(tmp_path, "evaluate", str(run), f"--evaluator={INK}", *given, plugin=plugin))
        rows = [r for _, r in iter_rows(run / "evaluations/signals.parquet")]
        (signal,) = {r["signal"] for r in rows if r["evaluator"] == INK}  # replaced, not added
        shares[signal] = sorted(r["value"] for r in rows)
    assert set(shares) == {"ink_0", "ink_3"} and shares["ink_0"] != shares["ink_3"]
    unused = vsb(tmp_path, "evaluate", str(run), "--ink-index", "3", plugin=plugin)
    assert unused.returncode == 2 and "--ink-index" in unused.stderr  # only with demo-ink


def test_unknown_model_lists_plugin_models(tmp_path: Path, small_suite: Path) -> None:
    plugin = write_plugin(tmp_path / "site-packages")
    done = vsb(
        tmp_path, "run", "--suite", str(small_suite), "--model", "demo-paintr",
        "--condition", "independent", "--out", str(tmp_path / "run"), plugin=plugin,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"unknown model 'demo-paintr' (did you mean '{MODEL}'?)" in done.stderr


def test_broken_plugin_is_one_line_naming_it(tmp_path: Path, small_suite: Path) -> None:
    plugin = write_plugin(
        tmp_path / "site-packages",
        entry_points=f"[vsb.adapters]\nghost = {PACKAGE}.missing:Ghost\n",
    )
    done = vsb(
        tmp_path, "run", "--suite", str(small_suite), "--model", "ghost",
        "--condition", "independent", "--out", str(tmp_path / "run"), plugin=plugin,
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"plug-in {DIST} entry point '{PACKAGE}.missing:Ghost'" in done.stderr
    assert "ModuleNotFoundError" in done.stderr


def test_plugin_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder added to sys.path is seen at once; its model is imported only when asked."""
    assert MODEL not in registry.model_names()
    monkeypatch.syspath_prepend(str(write_plugin(tmp_path)))
    monkeypatch.delitem(sys.modules, f"{PACKAGE}.adapter", raising=False)
    assert registry.model_names()[-1] == MODEL
    entry = registry.adapter_entry(MODEL)
    assert entry is not None and entry.source == f"plug-in {DIST}"
    assert f"{PACKAGE}.adapter" not in sys.modules  # listed, not imported
    adapter = registry.get_adapter(MODEL)
    assert adapter.name == MODEL and registry.resolve_models(MODEL) == [MODEL]
    with pytest.raises(UnknownNameError, match=f"did you mean '{MODEL}'"):
        registry.get_adapter("demo-paintr")


def test_plugin_cannot_take_a_builtin_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_plugin(
        tmp_path,
        entry_points=f"[vsb.adapters]\nprocedural-oracle = {PACKAGE}.adapter:DemoPainter\n",
    )
    monkeypatch.syspath_prepend(str(folder))
    with pytest.raises(InputError, match=f"plug-in {DIST}: entry point 'procedural-oracle'"):
        registry.model_names()


def test_factory_must_build_an_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_plugin(tmp_path, entry_points=f"[vsb.adapters]\nodd = {PACKAGE}:__doc__\n")
    monkeypatch.syspath_prepend(str(folder))
    with pytest.raises(InputError, match="entry point 'vsb_demo_plugin:__doc__' is not a class"):
        registry.get_adapter("odd")


def test_no_registry_imports_its_members() -> None:
    """The built-ins are listed by import path: listing them imports none of them, and a model
    imports only its own module."""
    code = (
        "import sys, vsb.adapters.registry as r\n"
        "r.model_names(); r.resolve_models('all')\n"
        "print(sorted(m for m in sys.modules if m.startswith('vsb.adapters.')))\n"
        "r.get_adapter('stability:core')\n"
        "print(sorted(m for m in sys.modules if m.startswith('vsb.adapters.')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    listed, built = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert listed == str(["vsb.adapters.base", "vsb.adapters.registry"])
    assert "'vsb.adapters.providers.stability'" in built
    for other in ("simulators", "providers.openai", "providers.stored", "diffusers"):
        assert f"'vsb.adapters.{other}'" not in built, built
    for name, target in registry.BUILTIN.items():
        assert target.partition(":")[0].startswith("vsb.adapters."), name


def test_two_plugins_with_one_model_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(write_plugin(tmp_path / "a")))
    other = write_plugin(
        tmp_path / "b", entry_points=f"[vsb.adapters]\n{MODEL} = {PACKAGE}.adapter:Other\n"
    )
    (other / f"{PACKAGE}-0.1.dist-info").rename(other / "vsb_other_painter-0.2.dist-info")
    meta = other / "vsb_other_painter-0.2.dist-info" / "METADATA"
    meta.write_text("Metadata-Version: 2.1\nName: vsb-other-painter\nVersion: 0.2\n")
    monkeypatch.syspath_prepend(str(other))
    with pytest.raises(InputError, match=f"entry point '{MODEL}' .* is also declared by plug-in"):
        registry.get_adapter(MODEL)


def test_plugin_evaluator_cannot_take_a_builtin_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in evaluator named like a built-in used to be silently ignored (the built-in ran
    under the plug-in's name); it is refused with one line naming the plug-in, as for models."""
    from vsb.evaluators import registry as evaluators

    folder = write_plugin(
        tmp_path, entry_points=f"[vsb.evaluators]\nrules = {PACKAGE}.evaluator:DemoPresence\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    with pytest.raises(InputError, match=f"plug-in {DIST}: entry point 'rules' .* an evaluator"):
        evaluators.evaluator_names()
    done = vsb(tmp_path, "evaluate", str(tmp_path / "nothing"), plugin=folder)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"plug-in {DIST}: entry point 'rules'" in done.stderr
