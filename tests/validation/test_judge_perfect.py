"""A rule checker that fails exactly the injected faults scores perfectly everywhere, in the
strict and the root-cause view alike."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vsb.validation.judge import validate_run
from vsb.validation.models import RULES_COHERENCE, RULES_SIGNAL

CHECKS = [("Ana", "top", "clothing_change"), ("Ana", "pose", "pose_mismatch"),
          ("lamp", "state", "wrong_state"), ("scene", "time", "time_regression")]  # fmt: skip


def test_perfect_checker(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows, faults = [], []
    for story in range(8):
        for scene in range(1, 5):
            for subject, attribute, tax in CHECKS:
                fault = scene > 1 and rng.random() < 0.1 * (story % 4 + 1)
                common = {"model": "m", "condition": "c", "story_id": f"s{story}", "scene": scene,
                          "subject": subject, "attribute": attribute, "taxonomy": tax}  # fmt: skip
                rows.append({**common, "dimension": "clothing", "passed": not fault,
                             "source": "prompt" if scene == 1 else "memory",
                             "failure": tax if fault else ""})  # fmt: skip
                if fault:
                    faults.append({**common, "visual": True})
    (tmp_path / "evaluations").mkdir()
    (tmp_path / "oracle").mkdir()
    (tmp_path / "evaluations" / "requirements.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    (tmp_path / "oracle" / "faults.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faults))
    rep = validate_run(tmp_path)
    for t in rep.taxonomy:
        assert t.recall in (None, 1.0) and t.precision in (None, 1.0)
        assert t.recall_root_cause == t.recall and t.precision_root_cause == t.precision
        assert t.n_label_agree == t.n_true_detections == t.n_true_detections_root_cause
    assert rep.taxonomy[-1].n_faults == len(faults) > 10
    assert next(a for a in rep.auroc if a.signal == RULES_SIGNAL).auroc == 1.0
    coh = next(c for c in rep.correlations if c.signal == RULES_COHERENCE)
    assert coh.n_units == 8
    assert coh.spearman == pytest.approx(1.0) and coh.kendall == pytest.approx(1.0)
