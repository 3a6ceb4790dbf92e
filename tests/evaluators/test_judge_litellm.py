"""Interop: the judge against a third-party server, the LiteLLM proxy with mocked replies, on
its OpenAI (``/v1/chat/completions``) and Anthropic (``/v1/messages``) endpoints.

LiteLLM is not a vsb dependency (``litellm[proxy]`` is ~170 MB in 117 wheels, and pins
versions vsb does not use): ``scripts/setup_litellm.sh`` installs it into its own virtual
environment, ``.venv-litellm``. The tests use ``$VSB_LITELLM``, else
``.venv-litellm/bin/litellm``, else a ``litellm`` on PATH; without one they are skipped, unless
``VSB_REQUIRE_LITELLM=1`` (CI, ``.ci/run``) makes that a failure. docs/judge-interop.md says
how to run this file by hand.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.story.models import Story
from vsb.tables import iter_rows

ROOT = Path(__file__).resolve().parents[2]


def _litellm() -> str | None:
    """The proxy's executable: ``$VSB_LITELLM`` (None if it names no file), the repository's
    ``.venv-litellm``, or PATH."""
    if named := os.environ.get("VSB_LITELLM"):
        return named if Path(named).is_file() else None
    local = ROOT / ".venv-litellm" / "bin" / "litellm"
    return str(local) if local.is_file() else shutil.which("litellm")


LITELLM = _litellm()
REQUIRED = os.environ.get("VSB_REQUIRE_LITELLM") == "1"
pytestmark = pytest.mark.skipif(
    LITELLM is None and not REQUIRED,
    reason="no litellm: run scripts/setup_litellm.sh (see docs/judge-interop.md)",
)
KEY = "sk-vsb-interop-0123456789abcdef"
BATCH_40 = "\n".join(f"{i}: YES" for i in range(1, 41))
#: Mixed answers to a batch of 8, in the asked layout and on one line (issue #34).
WORDS_8 = ("YES", "NO", "YES", "YES", "UNSURE", "YES", "NO", "YES")
LINES_8 = "\n".join(f"{i}: {w}" for i, w in enumerate(WORDS_8, start=1))
ONE_LINE_8 = ", ".join(f"{i}: {w.lower()}" for i, w in enumerate(WORDS_8, start=1))
CONFIG = f"""model_list:
  - model_name: mock-judge
    litellm_params: {{model: openai/gpt-4o, api_key: sk-fake, mock_response: "YES"}}
  - model_name: claude-mock
    litellm_params:
      {{model: anthropic/claude-3-5-haiku-20241022, api_key: sk-fake, mock_response: "YES"}}
  - model_name: batch-reply
    litellm_params:
      {{model: openai/gpt-4o, api_key: sk-fake, mock_response: {json.dumps(BATCH_40)}}}
  - model_name: lines-8
    litellm_params:
      {{model: openai/gpt-4o, api_key: sk-fake, mock_response: {json.dumps(LINES_8)}}}
  - model_name: one-line-8
    litellm_params:
      {{model: openai/gpt-4o, api_key: sk-fake, mock_response: {json.dumps(ONE_LINE_8)}}}
  - model_name: claude-one-line-8
    litellm_params:
      {{model: anthropic/claude-3-5-haiku-20241022, api_key: sk-fake,
        mock_response: {json.dumps(ONE_LINE_8)}}}
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The proxy's base URL (``http://127.0.0.1:PORT/v1``), up and answering."""
    if LITELLM is None:
        pytest.fail("VSB_REQUIRE_LITELLM=1 but no litellm: run scripts/setup_litellm.sh")
    root = tmp_path_factory.mktemp("litellm")
    (root / "config.yaml").write_text(CONFIG)
    port = _port()
    env = {**os.environ, "LITELLM_MASTER_KEY": KEY}
    log = (root / "proxy.log").open("wb")
    proc = subprocess.Popen(
        [LITELLM, "--config", str(root / "config.yaml"), "--host", "127.0.0.1",
         "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health/liveliness", timeout=2).is_success:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the LiteLLM proxy did not start: {(root / 'proxy.log').read_text()}")
            time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    root = tmp_path_factory.mktemp("interop")
    write_suite([s for s in default_suite if s.difficulty != "hard"][:2], root / "suite")
    argv = ["run", "--suite", str(root / "suite"), "--model", "procedural-drift-mid",
            "--condition", "independent", "--out", str(root / "run"),
            "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    return root / "run"


def _verdicts(run: Path) -> set[str]:
    return {r["verdict"] for _, r in iter_rows(run / "evaluations" / "requirements.parquet")}


@pytest.mark.parametrize(
    ("judge", "env"),
    [
        ("openai-compatible:mock-judge", "OPENAI_API_KEY"),
        ("anthropic:claude-mock", "ANTHROPIC_API_KEY"),
    ],
)  # fmt: skip
def test_both_endpoints_with_a_v1_base_url(
    proxy: str, run: Path, tmp_path: Path, judge: str, env: str,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv(env, KEY)
    argv = ["evaluate", str(run), "--evaluator", "vlm", "--judge", judge, "--base-url", proxy,
            "--cache", str(tmp_path / "c"), "--judge-batch", "1"]  # fmt: skip
    assert main(argv) == 0
    assert _verdicts(run) == {"passed"}
    capsys.readouterr()
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["ledger", str(run)]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if f"judge:{judge}" in ln)
    assert re.search(r" ms\s+[1-9][\d,]*\s+[1-9][\d,]*\s", row), row  # tokens in and out


def test_a_batch_reply_to_one_question_is_not_an_answer(
    proxy: str, run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    argv = ["evaluate", str(run), "--evaluator", "vlm", "--judge", "openai-compatible:batch-reply",
            "--base-url", proxy, "--cache", str(tmp_path / "c"), "--judge-batch", "1"]  # fmt: skip
    assert main(argv) == 4
    assert _verdicts(run) == {"parse_failure"}


def _judged(run: Path, judge: str, proxy: str, cache: Path) -> dict[tuple[str, int, str], str]:
    argv = ["evaluate", str(run), "--evaluator", "vlm", "--judge", judge, "--base-url", proxy,
            "--cache", str(cache), "--judge-batch", "8"]  # fmt: skip
    assert main(argv) == 0
    rows = iter_rows(run / "evaluations" / "requirements.parquet")
    return {(r["story_id"], r["scene"], r["req_id"]): r["verdict"] for _, r in rows
            if r["evaluator"] == "vlm"}  # fmt: skip


@pytest.mark.parametrize(
    "judge", ["openai-compatible:one-line-8", "anthropic:claude-one-line-8"]
)  # fmt: skip
def test_one_line_batch_answers_through_both_endpoints(
    proxy: str, run: Path, tmp_path: Path, judge: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch answered on one line (``1: yes, 2: no, …``) gets the verdicts of the asked
    ``N: WORD`` lines, through the proxy's OpenAI and Anthropic endpoints."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    asked = _judged(run, "openai-compatible:lines-8", proxy, tmp_path / "a")
    assert {"passed", "failed", "unsure"} <= set(asked.values())
    assert "parse_failure" not in asked.values()
    assert _judged(run, judge, proxy, tmp_path / "b") == asked
