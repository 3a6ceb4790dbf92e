"""Prompt budgets through a run (issue #44): every record says how its prompt fit the
model's budget (from the adapter's ``prompt_fit``, or the result's ``metadata["prompt_fit"]``,
the same fresh or from the cache); ``vsb run`` says how many prompts were cut per model and
condition; ``scores.json``, ``model_scores.csv`` and the site's leaderboard mark the model.
A paid model's prompt over its provider's documented limit is refused before anything is
sent (the local OpenAI images server receives nothing)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.test_paid_runs import _events, images_server
from vsb.adapters.base import GenerationRequest, GenerationResult, PromptFit
from vsb.adapters.simulators import SIMULATORS, ProceduralSimulator
from vsb.cli.main import main
from vsb.conditions import get_condition
from vsb.generator.generate import generate_story, write_suite
from vsb.run.prompts import full_prompt
from vsb.run.runner import RunConfig, run
from vsb.story.models import Story

MODEL = "python:tests.cut:sim"
CONDS = ("independent", "full_context")
#: The fake encoder's budget, in words.
BUDGET = 60


def _words(text: str) -> int:
    return len(text.split())


class CutSim(ProceduralSimulator):
    """A simulator whose (fake) text encoder reads the first ``BUDGET`` words of its prompt:
    its ``prompt_fit`` says cut for the longer prompts."""

    def __init__(self, name: str = MODEL) -> None:
        super().__init__(name, SIMULATORS["procedural-drift-mid"])

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        n = _words(request.full_prompt())
        cut = n > BUDGET
        return PromptFit("tokens", n, BUDGET, cut, "truncated" if cut else "whole")


class MetaSim(CutSim):
    """The same fit, set by ``generate`` in the result's metadata (as a pipeline that counts
    with its own tokenizer does); its ``prompt_fit`` knows nothing."""

    def prompt_fit(self, request: GenerationRequest) -> PromptFit:
        return PromptFit()

    def generate(self, request: GenerationRequest) -> GenerationResult:
        res = super().generate(request)
        fit = CutSim.prompt_fit(self, request)
        meta = {**res.metadata, "prompt_fit": asdict(fit)}
        return GenerationResult(res.png, meta, res.cost_usd)


@pytest.fixture(scope="module")
def stories() -> list[Story]:
    return [
        generate_story("possession", "hard", "p", seed=1),
        generate_story("wardrobe", "easy", "w", seed=1),
    ]


def _expected(stories: list[Story]) -> dict[tuple[str, str, int], int]:
    """(condition, story, scene) -> the prompt's length in words."""
    out = {}
    for c in CONDS:
        cond = get_condition(c)
        for s in stories:
            for sc in s.scenes:
                out[(c, s.id, sc.index)] = _words(full_prompt(sc.text, cond.context(s, sc.index)))
    return out


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]


