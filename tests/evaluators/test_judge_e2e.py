"""The VLM judge end to end, against a real HTTP server on 127.0.0.1 speaking the OpenAI
chat-completions protocol and answering from the sealed oracle (vsb.validation.sim_judge)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from judge_http import JudgeHttpServer

from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.story.models import Story
from vsb.tables import iter_rows
from vsb.validation.sim_judge import SimJudgeServer

MODELS = "procedural-drift-mid,procedural-amnesiac"


@pytest.fixture(scope="module")
def sim_small(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    """Two simulators × independent on ten stories, evaluated by the rule checker."""
    root = tmp_path_factory.mktemp("judge")
    stories = [s for s in default_suite if s.difficulty != "hard"][::3][:10]
    write_suite(stories, root / "suite")
    argv = ["run", "--suite", str(root / "suite"), "--model", MODELS, "--condition",
            "independent", "--out", str(root / "run"), "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    assert main(["evaluate", str(root / "run")]) == 0
    return root / "run"


def _rows(run: Path) -> list[dict[str, object]]:
    return [r for _, r in iter_rows(run / "evaluations" / "requirements.parquet")]


def _images(run: Path) -> int:
    return sum(1 for x in (run / "records.jsonl").read_text().splitlines() if x.strip())


def _distinct(run: Path) -> int:
    """Distinct (image, scene) pairs: an image repeated in two cells is judged once."""
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    return len({(r["sha256"], r["story_id"], r["scene"]) for r in recs})


def test_one_request_per_scene_and_a_rerun_sends_none(
    sim_small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    with SimJudgeServer(sim_small, error_rate=0.0) as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm",
                "--judge", "openai-compatible:sim", "--base-url", server.url,
                "--cache", str(cache), "--judge-concurrency", "8"]  # fmt: skip
        assert main([*argv, "--dry-run"]) == 0
        n, d = _images(sim_small), _distinct(sim_small)
        # the repeats of an image within the pass are duplicates (sent once), not "cached"
        out = capsys.readouterr().out
        assert f"{n} calls, 0 cached, {n - d} duplicates (sent once), {d} to make" in out
        assert main(argv) == 0
        assert server.requests == d  # exactly one request per scene (each image judged once)
        out = capsys.readouterr().out
        # a fresh cache: the repeats are duplicates, not "cached" (issue #34)
        assert n > d and f"{d} calls, 0 cached, {n - d} duplicates (judged once)" in out
        assert main(argv) == 0
        assert server.requests == d  # the rerun sent nothing
        assert f"0 calls, {d} cached, {n - d} duplicates" in capsys.readouterr().out
    rows = _rows(sim_small)
    by_ev: dict[object, int] = {}
    for r in rows:
        by_ev[r["evaluator"]] = by_ev.get(r["evaluator"], 0) + 1
    assert by_ev["rules"] == by_ev["vlm"]  # the rule checker's rows were kept beside the judge's
    vlm = [r for r in rows if r["evaluator"] == "vlm"]
    assert {r["judge_model"] for r in vlm} == {"openai-compatible:sim"}
    # a perfect simulated judge agrees with the (validated) rule checker on every check
    rules = {(r["model"], r["story_id"], r["scene"], r["req_id"]): r["passed"] for r in rows
             if r["evaluator"] == "rules"}  # fmt: skip
    agree = sum(rules[(r["model"], r["story_id"], r["scene"], r["req_id"])] == r["passed"]
                for r in vlm)  # fmt: skip
    assert agree / len(vlm) > 0.98
    # every call is a ledger row (no key needed for a loopback judge, cost unknown: no price)
    db = sqlite3.connect(sim_small / "ledger.sqlite")
    (calls, hits) = db.execute(
        "SELECT SUM(1 - cache_hit), SUM(cache_hit) FROM requests WHERE model = ?",
        ("judge:openai-compatible:sim",),
    ).fetchone()
    assert (calls, hits) == (d, n + n - d)
    transcript = (sim_small / "evaluations" / "judge_calls.jsonl").read_text().splitlines()
    assert len(transcript) == n


def test_a_garbage_judge_on_a_fresh_cache_reports_duplicates_not_cached(
    sim_small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n, d = _images(sim_small), _distinct(sim_small)
    with JudgeHttpServer(lambda qs: "I cannot tell.") as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm", "--judge",
                "openai-compatible:garbage", "--base-url", server.url, "--cache",
                str(tmp_path / "c")]  # fmt: skip
        assert main(argv) == 4  # nothing parses
    cap = capsys.readouterr()
    assert f"{d} calls, 0 cached, {n - d} duplicates (judged once)" in cap.out
    assert "were not cached" in cap.err


def test_the_server_sees_numbered_identity_questions(sim_small: Path, tmp_path: Path) -> None:
    with SimJudgeServer(sim_small) as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm", "--model",
                "procedural-amnesiac", "--judge", "openai-compatible:sim", "--base-url",
                server.url, "--cache", str(tmp_path / "c")]  # fmt: skip
        assert main(argv) == 0
        body = server.bodies[0]
    text = body["messages"][1]["content"][1]["text"]
    lines = text.splitlines()
    assert lines[0].startswith("1. ") and all(ln.split(". ", 1)[0].isdigit() for ln in lines)
    assert "the person with" in text or "Is there" in text


def test_retries_after_429(sim_small: Path, tmp_path: Path) -> None:
    with SimJudgeServer(sim_small, fail_first=3) as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm", "--model",
                "procedural-drift-mid", "--judge", "openai-compatible:sim", "--base-url",
                server.url, "--cache", str(tmp_path / "c"),
                "--judge-concurrency", "1"]  # fmt: skip
        assert main(argv) == 0
        assert server.attempts == server.requests + 3


def test_batch_one_question_per_call(sim_small: Path, tmp_path: Path) -> None:
    from vsb.story.io import load_suite

    stories = {s.id: s for s in load_suite(sim_small / "suite")}
    sid = sorted(stories)[0]
    n_q = sum(len(sc.requirements) for sc in stories[sid].scenes)
    with SimJudgeServer(sim_small) as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm", "--model",
                "procedural-drift-mid", "--judge", "openai-compatible:sim", "--base-url",
                server.url, "--cache", str(tmp_path / "c"), "--judge-batch", "1"]  # fmt: skip
        assert main(argv) == 0
        one = [r for r in _rows(sim_small)
               if r["evaluator"] == "vlm" and r["story_id"] == sid
               and r["model"] == "procedural-drift-mid"]  # fmt: skip
    assert len(one) == n_q and server.requests >= n_q
    assert not any(r["verdict"] == "parse_failure" for r in one)


def test_vlm_needs_a_judge_and_budget_stops_unknown_prices(
    sim_small: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["evaluate", str(sim_small), "--evaluator", "vlm"]) == 1
    assert "needs a judge" in capsys.readouterr().err
    with SimJudgeServer(sim_small) as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm", "--judge",
                "openai-compatible:sim", "--base-url", server.url, "--budget", "1",
                "--cache", str(tmp_path / "c")]  # fmt: skip
        assert main(argv) == 3  # a budget stop: the same exit status as vsb run's
        err = capsys.readouterr().err
        assert "unknown price" in err and err.count("\n") == 1
        assert server.requests == 0


def test_validate_judge_recovers_the_injected_error_rate(
    sim_small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vsb.validation.judge import validate_run

    with SimJudgeServer(sim_small, error_rate=0.1, seed=3) as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm", "--judge",
                "openai-compatible:sim", "--base-url", server.url, "--cache",
                str(tmp_path / "c")]  # fmt: skip
        assert main(argv) == 0
    report = validate_run(sim_small)
    rules, vlm = report.section("rules").agreement, report.section("vlm").agreement
    assert rules.n_answers > 500 and rules.n_wrong == 0  # the truth agrees with the checker
    assert vlm.n_answers == rules.n_answers
    assert vlm.error_rate_ci_low is not None and vlm.error_rate_ci_high is not None
    assert vlm.error_rate_ci_low <= 0.1 <= vlm.error_rate_ci_high
    assert main(["validate-judge", str(sim_small)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "vlm (openai-compatible:sim): error rate against the oracle 0.1" in out


def test_cross_frame_questions_one_call_per_pair_validated(sim_small: Path, tmp_path: Path) -> None:
    from vsb.validation.judge import validate_run

    recs = [json.loads(x) for x in (sim_small / "records.jsonl").read_text().splitlines()]
    shas = {(r["model"], r["story_id"], r["scene"]): r["sha256"] for r in recs}
    pairs = {(shas[(m, s, k - 1)], sha) for (m, s, k), sha in shas.items() if k > 1}
    with SimJudgeServer(sim_small, error_rate=0.1, seed=5) as server:
        argv = ["evaluate", str(sim_small), "--evaluator", "vlm_xframe", "--judge",
                "openai-compatible:sim", "--base-url", server.url, "--cache",
                str(tmp_path / "c")]  # fmt: skip
        assert main(argv) == 0
        assert server.requests == len(pairs)  # one call per distinct pair of frames
        body = server.bodies[0]
    content = body["messages"][1]["content"]
    assert [p["type"] for p in content] == ["image_url", "image_url", "text"]
    rows = [r for r in _rows(sim_small) if r["evaluator"] == "vlm_xframe"]
    assert {r["attribute"] for r in rows} == {"same_person", "same_clothes", "same_place"}
    assert {r["dimension"] for r in rows} == {"identity", "clothing", "environment"}
    report = validate_run(sim_small)
    g = report.section("vlm_xframe").agreement
    assert g.n_answers == len(rows)
    assert g.error_rate_ci_low is not None and g.error_rate_ci_high is not None
    assert g.error_rate_ci_low <= 0.1 <= g.error_rate_ci_high
