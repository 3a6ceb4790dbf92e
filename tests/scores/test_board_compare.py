"""`vsb compare MODEL@CONDITION` (provider names hold colons) and "did you mean" on every
name the scores commands take (issue 14, item 7)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from score_synth import simulated_rows

from vsb.cli.main import main
from vsb.errors import UnknownNameError
from vsb.scores.compare import split_side

MODELS = ["openai:gpt-image-1", "replicate:black-forest-labs/flux-kontext-pro"]
CONDS = ["independent", "structured_memory"]


def _err(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 1
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cap.err
    return lines[0]


def test_split_side_at_form() -> None:
    assert split_side("openai:gpt-image-1@structured_memory", MODELS, CONDS) == (
        "openai:gpt-image-1",
        "structured_memory",
    )
    assert split_side(f"{MODELS[1]}@Independent", MODELS, CONDS) == (MODELS[1], "independent")
    assert split_side("openai:gpt-image-1", MODELS, CONDS) == ("openai:gpt-image-1", "")
    with pytest.raises(UnknownNameError, match=r"did you mean 'structured_memory'\?"):
        split_side("openai:gpt-image-1@structured_memry", MODELS, CONDS)
    with pytest.raises(UnknownNameError, match=r"did you mean 'openai:gpt-image-1'\?"):
        split_side("openai:gpt-image1@independent", MODELS, CONDS)
    with pytest.raises(UnknownNameError, match="unknown condition 'previous_text'"):
        split_side("openai:gpt-image-1@previous_text", MODELS, CONDS)
    # a model whose own name holds '@' still works whole
    assert split_side("stored:me@home", ["stored:me@home"], CONDS) == ("stored:me@home", "")


def test_compare_accepts_provider_names_with_at(
    make_run: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    p = {(m, c): 0.1 * (i + 1) for i, m in enumerate(MODELS) for c in CONDS}
    run = make_run(simulated_rows(np.random.default_rng(3), p, n_stories=4), name="at")
    argv = ["compare", str(run), "--resamples", "50"]
    a, b = f"{MODELS[0]}@structured_memory", f"{MODELS[1]}@structured_memory"
    assert main([*argv, "--a", a, "--b", b]) == 0
    out = capsys.readouterr().out
    assert f"{MODELS[0]}@structured_memory − {MODELS[1]}@structured_memory" in out
    assert main([*argv, "--a", f"{MODELS[0]}@structured_memory", "--b", MODELS[0]]) == 1
    assert "the same" in capsys.readouterr().err
    assert main([*argv, "--a", a, "--b", f"{MODELS[0]}@independent"]) == 0
    assert f"{MODELS[0]}@structured_memory − {MODELS[0]}@independent" in capsys.readouterr().out
    line = _err([*argv, "--a", f"{MODELS[0]}@indepndent", "--b", b], capsys)
    assert "did you mean 'independent'?" in line and "known: independent, structured_memory" in line


def test_evaluator_did_you_mean(
    make_run: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(simulated_rows(np.random.default_rng(1), {("m", "independent"): 0.1}, 3))
    line = _err(["score", str(run), "--evaluator", "rulez"], capsys)
    assert "did you mean 'rules'?" in line and "evaluators present: rules" in line
    line = _err(["compare", str(run), "--a", "m", "--b", "m", "--evaluator", "rule"], capsys)
    assert "did you mean 'rules'?" in line
