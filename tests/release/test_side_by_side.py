"""The main job's suite variants side by side (vsb.release.variants.side_by_side): their
images at once, a worker each; each one's comparison in a new process once its images are
made (a comparison holds the release's rows); the first error stops the rest."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from stage_progress import Recorder

from vsb.errors import InputError, ReleaseError
from vsb.release import variants as vr
from vsb.release.config import BuildConfig
from vsb.release.isolate import CAN_FORK, StageHost, wait_any

pytestmark = pytest.mark.skipif(not CAN_FORK, reason="needs fork")


def _fake_steps(monkeypatch: pytest.MonkeyPatch, log: Path, fail: str = "") -> None:
    """Replace the two steps by ones that log (step, style, pid, workers, start, end)."""

    def entry(step: str, style: str, workers: int, t0: float) -> None:
        row = [step, style, os.getpid(), workers, t0, time.monotonic()]
        with log.open("a") as f:
            f.write(json.dumps(row) + "\n")

    def images(style: str, root: Path, plain: Any, models: Any, conds: Any,
               config: BuildConfig, progress: Any) -> Path:  # fmt: skip
        t0 = time.monotonic()
        progress.advance(style, 1, 2)
        time.sleep(0.4)
        if style == fail:
            raise InputError("bad story", file="suite.json", location="story 3")
        entry("images", style, config.workers, t0)
        return root

    def comparison(style: str, root: Path, plain: Any, conds: Any, progress: Any) -> list[str]:
        t0 = time.monotonic()
        time.sleep(0.3 if style == "paraphrase" else 0.05)
        entry("compare", style, 0, t0)
        return [f"sensitivity/{style}.json"]

    monkeypatch.setattr(vr, "variant_images", images)
    monkeypatch.setattr(vr, "variant_comparison", comparison)


def _run(tmp_path: Path, rec: Recorder) -> dict[str, tuple[list[str], float]]:
    done: dict[str, tuple[list[str], float]] = {}
    vr.side_by_side(
        ["paraphrase", "implicit"], tmp_path, vr.PlainRows(tmp_path), ["m"], ["independent"],
        BuildConfig(name="x", out=tmp_path, workers=2), rec,
        lambda style, files, seconds: done.__setitem__(style, (files, seconds)),
    )  # fmt: skip
    return done


def test_images_at_once_then_each_comparison_in_a_new_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    _fake_steps(monkeypatch, log)
    rec = Recorder()
    done = _run(tmp_path, rec)
    assert {k: v[0] for k, v in done.items()} == {
        "paraphrase": ["sensitivity/paraphrase.json"],
        "implicit": ["sensitivity/implicit.json"],
    }
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    steps = {(r[0], r[1]): r for r in rows}
    a, b = steps["images", "paraphrase"], steps["images", "implicit"]
    assert a[4] < b[5] and b[4] < a[5]  # the images of both at once
    assert a[3] == b[3] == 1  # a worker each
    for style in ("paraphrase", "implicit"):
        assert steps["compare", style][4] >= steps["images", style][5]  # after its images
    pids = {r[2] for r in rows}
    assert len(pids) == 4 and os.getpid() not in pids  # a process per step
    started = [c[1][0] for c in rec.calls if c[0] == "start"]
    finished = [c[1][0] for c in rec.calls if c[0] == "finish"]
    assert started == ["paraphrase", "implicit"] and sorted(finished) == sorted(started)
    assert ("advance", ("implicit", 1, 2)) in rec.calls  # progress of both drawn
    assert all(seconds >= 0.4 for _files, seconds in done.values())


def test_an_error_in_one_variant_stops_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_steps(monkeypatch, tmp_path / "log.jsonl", fail="implicit")
    with pytest.raises(InputError, match="bad story") as err:
        _run(tmp_path, Recorder())
    assert err.value.location == "story 3"


def test_wait_any_draws_every_hosts_progress_and_reports_a_death() -> None:
    def slow(p: Recorder) -> str:
        p.note("slow", "working")
        time.sleep(0.3)
        return "slow done"

    def fast(p: Recorder) -> str:
        p.note("fast", "working")
        return "fast done"

    rec = Recorder()
    with StageHost({"s": slow}) as h1, StageHost({"f": fast}) as h2:
        h1.send("s")
        h2.send("f")
        hosts = {"a": h1, "b": h2}
        first = wait_any(hosts, rec)
        assert first == ("b", "fast done")
        h2.close()
        assert h2.proc is None
        assert wait_any({"a": h1}, rec) == ("a", "slow done")
    assert ("note", ("slow", "working")) in rec.calls and ("note", ("fast", "working")) in rec.calls

    def dies(_p: object) -> None:
        os._exit(3)

    with StageHost({"d": dies}) as h, pytest.raises(ReleaseError, match="exited with status 3"):
        h.send("d")
        wait_any({"x": h}, rec)
