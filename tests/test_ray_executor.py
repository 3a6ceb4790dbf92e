"""``vsb run --executor ray`` on a local two-CPU Ray cluster: the same images, records, oracle
faults and ledger totals as the local executor; a worker killed mid-task loses nothing (and
for a paid model its calls are in the ledger, the one in flight as interrupted); a
task Ray gives up on is recorded as failed images, and a rerun generates them."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vsb.adapters.base import GenerationRequest, GenerationResult
from vsb.adapters.simulators import SIMULATORS, ProceduralSimulator
from vsb.cli.main import main
from vsb.errors import InputError
from vsb.generator.generate import generate_story, write_suite
from vsb.run.executors_ray import RayExecutor, ray_resources
from vsb.run.ray_session import check_reachable
from vsb.run.runner import RunConfig, run
from vsb.store.ledger import Ledger

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'vsb[ray]'")

MODELS = ["procedural-drift-mid", "procedural-oracle"]
CONDITIONS = ["independent", "previous_image", "structured_memory"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster with two CPUs, shared by the module's tests."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # the test's own adapters travel by value (workers cannot import the tests package)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        yield
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        ray.shutdown()


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ray-suite")
    stories = [
        generate_story("counting", "easy", "counting-easy", seed=0),
        generate_story("wardrobe", "medium", "wardrobe-medium", seed=1),
        generate_story("possession", "easy", "possession-easy", seed=2),
    ]
    write_suite(stories, out, seed=0)
    return out


def _records(run_dir: Path) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]
    for r in rows:
        r.pop("latency_s")
    return rows


def _images(run_dir: Path) -> dict[str, bytes]:
    root = run_dir / "images"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.png")}


def _totals(run_dir: Path) -> list[tuple[Any, ...]]:
    with Ledger.open_existing(run_dir / "ledger.sqlite") as led:
        rows = led.summary()
    return sorted(
        (r.model, r.requests, r.hits, r.calls, r.failures, r.cost_usd, r.interrupted) for r in rows
    )


def _same_run(a: Path, b: Path) -> None:
    assert _records(a) == _records(b)
    assert _images(a) == _images(b) and _images(a)
    assert (a / "oracle" / "faults.jsonl").read_bytes() == (
        b / "oracle" / "faults.jsonl"
    ).read_bytes()
    assert _totals(a) == _totals(b)


def _config(suite: Path, out: Path, cache: Path, executor: Any = None) -> RunConfig:
    return RunConfig(
        suite_dir=suite, models=MODELS, conditions=CONDITIONS, out=out, workers=1,
        cache_dir=cache, executor=executor,
    )  # fmt: skip


def test_cli_ray_run_equals_the_local_run(
    cluster: None, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["run", "--suite", str(suite), "--model", ",".join(MODELS)]
    common += ["--condition", ",".join(CONDITIONS)]
    local = [*common, "--out", str(tmp_path / "local"), "--cache", str(tmp_path / "c1")]
    assert main([*local, "--workers", "1"]) == 0
    remote = [*common, "--out", str(tmp_path / "ray"), "--cache", str(tmp_path / "c2")]
    assert main([*remote, "--executor", "ray"]) == 0
    outs = capsys.readouterr().out.splitlines()
    summary = outs[0].split(" in ")[0]
    assert outs[1].split(" in ")[0] == summary and summary.endswith(" 0 failed)")
    _same_run(tmp_path / "local", tmp_path / "ray")
    # a second ray run finds everything in the driver's cache: no task is shipped
    executor = RayExecutor()
    again = run(_config(suite, tmp_path / "ray", tmp_path / "c2", executor))
    n = len(_records(tmp_path / "local"))
    assert (again.calls, again.hits, executor.stats["shipped"]) == (0, n, 0)


class KillOnce(ProceduralSimulator):
    """A simulator whose worker process dies (SIGKILL) in the middle of one story, once."""

    def __init__(self, name: str, marker: Path, story: str, always: bool = False) -> None:
        super().__init__(name, SIMULATORS[name])
        self.marker, self.story, self.always = marker, story, always

    def generate(self, request: GenerationRequest) -> GenerationResult:
        p = request.privileged
        hit = p is not None and p.story.id == self.story and p.scene == 2
        if hit and (self.always or not self.marker.exists()):
            self.marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return super().generate(request)


def test_a_worker_killed_mid_task_loses_nothing(cluster: None, suite: Path, tmp_path: Path) -> None:
    local = run(_config(suite, tmp_path / "local", tmp_path / "c1"))
    marker = tmp_path / "killed"
    adapter = KillOnce("procedural-drift-mid", marker, "wardrobe-medium")
    executor = RayExecutor(max_retries=2)
    res = run(
        _config(suite, tmp_path / "ray", tmp_path / "c2", executor),
        adapters={"procedural-drift-mid": adapter},
    )
    assert marker.exists() and int(marker.read_text()) != os.getpid()  # a worker died
    assert (res.images, res.failures) == (local.images, 0)
    assert executor.stats == {"cached": 0, "shipped": 6, "lost": 0}
    _same_run(tmp_path / "local", tmp_path / "ray")


class PaidKillOnce(KillOnce):
    """``KillOnce`` billed per call, like a provider: its calls go through the desk."""

    paid = True


def test_a_paid_worker_killed_mid_task_leaves_its_calls_in_the_ledger(
    cluster: None, suite: Path, tmp_path: Path
) -> None:
    """Regression (issue #23 item 2): the calls of a worker killed mid-task were missing from
    the ledger (its rows travelled with the result it never returned), so paid spend was
    under-counted. Now every call it began is there: the one in flight as interrupted, the
    ones before it finished, with their images in the cache (the retry does not pay again)."""
    marker = tmp_path / "killed"
    name = "procedural-drift-mid"
    local = run(
        _config(suite, tmp_path / "local", tmp_path / "c1"),
        adapters={name: PaidKillOnce(name, marker, "no-such-story")},
    )
    executor = RayExecutor(max_retries=2)
    res = run(
        _config(suite, tmp_path / "ray", tmp_path / "c2", executor),
        adapters={name: PaidKillOnce(name, marker, "wardrobe-medium")},
    )
    assert marker.exists() and int(marker.read_text()) != os.getpid()  # a worker died
    assert (res.images, res.failures) == (local.images, 0)
    a, b = tmp_path / "local", tmp_path / "ray"
    # the same images; the retried task took what the killed try had stored from the cache
    assert _strip_hits(_records(a)) == _strip_hits(_records(b))
    assert _images(a) == _images(b) and _images(a)
    local_calls, ray_calls = _calls(a), _calls(b)
    interrupted = [c for c in ray_calls if c[1] == "started"]
    killed_key = next(
        r["key"] for r in _records(a)
        if (r["model"], r["story_id"], r["scene"], r["condition"])
        == (name, "wardrobe-medium", 2, CONDITIONS[0])
    )  # fmt: skip
    assert [c[0] for c in interrupted] == [killed_key]
    finished = sorted(c[0] for c in ray_calls if c[1] != "started")
    assert finished == sorted(c[0] for c in local_calls)  # each call made once, to the end


def _strip_hits(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "cache_hit"} for r in rows]


def _calls(run_dir: Path) -> list[tuple[str, str]]:
    """(key, status) of every adapter call in the ledger."""
    with Ledger.open_existing(run_dir / "ledger.sqlite") as led:
        rows = led._conn().execute("SELECT key, status FROM requests WHERE cache_hit = 0")
        return [(str(k), str(st)) for k, st in rows]


def test_a_task_lost_for_good_is_recorded_and_a_rerun_completes_it(
    cluster: None, suite: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    adapter = KillOnce("procedural-drift-mid", marker, "wardrobe-medium", always=True)
    executor = RayExecutor(max_retries=0)
    config = _config(suite, tmp_path / "ray", tmp_path / "c", executor)
    res = run(config, adapters={"procedural-drift-mid": adapter})
    lost = [r for r in _records(tmp_path / "ray") if r["error"]]
    scenes = len(json.loads((suite / "wardrobe-medium.json").read_text())["scenes"])
    assert len(lost) == res.failures == scenes * len(CONDITIONS)
    assert {(r["model"], r["story_id"]) for r in lost} == {
        ("procedural-drift-mid", "wardrobe-medium")
    }
    assert all(r["error"].startswith("ray: task lost") and r["path"] is None for r in lost)
    assert executor.stats["lost"] == 1
    failed = {t[0]: t[4] for t in _totals(tmp_path / "ray")}
    assert failed["procedural-drift-mid"] == scenes * len(CONDITIONS)
    # the rerun (the worker no longer dies) generates exactly the lost images
    local = run(_config(suite, tmp_path / "local", tmp_path / "c1"))
    lost_keys = {
        r["key"]
        for r in _records(tmp_path / "local")
        if (r["model"], r["story_id"]) == ("procedural-drift-mid", "wardrobe-medium")
    }
    again = run(config)
    assert (again.failures, again.calls, again.images) == (0, len(lost_keys), local.images)

    def strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "cache_hit"} for r in rows]

    assert strip(_records(tmp_path / "ray")) == strip(_records(tmp_path / "local"))
    assert _images(tmp_path / "ray") == _images(tmp_path / "local")


def test_resources_per_adapter() -> None:
    from vsb.adapters.registry import get_adapter

    assert ray_resources(get_adapter("procedural-oracle")) == {"num_cpus": 1}
    assert ray_resources(get_adapter("openai:dall-e-3")) == {"num_cpus": 0}


def test_an_unreachable_ray_address_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(InputError, match="no Ray head answers there"):
        check_reachable(f"127.0.0.1:{port}")
    check_reachable("auto")  # left to Ray


def test_ray_address_needs_the_ray_executor(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--suite", str(suite), "--model", "procedural-oracle", "--condition"]
    argv += ["independent", "--out", str(tmp_path / "r"), "--ray-address", "auto"]
    assert main(argv) != 0
    assert "--ray-address needs --executor ray" in capsys.readouterr().err


class GpuSim(ProceduralSimulator):
    """A simulator that asks Ray for a GPU (as a diffusers model on CUDA does)."""

    ray_resources = {"num_gpus": 1}  # noqa: RUF012


def _shipment(adapter: ProceduralSimulator, version: str | None = None) -> Any:
    from vsb.run.ray_worker import Shipment

    spec = bytes(ray.cloudpickle.dumps(adapter))
    return Shipment(adapter.name, spec, version or adapter.version, [], {}, [], 0, None)


def test_a_gpu_worker_keeps_one_loaded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import vsb.run.ray_worker as er

    monkeypatch.setattr(er, "_WORKER_ADAPTERS", {})
    cpu = ProceduralSimulator("procedural-sloppy", SIMULATORS["procedural-sloppy"])
    gpu_a = GpuSim("procedural-oracle", SIMULATORS["procedural-oracle"])
    gpu_b = GpuSim("procedural-drift-mid", SIMULATORS["procedural-drift-mid"])
    for adapter in (cpu, gpu_a, gpu_b):
        er._worker_adapter(_shipment(adapter))
    assert sorted(k[0] for k in er._WORKER_ADAPTERS) == [
        "procedural-drift-mid",
        "procedural-sloppy",
    ]
    again = er._worker_adapter(_shipment(gpu_b))  # the same model: reused, not rebuilt
    assert again is next(a for k, a in er._WORKER_ADAPTERS.items() if k[0] == gpu_b.name)


def test_a_worker_with_other_weights_refuses_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    import vsb.run.ray_worker as er

    monkeypatch.setattr(er, "_WORKER_ADAPTERS", {})
    sim = ProceduralSimulator("procedural-oracle", SIMULATORS["procedural-oracle"])
    with pytest.raises(InputError, match="this Ray worker has version"):
        er._worker_adapter(_shipment(sim, version="dir:other-weights"))


def test_without_ray_the_run_fails_before_touching_the_run_directory(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--suite", str(suite), "--model", "procedural-oracle", "--condition"]
    argv += ["independent", "--out", str(tmp_path / "r"), "--cache", str(tmp_path / "c")]
    assert main(argv) == 0
    manifest = (tmp_path / "r" / "manifest.json").read_bytes()
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    assert main([*argv, "--executor", "ray"]) == 1
    assert "pip install 'vsb[ray]'" in capsys.readouterr().err
    assert (tmp_path / "r" / "manifest.json").read_bytes() == manifest


def test_a_budget_on_paid_models_is_refused_before_any_request(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    config = RunConfig(
        suite_dir=suite, models=["openai:dall-e-3"], conditions=["independent"],
        out=tmp_path / "r", cache_dir=tmp_path / "c", budget_usd=1.0, executor=RayExecutor(),
    )  # fmt: skip
    with pytest.raises(InputError, match="workers cannot share one spending limit"):
        run(config)
    assert not (tmp_path / "c" / "objects").exists()


PIPE = """
import io
{head}
from PIL import Image


def make(req):
    {body}
    img = Image.new("RGB", (32, 32), ((req.scene or 0) * 30 % 256, len(req.prompt) % 256, 9))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()
"""


def _pipe(folder: Path, name: str, head: str = "", body: str = "pass") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(PIPE.format(head=head, body=body), "utf-8")


def test_a_python_model_on_the_drivers_path_only_runs_on_ray_workers(
    cluster: None, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``python:`` model whose module only the driver can import (a folder on its path, as
    in a notebook or with a remote cluster) travels by value: the same records and images as
    the local executor (every task failed with ModuleNotFoundError on the workers before)."""
    _pipe(tmp_path / "mods", "raypipe")
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    monkeypatch.delitem(sys.modules, "raypipe", raising=False)
    common = ["run", "--suite", str(suite), "--model", "python:raypipe:make", "--condition",
              "independent,previous_image"]  # fmt: skip
    assert main([*common, "--out", str(tmp_path / "local"), "--cache", str(tmp_path / "c1")]) == 0
    remote = [*common, "--out", str(tmp_path / "ray"), "--cache", str(tmp_path / "c2")]
    assert main([*remote, "--executor", "ray"]) == 0
    local, remote = _records(tmp_path / "local"), _records(tmp_path / "ray")
    # which of two identical requests was made first (and which served from it) is the order
    # the tasks ran in; the requests, keys and images are the same
    assert sum(r.pop("cache_hit") for r in local) == sum(r.pop("cache_hit") for r in remote)
    assert local == remote and not any(r["error"] for r in remote)
    assert _images(tmp_path / "local") == _images(tmp_path / "ray") and _images(tmp_path / "ray")


def test_a_python_model_that_does_not_pickle_by_value_goes_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By value where it pickles and is small; by name where its function holds a lock or a
    large object (a loaded pipeline: workers that import the module load their own)."""
    import pickle

    from vsb.adapters.function import FunctionModel, load_function
    from vsb.run import executors_ray

    monkeypatch.syspath_prepend(str(tmp_path))
    _pipe(tmp_path, "plain_pipe")
    _pipe(tmp_path, "locked_pipe", "import threading\nLOCK = threading.Lock()", "with LOCK: pass")
    _pipe(tmp_path, "heavy_pipe", "WEIGHTS = bytes(20 << 20)", "assert WEIGHTS")
    specs = {}
    for name in ("plain_pipe", "locked_pipe", "heavy_pipe"):
        adapter = FunctionModel(load_function(f"{name}:make"), f"python:{name}:make")
        specs[name] = executors_ray._adapter_spec(adapter)
    for name in specs:  # a worker that cannot import the modules
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    assert pickle.loads(specs["plain_pipe"]).fn.__module__ == "plain_pipe"
    for name in ("locked_pipe", "heavy_pipe"):
        with pytest.raises(ModuleNotFoundError, match=name):
            pickle.loads(specs[name])
