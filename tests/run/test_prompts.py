"""``vsb suite prompts``: the exact request of every (story, scene, condition) goes out, an
outside pipeline makes the images, ``stored:SOURCE`` brings them back, and they score exactly
like the model that made them (issue #36)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from vsb.adapters.simulators import SIMULATORS
from vsb.cli.main import main
from vsb.conditions import get_condition
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.prompts import full_prompt
from vsb.story.io import load_suite

ALL = "all,random_context,predicted_memory"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three stories of the default suite (one of them with an ungrounded scene-1 twin)."""
    out = tmp_path_factory.mktemp("suite") / "small"
    write_suite(generate_suite(0)[::14][:3], out, seed=0)
    return out


def _export(suite: Path, out: Path, conditions: str, source: str, *more: str) -> list[dict]:
    assert main(["suite", "prompts", str(suite), "--condition", conditions, "--out", str(out),
                 "--source", source, *more]) == 0  # fmt: skip
    return [json.loads(line) for line in out.read_text("utf-8").splitlines()]


def _outside(rows: list[dict], frames: Path, samples: Path, *, distinct: bool) -> int:
    """The "outside generator": copies the frame ``frames`` holds for each row's request."""
    made = 0
    for r in rows:
        if distinct and r["same_as"]:
            continue
        src = frames / r["condition"] / r["story_id"] / f"scene_{r['scene']:02d}.png"
        dest = samples / r["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        made += 1
    return made


def _scores(run: Path) -> dict[str, Any]:
    """(model, condition, evaluator) -> its score row (no name, no rank) of a scored run."""
    doc = json.loads((run / "scores" / "scores.json").read_text("utf-8"))
    return {
        (r["model"].removeprefix("stored:"), r["condition"], r["evaluator"]): {
            k: v for k, v in r.items() if k not in ("model", "rank", "rank_low", "rank_high")
        }  # ranks depend on the other models of the run
        for r in doc["scores"]
    }


def test_rows_are_the_requests_vsb_run_sends(small: Path, tmp_path: Path) -> None:
    rows = _export(small, tmp_path / "p.jsonl", ALL, "mine")
    stories = {s.id: s for s in load_suite(small)}  # as vsb run reads them
    n_cond = len(ALL.split(",")) - 1 + 6
    assert len(rows) == n_cond * sum(len(s.scenes) for s in stories.values())
    for r in rows:
        story = stories[r["story_id"]]
        ctx = get_condition(r["condition"]).context(story, r["scene"])
        text = story.scenes[r["scene"] - 1].text
        assert r["prompt"] == full_prompt(text, ctx) and r["scene_text"] == text
        assert r["path"] == f"mine/{r['condition']}/{r['story_id']}/scene_{r['scene']:02d}.png"
        assert (r["context"] is None) == (ctx.text is None and ctx.data is None)
        if r["context"] is not None:
            assert r["prompt"].startswith(r["context"]) and r["prompt"].endswith(text)
        if r["condition"] == "previous_image" and r["scene"] > 1:
            prev = next(
                x for x in rows if (x["story_id"], x["condition"], x["scene"])
                == (r["story_id"], "previous_image", r["scene"] - 1)
            )  # fmt: skip
            assert r["reference"] == (prev["same_as"] or prev["path"])
        else:
            assert r["reference"] is None
        if r["scene"] == 1:  # one request under every condition: made once
            assert (r["same_as"] is None) == (r["condition"] == "independent")
    # a row marked same_as points at an earlier row with the same prompt, made once
    first = {r["path"]: r for r in rows if r["same_as"] is None}
    for r in rows:
        if r["same_as"]:
            assert first[r["same_as"]]["prompt"] == r["prompt"]
            assert first[r["same_as"]]["story_id"] == r["story_id"]
    # structured_memory's context is sent as JSON, previous_text's as text
    sm = next(r for r in rows if r["condition"] == "structured_memory" and r["scene"] == 2)
    assert sm["context"].startswith("State so far (JSON): {")


def test_csv_holds_the_same_rows(small: Path, tmp_path: Path) -> None:
    rows = _export(small, tmp_path / "p.jsonl", "independent,previous_image", "mine")
    args = ["suite", "prompts", str(small), "--condition", "independent,previous_image"]
    assert main([*args, "--out", str(tmp_path / "p.csv"), "--format", "csv"]) == 0
    frame = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert list(frame.columns) == list(rows[0])
    assert frame["prompt"].tolist() == [r["prompt"] for r in rows]
    assert frame["same_as"].tolist() == [r["same_as"] or "" for r in rows]
    assert frame["scene"].tolist() == [r["scene"] for r in rows]


def test_max_tokens_adds_clip_tokens_and_cut(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--max-tokens N: every row's ``tokens`` is the count of the tokenizer a Stable Diffusion
    pipeline loads (start and end included) and ``cut`` says it is over N; without it the
    rows are as before (no such keys)."""
    from tests.story.clip_helpers import clip_tokenizer_hf

    plain = _export(small, tmp_path / "plain.jsonl", ALL, "mine")
    capsys.readouterr()
    rows = _export(small, tmp_path / "p.jsonl", ALL, "mine", "--max-tokens", "77")
    said = capsys.readouterr().out
    hf = clip_tokenizer_hf(tmp_path / "tok")
    assert "tokens" not in plain[0] and "cut" not in plain[0]
    assert [{k: v for k, v in r.items() if k not in ("tokens", "cut")} for r in rows] == plain
    for r in rows:
        assert r["tokens"] == len(hf(r["prompt"])["input_ids"])
        assert r["cut"] is (r["tokens"] > 77)
    cut = sum(r["cut"] for r in rows)
    assert 0 < cut < len(rows)
    assert f"{cut} of {len(rows)} prompts are over 77 CLIP tokens" in said
    # another budget, and CSV
    args = ["suite", "prompts", str(small), "--condition", "structured_memory", "--max-tokens"]
    assert main([*args, "500", "--out", str(tmp_path / "p.csv"), "--format", "csv"]) == 0
    frame = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert list(frame.columns)[-2:] == ["tokens", "cut"]
    assert not frame["cut"].any() and frame["tokens"].min() > 2
    assert main([*args, "1", "--out", str(tmp_path / "bad.csv")]) == 2
    assert not (tmp_path / "bad.csv").exists()


def test_bad_input_is_one_line_and_writes_nothing(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.jsonl"
    base = ["suite", "prompts", str(small), "--out", str(out)]
    assert main([*base, "--condition", "independnt"]) == 1
    assert main([*base, "--condition", "independent", "--source", "a/b"]) == 1
    assert main(["suite", "prompts", str(tmp_path / "none"), "--condition", "all",
                 "--out", str(out)]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "did you mean" in err or "independent" in err
    assert "SOURCE must be one folder name" in err and "Traceback" not in err
    assert not out.exists()


def test_oracle_frames_made_once_per_distinct_prompt_score_1_everywhere(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = str(tmp_path / "cache")
    common = ["--suite", str(small), "--condition", ALL, "--cache", cache]
    assert main(["run", *common, "--model", "procedural-oracle", "--out", str(tmp_path / "o")]) == 0
    rows = _export(small, tmp_path / "p.jsonl", ALL, "ext")
    frames = tmp_path / "o" / "images" / "procedural-oracle"
    made = _outside(rows, frames, tmp_path / "samples", distinct=True)
    assert made < len(rows)  # scene 1 is made once, not once per condition
    capsys.readouterr()
    served = tmp_path / "served"
    args = ["run", *common, "--model", "stored:ext", "--samples", str(tmp_path / "samples")]
    assert main([*args, "--out", str(served)]) == 0
    assert f"{len(rows)} images ({len(rows)} generated, 0 from cache, 0 failed)" in (
        capsys.readouterr().out
    )
    assert main(["evaluate", str(served), "--evaluator", "rules"]) == 0
    assert main(["score", str(served), "--resamples", "200"]) == 0
    scores = _scores(served)
    assert {c for _m, c, _e in scores} == set(ALL.split(",")[1:]) | {
        "independent", "previous_text", "structured_memory", "previous_image",
        "summarized_state", "full_context",
    }  # fmt: skip
    for row in scores.values():
        assert row["global_score"]["score"] == 1.0, row["condition"]
        assert row["coherence"]["score"] == 1.0 and row["n_not_applicable"] == 0
        assert row["coverage"] == 1.0


@pytest.fixture(scope="module")
def simulated(small: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Every simulator under three conditions, evaluated and scored (and its cache)."""
    root = tmp_path_factory.mktemp("sims")
    conds = "independent,structured_memory,previous_image"
    args = ["run", "--suite", str(small), "--condition", conds, "--model", ",".join(SIMULATORS)]
    assert main([*args, "--out", str(root / "run"), "--cache", str(root / "cache")]) == 0
    assert main(["evaluate", str(root / "run"), "--evaluator", "rules"]) == 0
    assert main(["score", str(root / "run"), "--resamples", "200"]) == 0
    return root, small


@pytest.mark.parametrize("model", list(SIMULATORS))
def test_every_simulator_scores_the_same_through_stored(
    model: str, simulated: tuple[Path, Path], tmp_path: Path
) -> None:
    root, suite = simulated
    conds = "independent,structured_memory,previous_image"
    rows = _export(suite, tmp_path / "p.jsonl", conds, model)
    _outside(rows, root / "run" / "images" / model, tmp_path / "samples", distinct=False)
    served = tmp_path / "served"
    args = ["run", "--suite", str(suite), "--condition", conds, "--model", f"stored:{model}"]
    args += ["--samples", str(tmp_path / "samples"), "--cache", str(tmp_path / "cache")]
    assert main([*args, "--out", str(served)]) == 0
    assert main(["evaluate", str(served), "--evaluator", "rules"]) == 0
    assert main(["score", str(served), "--resamples", "200"]) == 0
    own = {k: v for k, v in _scores(root / "run").items() if k[0] == model}
    assert own and _scores(served) == own


def test_stored_never_serves_another_conditions_frame_for_a_chain(
    small: Path, tmp_path: Path
) -> None:
    """previous_image's scene 2 carries its own previous frame: it is not the independent
    request, so a missing file is an error (scene 1 is served from independent's file)."""
    from vsb.adapters.base import Privileged
    from vsb.adapters.providers.stored import StoredSamples
    from vsb.errors import AdapterError
    from vsb.run.tasks import story_sha256

    story = load_suite(small)[0]
    for k in (1, 2):
        path = tmp_path / "s" / "ext" / "independent" / story.id / f"scene_{k:02d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    adapter = StoredSamples(tmp_path / "s", "ext")

    def served(cond: str, k: int) -> Path:
        return adapter.serves(Privileged(story, story_sha256(story), k, cond))

    assert served("previous_image", 1).parts[-3] == "independent"
    assert served("structured_memory", 1).parts[-3] == "independent"
    assert served("previous_image", 2).parts[-3] == "previous_image"  # its own, missing
    assert served("structured_memory", 2).parts[-3] == "structured_memory"
    with pytest.raises(AdapterError, match="no stored sample"):
        adapter._read(served("previous_image", 2))
