"""``vsb run --model stored --samples DIR``: a run's own images served back as a model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vsb.cli.main import main


def test_stored_samples_from_the_command_line(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = str(tmp_path / "cache")
    first = tmp_path / "oracle_run"
    common = ["--suite", str(suite_dir), "--condition", "independent", "--cache", cache]
    assert main(["run", *common, "--model", "procedural-oracle", "--out", str(first)]) == 0
    served = tmp_path / "served"
    args = ["run", *common, "--model", "stored", "--out", str(served)]
    args += ["--samples", str(first / "images"), "--samples-source", "procedural-oracle"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "210 images (210 generated, 0 from cache, 0 failed)" in out
    a = first / "images/procedural-oracle/independent/counting-hard/scene_08.png"
    # named after the source model (stored:SOURCE), never just "stored"
    b = served / "images/stored:procedural-oracle/independent/counting-hard/scene_08.png"
    assert np.array_equal(
        np.asarray(Image.open(a).convert("RGB")), np.asarray(Image.open(b).convert("RGB"))
    )


def test_stored_without_samples_is_skipped_with_a_reason(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--suite", str(suite_dir), "--condition", "independent", "--model", "stored"]
    args += ["--out", str(tmp_path / "r"), "--cache", str(tmp_path / "c")]
    assert main(args) == 3  # a requested model was skipped: the run is not whole
    err = capsys.readouterr().err
    assert "skipped stored" in err and "Traceback" not in err


def test_missing_samples_say_why_on_the_command_line(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #36: "0 images (… 8 failed)" and no error line; the reason was only in records."""
    (tmp_path / "samples" / "mine").mkdir(parents=True)
    args = ["run", "--suite", str(suite_dir), "--condition", "independent", "--model"]
    args += ["stored:mine", "--samples", str(tmp_path / "samples"), "--out", str(tmp_path / "r")]
    assert main([*args, "--cache", str(tmp_path / "c")]) == 3
    err = capsys.readouterr().err
    assert "stored:mine: 210 failed; first: stored:mine: no stored sample at " in err
    assert "mine/independent/" in err and "Traceback" not in err


def test_the_summary_names_where_samples_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45, item 8: the summary counted failures but named no model or condition; it says
    how many failed under which model and condition."""
    from vsb.generator.generate import generate_suite, write_suite

    suite = tmp_path / "suite"
    write_suite(generate_suite(0)[:2], suite, seed=0)
    common = ["--suite", str(suite), "--cache", str(tmp_path / "c")]
    made = tmp_path / "made"
    assert main(["run", *common, "--model", "procedural-oracle", "--condition", "independent",
                 "--out", str(made)]) == 0  # fmt: skip
    samples = tmp_path / "samples" / "mine"
    shutil.copytree(made / "images" / "procedural-oracle", samples)
    capsys.readouterr()
    code = main(["run", *common, "--model", "stored:mine", "--samples", str(samples.parent),
                 "--condition", "independent,previous_text,summarized_state",
                 "--out", str(tmp_path / "r")])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    records = [json.loads(x) for x in (tmp_path / "r" / "records.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["error"] is not None]
    per = {
        c: sum(r["condition"] == c for r in failed) for c in ("previous_text", "summarized_state")
    }
    assert per["previous_text"] > 0 and len(failed) == sum(per.values())
    assert (
        f"{len(failed)} failed: stored:mine under previous_text ({per['previous_text']}), "
        f"summarized_state ({per['summarized_state']})\n" in out
    )
