"""``shared_questions``: plans made within it build a scene's (and a pair's) questions once for
every later plan of the same scenes, and plan exactly the calls plans made without it do (the
reference judges plan the same frames once per judge; only the judge model differs)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from vsb.evaluators.vlm import plan
from vsb.evaluators.vlm.plan import plan_calls, plan_pair_calls, shared_questions
from vsb.story.models import Story

MODELS = ("sim-a", "sim-b", "sim-c")


@pytest.fixture
def frames(tmp_path: Path, default_suite: list[Story]) -> list[tuple[Any, ...]]:
    """Every scene of four stories, one frame per simulator (distinct bytes per frame)."""
    out = []
    for m in MODELS:
        for story in default_suite[:4]:
            for k, scene in enumerate(story.scenes, start=1):
                path = tmp_path / m / story.id / f"scene_{k:02d}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(f"{m}/{story.id}/{k}".encode())
                out.append((m, "independent", story.id, k, str(path), scene))
    return out


def _sequences(frames: list[tuple[Any, ...]], suite: list[Story]) -> list[tuple[Any, ...]]:
    stories = {s.id: s for s in suite}
    seqs: dict[tuple[str, str, str], list[tuple[int, str | None]]] = {}
    for m, cond, sid, k, path, _scene in frames:
        seqs.setdefault((m, cond, sid), []).append((k, path))
    return [(m, c, s, images, stories[s].scenes) for (m, c, s), images in seqs.items()]


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> Counter[str]:
    """Count the calls of ``plan.<name>`` (still doing its work)."""
    seen: Counter[str] = Counter()
    inner = getattr(plan, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen[name] += 1
        return inner(*args, **kwargs)

    monkeypatch.setattr(plan, name, counted)
    return seen


@pytest.mark.parametrize("batch", [0, 1, 3])
def test_shared_plans_are_the_plans_made_without(
    frames: list[tuple[Any, ...]], batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = {j: plan_calls(frames, j, batch, "http://127.0.0.1/v1") for j in ("yes", "no")}
    built = _counting(monkeypatch, "_scene_questions")
    with shared_questions() as memo:
        shared = {j: plan_calls(frames, j, batch, "http://127.0.0.1/v1") for j in ("yes", "no")}
        after_first = built["_scene_questions"]
        assert memo.scenes  # kept for the next plan
    assert shared == alone  # the same calls, keys included
    assert [c.key for c in shared["yes"]] != [c.key for c in shared["no"]]
    # the second judge's plan built nothing: every scene's questions came from the first's
    assert after_first == built["_scene_questions"] > 0
    # one build per scene (and part of it), however many simulators drew it
    parts = {(id(f[5]), s) for f in frames for s in range(0, len(f[5].requirements), batch or 99)}
    assert after_first == len(parts)


def test_without_the_scope_every_plan_builds_its_own(
    frames: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _counting(monkeypatch, "_scene_questions")
    with shared_questions():
        plan_calls(frames, "yes")
    once = built["_scene_questions"]
    plan_calls(frames, "yes")  # the scope has ended: its memo is gone
    plan_calls(frames, "no")
    assert built["_scene_questions"] == 3 * once


def test_nested_scopes_share_the_outer_memo() -> None:
    with shared_questions() as outer, shared_questions() as inner:
        assert inner is outer


def test_shared_pair_plans_are_the_plans_made_without(
    frames: list[tuple[Any, ...]], default_suite: list[Story], monkeypatch: pytest.MonkeyPatch
) -> None:
    seqs = _sequences(frames, default_suite)
    alone = {j: plan_pair_calls(seqs, j) for j in ("yes", "no")}
    asked = _counting(monkeypatch, "pair_questions")
    with shared_questions():
        shared = {j: plan_pair_calls(seqs, j) for j in ("yes", "no")}
    assert shared == alone
    assert alone["yes"] and [c.key for c in alone["yes"]] != [c.key for c in alone["no"]]
    # one build per pair of consecutive scenes, for all simulators and both judges
    pairs = {(s.id, k) for s in default_suite[:4] for k in range(2, len(s.scenes) + 1)}
    assert asked["pair_questions"] == len(pairs)
