"""VinaBench's table from signal rows: the mean over units per portion, CLIP columns from the
clip evaluator's signals of the portion's stories, story-bootstrap intervals (issue 47)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsb.scores.inputs import SignalRows
from vsb.scores.peer.vinabench import HEADER, vinabench_rows, write_vinabench
from vsb.scores.stats.bootstrap import Resampling


def _rows(data: list[tuple[str, int, str, float, str]]) -> SignalRows:
    rows = SignalRows()
    for story, scene, signal, value, evaluator in data:
        rows.model.append("m")
        rows.condition.append("independent")
        rows.story_id.append(story)
        rows.scene.append(scene)
        rows.signal.append(signal)
        rows.value.append(value)
        rows.evaluator.append(evaluator)
    return rows


def test_units_weigh_equally_and_clip_follows_the_portion(tmp_path: Path) -> None:
    sig = _rows([
        ("a", 1, "vinabench.vwp.time_align", 1.0, "vinabench"),
        ("a", 2, "vinabench.vwp.time_align", 1.0, "vinabench"),
        ("a", 3, "vinabench.vwp.time_align", 0.0, "vinabench"),
        ("b", 1, "vinabench.vwp.time_align", 0.0, "vinabench"),
        ("a", 0, "vinabench.vwp.style_consist", 1.0, "vinabench"),
        ("b", 0, "vinabench.vwp.style_consist", 0.0, "vinabench"),
        ("c", 1, "vinabench.sb20k.time_align", 1.0, "vinabench"),
        ("a", 1, "clip_text", 0.25, "clip"),
        ("c", 1, "clip_text", 0.5, "clip"),
        ("z", 1, "clip_text", 0.9, "clip"),  # no vinabench rows: in no portion
    ])  # fmt: skip
    rows = {r["portion"]: r for r in vinabench_rows(sig, Resampling(n_resamples=200))}
    assert set(rows) == {"vwp", "sb20k"}
    vwp = rows["vwp"]
    assert vwp["time_align"] == pytest.approx(2 / 4)  # over scenes, not stories
    assert vwp["style_consist"] == pytest.approx(1 / 2)
    assert vwp["clip_t"] == pytest.approx(0.25) and rows["sb20k"]["clip_t"] == 0.5
    assert vwp["fid"] is None and vwp["clip_t_mrr"] is None
    assert 0.0 <= vwp["time_align_ci_low"] <= 0.5 <= vwp["time_align_ci_high"] <= 1.0
    assert vwp["stories"] == 2
    (path,) = write_vinabench(tmp_path, sig, Resampling(n_resamples=50))
    assert path.read_text().splitlines()[0] == ",".join(HEADER)
    assert write_vinabench(tmp_path, _rows([])) == [] and not path.exists()
