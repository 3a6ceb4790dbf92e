"""Issue #36: with nothing applicable, ``vsb evaluate`` said "0.0% of applicable passed"
(0 of 0 shown as 0.0 %); it says n/a."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from vsb.adapters.function import FunctionModel
from vsb.cli.main import main
from vsb.generator.generate import generate_suite, write_suite
from vsb.run.runner import RunConfig, run


def test_nothing_applicable_is_not_zero_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(generate_suite(0)[:1], tmp_path / "suite", seed=0)
    model = FunctionModel(lambda req: Image.new("RGB", (64, 64), "white"), "blank")
    config = RunConfig(
        tmp_path / "suite", ["blank"], ["independent"], tmp_path / "run",
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    assert run(config, adapters={"blank": model}).images > 0
    assert main(["evaluate", str(tmp_path / "run"), "--evaluator", "rules"]) == 0
    out = capsys.readouterr().out
    assert "0.0%" not in out
    assert "(n/a: nothing applicable, " in out and " not applicable)" in out
