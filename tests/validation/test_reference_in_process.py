"""The reference judges answered in process (``JsonTransport``) and over HTTP on 127.0.0.1
(``JudgeServer``) give the same bytes, so the same verdicts: the release build asks them in
process (no socket, no thread), ``served=True`` over the wire."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from vsb.cli.main import main
from vsb.generator.generate import write_suite
from vsb.story.models import Story
from vsb.validation.reference import DEFAULT_CONDITION, DEFAULT_MODEL, validate_reference_judges
from vsb.validation.reference_judges import REFERENCE_JUDGES
from vsb.validation.sim_judge import JudgeEndpoint, JudgeServer


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    """Three stories of the mid-drift simulator under the primary condition, evaluated."""
    root = tmp_path_factory.mktemp("refproc")
    picked = [s for s in default_suite if s.difficulty == "hard"][:2]
    picked += [s for s in default_suite if s.difficulty == "easy"][:1]
    write_suite(picked, root / "suite")
    run = root / "run"
    argv = ["run", "--suite", str(root / "suite"), "--model", DEFAULT_MODEL, "--condition",
            DEFAULT_CONDITION, "--out", str(run), "--cache", str(root / "cache"),
            "--workers", "1"]  # fmt: skip
    assert main(argv) == 0
    assert main(["evaluate", str(run), "--workers", "1"]) == 0
    return run


def test_in_process_and_served_judges_give_identical_verdicts(
    small_run: Path, tmp_path: Path
) -> None:
    served = validate_reference_judges(small_run, tmp_path / "served", served=True)
    local = validate_reference_judges(small_run, tmp_path / "local")
    assert local.model_dump() == served.model_dump()
    assert [j.judge for j in local.judges] == list(REFERENCE_JUDGES)
    assert local.n_frames > 0
    literal = local.judges[0].section
    assert literal.verdicts.n_checks > 0 and literal.verdicts.n_passed > 0
    # the useless judges stay useless whichever way they are asked
    by_name = {j.judge: j.section.verdicts for j in local.judges}
    assert by_name["always-unsure"].n_unsure == by_name["always-unsure"].n_checks > 0
    assert by_name["garbage"].parse_failure_rate == 1.0
    assert not list((tmp_path / "local").iterdir())  # the scratch slice is removed


@pytest.mark.parametrize("fail_first", [0, 1])
def test_the_transport_answers_the_bytes_the_server_sends(fail_first: int) -> None:
    """Same request to both: same status, same JSON body bytes, same content headers."""
    body = {
        "model": "always-yes",
        "messages": [
            {"role": "system", "content": "answer"},
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,cG5n"}},
                {"type": "text", "text": "1. Is it raining?\n2. Is it night?"},
            ]},
        ],
    }  # fmt: skip

    def ask(endpoint: JudgeEndpoint, client: httpx.Client) -> list[httpx.Response]:
        url = f"{endpoint.url}/chat/completions"
        return [client.post(url, json=body) for _ in range(2)]

    judge = REFERENCE_JUDGES["always-yes"]
    with JudgeServer(judge(Path(".")), fail_first=fail_first) as server, httpx.Client() as client:
        wire = ask(server, client)
    with JudgeEndpoint(judge(Path(".")), fail_first=fail_first) as endpoint, endpoint.client() as c:
        local = ask(endpoint, c)
    # the main job's long passes skip httpx's request machinery: the same bytes come back
    direct_end = JudgeEndpoint(judge(Path(".")), fail_first=fail_first)
    with direct_end, direct_end.direct_client() as c:
        direct = ask(direct_end, c)
    for a, b, d in zip(wire, local, direct, strict=True):
        assert (a.status_code, a.content) == (b.status_code, b.content)
        assert (a.status_code, a.content) == (d.status_code, d.content)
        for h in ("content-type", "content-length", "retry-after"):
            assert a.headers.get(h) == b.headers.get(h) == d.headers.get(h)
    assert local[-1].status_code == 200
    assert json.loads(local[-1].content)["choices"][0]["message"]["content"] == "1: YES\n2: YES"
    assert endpoint.requests == server.requests == direct_end.requests == 2 - fail_first


def test_judged_in_a_process_of_their_own_then_validated_gives_the_same_report(
    small_run: Path, tmp_path: Path
) -> None:
    """The main job judges in one process (no statistics library loaded) and validates in
    another, from the plain form of what was judged: the same report as in one go."""
    import subprocess
    import sys
    import textwrap

    from vsb.release import stages as st

    code = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        from vsb.release.stages import judge_references

        class Quiet:
            def note(self, *a): pass

        out = judge_references(Path({str(small_run)!r}), Quiet(), Path({str(tmp_path)!r}),
                               plain=True)
        heavy = sorted(m for m in ("scipy.stats", "pandas") if m in sys.modules)
        print(json.dumps({{"judged": out, "heavy": heavy}}))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    assert answer["heavy"] == []  # what lets it run beside score within the memory bound
    report = tmp_path / "report"
    (report / "validation").mkdir(parents=True)
    for name in ("records.jsonl",):  # write_references writes into the release it is given
        (report / name).write_text((small_run / name).read_text())
    written = st.write_references(report, answer["judged"])
    split = json.loads((report / written[0]).read_text())
    whole = validate_reference_judges(small_run, tmp_path / "whole")
    assert split == whole.model_dump(mode="json")


def test_the_judges_answer_one_after_another_in_this_process(
    small_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No process is started (a second would hold its own copy of every import and table:
    the main job's memory bound counts each process's pages); the six judges' plans build
    each scene's questions once; each judge's copy links the slice's folders, and judges
    as a full copy of the slice does."""
    import os
    import shutil
    from collections import Counter
    from typing import Any

    from vsb.evaluators.vlm import plan
    from vsb.validation.judge import validate_run
    from vsb.validation.reference import JUDGED, judge_folder, judge_slices

    def no_fork() -> int:
        raise AssertionError("the reference judges started a process")

    monkeypatch.setattr(os, "fork", no_fork)
    built: Counter[int] = Counter()
    inner = plan._scene_questions

    def counted(scene: Any, *args: Any) -> Any:
        built[id(scene)] += 1
        return inner(scene, *args)

    monkeypatch.setattr(plan, "_scene_questions", counted)
    sub = tmp_path / "reference"
    judged = judge_slices(small_run, sub)
    assert list(judged.folders) == list(REFERENCE_JUDGES)
    assert built and set(built.values()) == {1}  # once for all six judges
    for folder in judged.folders.values():
        for name in ("images", "suite", "oracle"):
            assert (folder / name).is_symlink()
            assert (folder / name).resolve() == (sub / "slice" / name).resolve()
        assert (folder / "evaluations" / "requirements.parquet").is_file()
    full = tmp_path / "full"
    shutil.copytree(sub / "slice", full)
    judge_folder(full, "literal", REFERENCE_JUDGES["literal"](full), False)
    ours = validate_run(judged.folders["literal"], evaluators=JUDGED)
    theirs = validate_run(full, evaluators=JUDGED)
    assert ours.section("vlm").model_dump() == theirs.section("vlm").model_dump()
    assert ours.section("vlm").verdicts.n_checks > 0
    shutil.rmtree(judged.folders["literal"])  # a judge's copy goes, the slice stays
    assert (sub / "slice" / "images").is_dir() and any((sub / "slice" / "images").iterdir())


@pytest.mark.parametrize("keep", [True, False])
def test_an_endpoint_keeps_the_bodies_only_when_asked(keep: bool) -> None:
    body = {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,cG5n"}},
        {"type": "text", "text": "Is it night?"},
    ]}]}  # fmt: skip
    judge = REFERENCE_JUDGES["always-no"](Path("."))
    with JudgeEndpoint(judge, keep_bodies=keep) as endpoint, endpoint.client() as client:
        for _ in range(2):
            reply = client.post(f"{endpoint.url}/chat/completions", json=body)
            assert reply.json()["choices"][0]["message"]["content"] == "NO"
    assert endpoint.requests == 2
    assert endpoint.bodies == ([body, body] if keep else [])
