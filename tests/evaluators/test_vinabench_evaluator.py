"""The ``vinabench`` evaluator asks exactly VinaBench's questions and averages their answers as
VinaBench's own scripts do (issue 47, items 1, 3, 4).

The fixture: three of VinaBench's annotation files (VWP, Storyboard20K, StorySalon's short
split) with ``linked_entities``, ``num_present``, ``style`` and gold image links, imported with
``vsb suite import --constraints gold``, their images in VinaBench's inference layout
(``DIR/mm/<index>_<tid>.jpg``) served by ``vsb run --model stored:mm --layout vinabench``.
A judge server on 127.0.0.1 records every request (its prompt, its images' sha256, whether a
system message came) and answers from a script that does not know the images (a hash of the
request picks one of several phrasings). ``reference_scores`` below re-implements the
aggregation of VinaBench's ``evaluation/minicpm_vqa_*.py`` from their code's logic, reading
the answers the server gave to the same (images, prompt), and the scores of
``vsb score --evaluator vinabench`` must equal it portion by portion.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from vsb.cli.main import main
from vsb.validation.sim_judge import serve_json

FILES = sorted((Path(__file__).parent / "vinabench").glob("*.json"))
YES = ["Yes.", "No", "yes, it is", "I think yes", ".Yes", "YES", "no."]
COUNTS = ["1", "2 characters.", "0", "3.", "2"]


def _pick(options: list[str], prompt: str, shas: tuple[str, ...]) -> str:
    h = hashlib.sha256((prompt + ":".join(shas)).encode()).digest()
    return options[h[0] % len(options)]


def scripted(prompt: str, shas: tuple[str, ...]) -> str:
    """What the fake judge says: a phrasing picked by a hash of the request."""
    if prompt.startswith("How many characters"):
        return _pick(COUNTS, prompt, shas)
    return _pick(YES, prompt, shas)


class Judge:
    """An OpenAI-compatible judge server that records every request."""

    def __init__(self, answer: Any = scripted, fail_first: int = 0) -> None:
        self.answer = answer
        self.fail_first = fail_first
        self.attempts = 0
        self.asked: list[tuple[str, tuple[str, ...], bool]] = []  # prompt, shas, system
        self.lock = threading.Lock()
        self.httpd = serve_json(self.handle, keep_alive=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.attempts += 1
            if self.attempts <= self.fail_first:
                return 503, {"error": "busy"}
        msgs = body["messages"]
        system = any(m["role"] == "system" for m in msgs)
        parts = msgs[-1]["content"]
        shas = tuple(
            hashlib.sha256(base64.b64decode(p["image_url"]["url"].split(",", 1)[1])).hexdigest()
            for p in parts
            if p["type"] == "image_url"
        )
        prompt = next(p["text"] for p in parts if p["type"] == "text")
        with self.lock:
            self.asked.append((prompt, shas, system))
        text = self.answer(prompt, shas)
        return 200, {"choices": [{"message": {"content": text}}], "usage": {}}

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _index(sp: dict[str, Any]) -> str:
    """VinaBench's index of a sample (as its scripts build it)."""
    if "scene_full_id" in sp:
        return sp["scene_full_id"] + "_" + str(sp["story_id"])
    if "movie_id" in sp:
        return sp["movie_id"] + "_" + str(sp["global_id"])
    return sp["portion"] + "_" + sp["sid"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vinabench")
    suite = root / "suite"
    assert main(["suite", "import", *map(str, FILES), "--constraints", "gold",
                 "--out", str(suite)]) == 0  # fmt: skip
    folder = root / "samples" / "mm"
    folder.mkdir(parents=True)
    n = 0
    for f in FILES:
        for sp in json.loads(f.read_text()):
            for tid in range(len(sp["narrative"])):
                n += 1
                Image.new("RGB", (24, 24), (n * 37 % 256, n * 11 % 256, 90)).save(
                    folder / f"{_index(sp)}_{tid}.jpg"
                )
    out = root / "run"
    assert main(["run", "--suite", str(suite), "--condition", "independent", "--model",
                 "stored:mm", "--samples", str(root / "samples"), "--layout", "vinabench",
                 "--out", str(out), "--cache", str(root / "cache")]) == 0  # fmt: skip
    return out


def _files() -> list[str]:
    return [a for f in FILES for a in ("--vinabench-file", str(f))]


def _images(run: Path) -> dict[tuple[str, int], str]:
    """(story id, tid) -> sha256 of the run's image, what the judge was shown."""
    out = {}
    for line in (run / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        data = (run / r["path"]).read_bytes()
        out[(r["story_id"], r["scene"] - 1)] = hashlib.sha256(data).hexdigest()
    return out


def _story_id(index: str) -> str:
    return re.sub(r"[^a-z0-9_\-]+", "-", index.lower()).strip("-")


def reference_scores(
    samples: list[dict[str, Any]], ask: Any, image: Any
) -> tuple[dict[str, float], Counter[str]]:
    """VinaBench's scripts' aggregation (minicpm_vqa_*.py), re-written from their logic for one
    portion and one model: ``ask(images, prompt)`` is the VLM, ``image(sp, tid)`` the image of
    a sample's scene; the style script's ``model`` is taken as the experiment's key. Returns
    the scores and how many questions each metric asked."""
    asked: Counter[str] = Counter()
    lists: dict[str, list[float]] = {m: [] for m in (
        "entity_align", "char_num_align", "char_attr_align", "time_align", "location_align",
        "style_consist", "char_consist", "location_consist")}  # fmt: skip

    def q(metric: str, imgs: list[str], prompt: str) -> str:
        asked[metric] += 1
        return ask(imgs, prompt)

    for sp in samples:  # entity alignment
        for tid, _plot in enumerate(sp["narrative"]):
            match, total = 0, 0
            for ent in sp["linked_entities"][tid].split("; "):
                if len(ent) == 0 or ent[0].isupper():
                    continue
                prompt = f"Does this image contain or imply '{ent}'? Only answer yes or no."
                total += 1
                if q("entity_align", [image(sp, tid)], prompt).lower().startswith("yes"):
                    match += 1
            if total > 0:
                lists["entity_align"].append(float(match) / total)
    for sp in samples:  # character number and attributes
        desc = sp["global_profile"]
        pres = [x["present"] for x in sp["scene_characters"]]
        nums = [int(x["num_present"]) for x in sp["scene_characters"]]
        if len(desc) == 0:
            continue
        for tid, _plot in enumerate(sp["narrative"]):
            turn = {c: desc[c] for c in pres[tid]}
            count = nums[tid]
            prompt = "How many characters are in this image? Only answer an Arabic number."
            res = q("char_num_align", [image(sp, tid)], prompt).split(" ")[0].strip(".")
            lists["char_num_align"].append(1.0 if int(res) == count else 0.0)
            if count > 0 and len(turn) > 0:
                prompt = "Character descriptions:\n"
                for name, d in turn.items():
                    prompt += f"{name}: {d}\n"
                prompt += "Do characters in this image fit into their descriptions? Only answer yes or no."  # noqa: E501
                res = q("char_attr_align", [image(sp, tid)], prompt)
                lists["char_attr_align"].append(1.0 if res.lower().startswith("yes") else 0.0)
    for sp in samples:  # time
        for tid, _plot in enumerate(sp["narrative"]):
            time = sp["time"][tid]
            if time in ["early morning", "morning", "noon", "afternoon", "evening", "night"]:
                art = "at" if time in ["night", "noon"] else "in the"
                prompt = f"Is this image taken {art} {time}? Only answer yes or no."
                res = q("time_align", [image(sp, tid)], prompt)
                lists["time_align"].append(1.0 if res.lower().startswith("yes") else 0.0)
    for sp in samples:  # location
        for tid, _plot in enumerate(sp["narrative"]):
            loc = sp["location"][tid]
            art = "an" if any(loc.startswith(x) for x in "aeiou") else "a"
            prompt = f"Is this image taken at {art} {loc}? Only answer yes or no."
            res = q("location_align", [image(sp, tid)], prompt)
            lists["location_align"].append(1.0 if res.lower().startswith("yes") else 0.0)
    for sp in samples:  # style
        imgs = [image(sp, tid) for tid in range(len(sp["narrative"]))]
        res = q(
            "style_consist", imgs, "Are all these images in the same style? Only answer yes or no."
        )
        res = res.split(" ")[0].strip(".")
        lists["style_consist"].append(1.0 if res.lower().startswith("yes") else 0.0)
    for sp in samples:  # character consistency
        desc = sp["global_profile"]
        pres = [x["present"] for x in sp["scene_characters"]]
        if len(desc) == 0:
            continue
        score, n = 0.0, 0
        for char, d in desc.items():
            tids = [t for t in range(len(sp["narrative"])) if char in pres[t]]
            if len(tids) < 2:
                continue
            prompt = f"Do all these images contain the same charcater {char}: {d}? Only answer yes or no."  # noqa: E501
            res = q("char_consist", [image(sp, t) for t in tids], prompt).split(" ")[0].strip(".")
            score += 1.0 if res.lower().startswith("yes") else 0.0
            n += 1
        if n > 0:
            lists["char_consist"].append(score / n)
    for sp in samples:  # location consistency
        score, n = 0.0, 0
        for loc in list(set(sp["location"])):
            tids = [t for t in range(len(sp["narrative"])) if sp["location"][t] == loc]
            if len(tids) < 2:
                continue
            prompt = f"Are all these images taken at the same {loc}? Only answer yes or no."
            res = q("location_consist", [image(sp, t) for t in tids], prompt)
            res = res.split(" ")[0].strip(".")
            score += 1.0 if res.lower().startswith("yes") else 0.0
            n += 1
        if n > 0:
            lists["location_consist"].append(score / n)
    return {m: float(np.mean(v)) for m, v in lists.items() if v}, asked


def _csv(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    head = lines[0].split(",")
    return [dict(zip(head, line.split(","), strict=True)) for line in lines[1:]]


def test_asks_vinabench_questions_and_scores_as_its_scripts(run: Path, tmp_path: Path) -> None:
    cache, ledger = tmp_path / "cache", run / "ledger.sqlite"
    with Judge(fail_first=2) as judge:
        code = main(["evaluate", str(run), "--evaluator", "vinabench", "--judge",
                     "openai-compatible:fake", "--base-url", judge.url, "--cache", str(cache),
                     "--judge-concurrency", "3", *_files()])  # fmt: skip
        assert code == 0
        asked = list(judge.asked)
        attempts = judge.attempts
        # cached: a rerun asks nothing
        assert main(["evaluate", str(run), "--evaluator", "vinabench", "--judge",
                     "openai-compatible:fake", "--base-url", judge.url, "--cache", str(cache),
                     *_files()]) == 0  # fmt: skip
        assert len(judge.asked) == len(asked)
    answers = {(p, s): scripted(p, s) for p, s, _ in asked}
    assert len(answers) == len(asked)  # no question asked twice
    assert not any(system for _p, _s, system in asked)  # no system message, as VinaBench
    shas = _images(run)

    # the reference: VinaBench's loops, answered with the server's answers to the same request
    used: set[tuple[str, tuple[str, ...]]] = set()
    total: Counter[str] = Counter()
    assert main(["score", str(run), "--evaluator", "vinabench"]) == 0
    scores = {r["portion"]: r for r in _csv(run / "scores" / "vinabench.csv")}
    for f in FILES:
        samples = json.loads(f.read_text())
        portion = {"vwp": "vwp", "sb20k": "sb20k", "salon_short": "salon_short"}[
            f.stem.removesuffix("_test")
        ]

        def image(sp: dict[str, Any], tid: int) -> str:
            return shas[(_story_id(_index(sp)), tid)]

        def ask(imgs: list[str], prompt: str) -> str:
            key = (prompt, tuple(imgs))
            assert key in answers, f"vsb did not ask {prompt!r} of {len(imgs)} image(s)"
            used.add(key)
            return answers[key]

        ref, counts = reference_scores(samples, ask, image)
        total.update(counts)
        row = scores[portion]
        for metric, want in ref.items():
            assert float(row[metric]) == pytest.approx(want, abs=1e-12), (portion, metric)
        for metric in ("entity_align", "char_num_align", "location_consist"):
            if metric not in ref:
                assert row[metric] == "", (portion, metric)
    assert used == set(answers)  # vsb asked nothing VinaBench does not
    # one request per entity, scene, sample, character and location as the table says
    assert sum(total.values()) == len(asked)
    assert dict(total) == {
        "entity_align": 24, "char_num_align": 14, "char_attr_align": 13, "time_align": 13,
        "location_align": 14, "style_consist": 4, "char_consist": 7, "location_consist": 4,
    }  # fmt: skip
    # the consistency questions show every image concerned in one request
    multi = Counter(len(s) for p, s, _ in asked if p.startswith(("Are all", "Do all")))
    assert multi == {4: 3, 3: 3, 2: 9}
    assert all(len(s) == 1 for p, s, _ in asked if not p.startswith(("Are all", "Do all")))
    # a ledger row per attempt, the two 503s included
    with sqlite3.connect(ledger) as db:
        rows = db.execute(
            "select count(*), sum(success) from requests where model like 'judge:%' "
            "and cache_hit = 0"
        ).fetchone()
    assert attempts == len(asked) + 2 and rows == (attempts, len(asked))


def test_dry_run_counts_the_calls(run: Path, tmp_path: Path, capsys: Any) -> None:
    with Judge() as judge:
        assert main(["evaluate", str(run), "--evaluator", "vinabench", "--judge",
                     "openai-compatible:fake", "--base-url", judge.url, "--dry-run",
                     "--cache", str(tmp_path / "c"), *_files()]) == 0  # fmt: skip
        assert judge.asked == []
    out = capsys.readouterr().out
    assert "93 calls, 0 cached" in out and "93 to make" in out


def test_unreadable_count_is_not_aligned_and_not_cached(run: Path, tmp_path: Path) -> None:
    def words(prompt: str, shas: tuple[str, ...]) -> str:
        return "Two" if prompt.startswith("How many") else "yes"

    cache = tmp_path / "cache"
    for _ in range(2):
        with Judge(words) as judge:
            assert main(["evaluate", str(run), "--evaluator", "vinabench", "--judge",
                         "openai-compatible:fake", "--base-url", judge.url, "--cache",
                         str(cache), *_files()]) == 0  # fmt: skip
            counts = sum(p.startswith("How many") for p, _s, _x in judge.asked)
        assert counts == 14  # never cached: asked again
    assert main(["score", str(run), "--evaluator", "vinabench"]) == 0
    rows = _csv(run / "scores" / "vinabench.csv")
    assert {float(r["char_num_align"]) for r in rows} == {0.0}
    assert {float(r["entity_align"]) for r in rows} == {1.0}


def test_needs_annotations(run: Path) -> None:
    code = main(["evaluate", str(run), "--evaluator", "vinabench", "--judge", "mock"])
    assert code == 1
