"""FID and CLIP-I in VinaBench's table (issue 47): CLIP-I the mean of the vinabench_ref
evaluator's per-pair cosines with a story-bootstrap interval; FID its set row, with none; the
general signals view leaves the set row out; a note when both are empty."""

from __future__ import annotations

import pytest

from vsb.scores.inputs import SignalRows
from vsb.scores.peer.vinabench import reference_note, vinabench_rows
from vsb.scores.signals import signal_scores
from vsb.scores.stats.bootstrap import Resampling


def _rows(data: list[tuple[str, int, str, float, str]]) -> SignalRows:
    rows = SignalRows()
    for story, scene, signal, value, evaluator in data:
        for col, v in zip(("model", "condition", "story_id", "scene", "signal", "value",
                           "evaluator"),
                          ("m", "independent", story, scene, signal, value, evaluator),
                          strict=True):  # fmt: skip
            getattr(rows, col).append(v)
    return rows


def test_clip_i_is_a_mean_over_pairs_and_fid_a_set_row() -> None:
    sig = _rows([
        ("a", 1, "vinabench.vwp.time_align", 1.0, "vinabench"),
        ("a", 1, "vinabench.vwp.clip_i", 0.5, "vinabench_ref"),
        ("a", 2, "vinabench.vwp.clip_i", 0.7, "vinabench_ref"),
        ("b", 1, "vinabench.vwp.clip_i", 0.9, "vinabench_ref"),
        ("", 0, "vinabench.vwp.fid", 12.5, "vinabench_ref"),
        ("b", 1, "clip_text", 0.25, "clip"),  # in the portion through b's clip_i rows
    ])  # fmt: skip
    (row,) = vinabench_rows(sig, Resampling(n_resamples=200))
    assert row["clip_i"] == pytest.approx((0.5 + 0.7 + 0.9) / 3)  # pairs weigh equally
    assert row["clip_i_ci_low"] <= row["clip_i"] <= row["clip_i_ci_high"]
    assert row["fid"] == 12.5 and row["fid_ci_low"] is None and row["fid_ci_high"] is None
    assert row["clip_t"] == 0.25 and row["stories"] == 2
    assert reference_note([row]) is None
    names = {s.signal for s in signal_scores(sig, Resampling(n_resamples=20))}
    assert "vinabench.vwp.fid" not in names and "vinabench.vwp.clip_i" in names


def test_reference_rows_alone_make_a_table_and_empty_columns_a_note() -> None:
    alone = _rows([("a", 1, "vinabench.sb20k.clip_i", 0.5, "vinabench_ref")])
    (row,) = vinabench_rows(alone)
    assert row["portion"] == "sb20k" and row["clip_i"] == 0.5 and row["fid"] is None
    (vqa,) = vinabench_rows(_rows([("a", 1, "vinabench.vwp.time_align", 1.0, "vinabench")]))
    assert vqa["fid"] is None and vqa["clip_i"] is None
    note = reference_note([vqa])
    assert note is not None and "--evaluator vinabench_ref" in note and "\n" not in note