def test_a_cut_prompt_is_recorded_reported_scored_and_marked(
    tmp_path: Path, stories: list[Story], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    write_suite(stories, tmp_path / "suite", seed=0)
    lengths = _expected(stories)
    cut = {c: sum(n > BUDGET for (cc, _, _), n in lengths.items() if cc == c) for c in CONDS}
    total = {c: sum(cc == c for cc, _, _ in lengths) for c in CONDS}
    assert 0 < cut["full_context"] < total["full_context"], cut  # some cut, some not
    monkeypatch.setattr("vsb.run.runner.get_adapter", lambda name, **kw: CutSim(name))
    out = tmp_path / "run"
    argv = ["run", "--suite", str(tmp_path / "suite"), "--model", MODEL, "--condition",
            ",".join(CONDS), "--out", str(out), "--cache", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr().out
    parts = [f"{MODEL} {c} {cut[c]}/{total[c]}" for c in CONDS if cut[c]]
    assert f"prompts cut by the text encoder: {', '.join(parts)}\n" in said
    recs = _records(out)
    for r in recs:
        n = lengths[(r["condition"], r["story_id"], r["scene"])]
        assert (r["prompt_unit"], r["prompt_length"], r["prompt_budget"]) == ("tokens", n, BUDGET)
        assert r["prompt_cut"] is (n > BUDGET)
        assert r["prompt_encoded"] == ("truncated" if n > BUDGET else "whole")

    assert main(["evaluate", str(out), "--evaluator", "rules"]) == 0
    assert main(["score", str(out), "--resamples", "50"]) == 0
    capsys.readouterr()
    scores = json.loads((out / "scores" / "scores.json").read_text())
    assert scores["version"] == "2.2"
    (p,) = scores["prompts"]
    n_cut, n_all = sum(cut.values()), sum(total.values())
    assert (p["model"], p["unit"], p["budget"], p["n_cut"], p["n_prompts"]) == (
        MODEL,
        "tokens",
        BUDGET,
        n_cut,
        n_all,
    )
    assert p["cut_share"] == pytest.approx(n_cut / n_all)
    assert {c["condition"]: (c["n_cut"], c["n_prompts"]) for c in p["conditions"]} == {
        c: (cut[c], total[c]) for c in CONDS
    }
    with open(out / "scores" / "model_scores.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(
        float(r["prompts_cut"]) == pytest.approx(cut[r["condition"]] / total[r["condition"]])
        for r in rows
    )

    from vsb.release.manifest import freeze
    from vsb.site.build import build_site

    freeze(out, "v0.0.1-cut")
    site = tmp_path / "site"
    build_site(out, site)
    page = (site / "index.html").read_text()
    assert page.count('class="cut-mark"') == sum(1 for c in CONDS if cut[c])
    assert 'id="prompts-cut"' in page and f"{n_cut} of {n_all}" in page


def test_a_fit_from_the_results_metadata_is_the_same_fresh_and_from_the_cache(
    tmp_path: Path, stories: list[Story]
) -> None:
    write_suite(stories[1:], tmp_path / "suite", seed=0)
    cache = tmp_path / "cache"

    def once(name: str, adapter: ProceduralSimulator) -> list[dict]:
        cfg = RunConfig(suite_dir=tmp_path / "suite", models=[MODEL], conditions=list(CONDS),
                        out=tmp_path / name, cache_dir=cache)  # fmt: skip
        run(cfg, adapters={MODEL: adapter})
        return _records(tmp_path / name)

    fresh = once("a", MetaSim())
    again = once("b", MetaSim())
    by_rule = once("c", CutSim())  # the same requests: every one from the cache
    assert not any(r["cache_hit"] for r in fresh) and all(r["cache_hit"] for r in again)
    fields = ("prompt_unit", "prompt_length", "prompt_budget", "prompt_cut", "prompt_encoded")
    pick = [[{k: r[k] for k in ("condition", "story_id", "scene", *fields)} for r in rs]
            for rs in (fresh, again, by_rule)]  # fmt: skip
    assert pick[0] == pick[1] == pick[2]
    assert all(r["prompt_unit"] == "tokens" for r in fresh)


def test_simulators_record_characters_with_no_limit(tmp_path: Path, stories: list[Story]) -> None:
    write_suite(stories[1:], tmp_path / "suite", seed=0)
    cfg = RunConfig(suite_dir=tmp_path / "suite", models=["procedural-oracle"],
                    conditions=["structured_memory"], out=tmp_path / "run",
                    cache_dir=tmp_path / "cache")  # fmt: skip
    result = run(cfg)
    assert result.cut_lines() == []
    s = stories[1]
    cond = get_condition("structured_memory")
    for r in _records(tmp_path / "run"):
        sc = s.scenes[r["scene"] - 1]
        n = len(full_prompt(sc.text, cond.context(s, sc.index)))
        assert (r["prompt_unit"], r["prompt_length"], r["prompt_budget"]) == ("characters", n, None)
        assert (r["prompt_cut"], r["prompt_encoded"]) == (False, "whole")


# --- a paid prompt over its provider's limit: refused before anything is sent -------------


def _over(stories: list[Story], condition: str, limit: int) -> list[tuple[str, int, int]]:
    cond = get_condition(condition)
    return [
        (s.id, sc.index, n)
        for s in stories
        for sc in s.scenes
        if (n := len(full_prompt(sc.text, cond.context(s, sc.index)))) > limit
    ]


@pytest.mark.parametrize("dry", [False, True])
def test_a_prompt_over_the_providers_limit_sends_nothing(
    tmp_path: Path, stories: list[Story], dry: bool
) -> None:
    write_suite(stories, tmp_path / "suite", seed=0)
    over = _over(stories, "full_context", 1000)
    assert over, "the suite needs a full_context prompt over dall-e-2's 1,000 characters"
    log, out = tmp_path / "server.log", tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env |= {"OPENAI_API_KEY": "sk-test", "NO_PROXY": "*", "COLUMNS": "200"}
    with images_server(log) as url:
        argv = [sys.executable, "-m", "vsb", "run", "--suite", str(tmp_path / "suite"),
                "--model", "openai:dall-e-2", "--base-url", url, "--condition",
                "independent,full_context", "--out", str(out), "--cache",
                str(tmp_path / "cache"), *(["--dry-run"] if dry else [])]  # fmt: skip
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()
    sid, scene, n = over[0]
    more = f" ({len(over)} prompts over it in all)" if len(over) > 1 else ""
    assert line == (
        f"error: openai:dall-e-2: the prompt of story {sid}, scene {scene}, full_context is "
        f"{n:,} characters, over the provider's limit of 1,000{more}; nothing sent "
        "(docs/providers.md: prompt limits)"
    )
    assert _events(log) == []  # zero requests reached the server
    assert not out.exists() and not (tmp_path / "cache").exists()


def test_prompts_within_the_limit_are_sent_and_recorded(
    tmp_path: Path, stories: list[Story]
) -> None:
    """The same suite under a condition whose prompts fit: sent, each record in characters."""
    write_suite(stories, tmp_path / "suite", seed=0)
    assert not _over(stories, "independent", 1000)
    with images_server(tmp_path / "server.log") as url:
        from vsb.adapters.providers.openai import OpenAIImages

        adapter = OpenAIImages("dall-e-2", base_url=url)
        cfg = RunConfig(suite_dir=tmp_path / "suite", models=["openai:dall-e-2"],
                        conditions=["independent"], out=tmp_path / "run",
                        cache_dir=tmp_path / "cache")  # fmt: skip
        result = run(cfg, adapters={"openai:dall-e-2": adapter})
    assert result.failures == 0 and result.calls > 0
    for r in _records(tmp_path / "run"):
        assert (r["prompt_unit"], r["prompt_budget"], r["prompt_cut"]) == (
            "characters",
            1000,
            False,
        )
        assert 0 < r["prompt_length"] <= 1000
