"""Batch answers matched to their questions by number, whatever the layout (issue #34 §1).

The canonical layout is ``N: WORD`` lines; every other layout a judge writes (one line,
markdown, ``Q1:``, JSON, any case, explanations) must give the same verdicts, and a missing
or contradictory number must be a parse failure, never another question's word. Hypothesis
generates the layouts and mutates canonical answers; an end-to-end test runs ``vsb evaluate``
against a judge server on 127.0.0.1 that answers on one line.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vsb.cli.main import main
from vsb.evaluators.vlm.answers import _HEDGE, Answer, parse_batch
from vsb.generator.generate import write_suite
from vsb.story.models import Story
from vsb.tables import iter_rows
from vsb.validation.sim_judge import SimJudgeServer

WORDS: tuple[Answer, ...] = ("YES", "NO", "UNSURE")


def canonical(answers: list[Answer | None]) -> str:
    """The asked layout: one ``N: WORD`` line per answered question (None: left out)."""
    return "\n".join(f"{i}: {a}" for i, a in enumerate(answers, start=1) if a is not None)


# --- the examples and each named layout ---------------------------------------------


@pytest.mark.parametrize(
    ("reply", "n", "expected"),
    [
        ("1: NO, 2: YES", 2, ["NO", "YES"]),  # the issue: was ['YES', None]
        ("1: YES 2: NO", 2, ["YES", "NO"]),  # the issue: was ['NO', None]
        ("1: YES; 2: UNSURE; 3: no", 3, ["YES", "UNSURE", "NO"]),
        ("1) yes\n2) No", 2, ["YES", "NO"]),
        ("1. YES\n2. NO", 2, ["YES", "NO"]),
        ("**1**: YES\n**2**: NO", 2, ["YES", "NO"]),
        ("Q1: yes\nQ2: no", 2, ["YES", "NO"]),
        ("- 1: yes\n- 2: no", 2, ["YES", "NO"]),
        ("Question 1 - Yes. Question 2 - No.", 2, ["YES", "NO"]),
        ('{"1": "yes", "2": "NO"}', 2, ["YES", "NO"]),
        ('{"Q1": "No", "Q2": "Yes, the cup is red"}', 2, ["NO", "YES"]),
        ('["YES","NO"]', 2, ["YES", "NO"]),
        ('[{"id":1,"answer":"no"},{"id":2,"answer":"yes"}]', 2, ["NO", "YES"]),
        ('```json\n{"answers": {"1": "unsure", "2": "no"}}\n```', 2, ["UNSURE", "NO"]),
        ("1: YES, the top is red\n2: NO - nobody holds it", 2, ["YES", "NO"]),
        ("2: NO\n1: YES", 2, ["YES", "NO"]),  # by number, not by place
        ("1. Is it night? No\n2. Is there a cat? YES", 2, ["NO", "YES"]),  # question echoed
        ("1. The cup: yes\n2. The hat - NO", 2, ["YES", "NO"]),  # a label, then the word
        ("| # | Answer |\n|---|---|\n| 1 | YES |\n| 2 | no |", 2, ["YES", "NO"]),  # a table
        ("<think>1: yes? or 2: no</think>\n1: NO\n2: YES", 2, ["NO", "YES"]),  # thoughts
        ("<answer>1: yes, 2: no</answer>", 2, ["YES", "NO"]),
        ("1 \u2192 YES\n2\uff1aNO", 2, ["YES", "NO"]),
    ],
)  # fmt: skip
def test_each_layout_is_read_by_number(reply: str, n: int, expected: list[str]) -> None:
    assert parse_batch(reply, n) == expected


@pytest.mark.parametrize(
    ("reply", "n", "expected"),
    [
        ("1: YES 3: NO", 3, ["YES", None, "NO"]),  # a missing number is missing
        ("2: YES, 3: NO", 3, [None, "YES", "NO"]),  # the one-line judge
        ("1: YES\n2: NO\n2: YES", 2, ["YES", None]),  # twice, different words
        ("1: YES\n2: NO\n2: no", 2, ["YES", "NO"]),  # twice, the same word
        ("1: YES\n2: maybe\n3: NO", 3, ["YES", None, "NO"]),
        ("YES\nNO", 2, [None, None]),  # no numbers: nothing to match by
        ('["YES"]', 2, [None, None]),  # an array of words that is not one per question
        ("0: YES\n1: NO", 2, [None, None]),  # numbered from 0: the numbers mean nothing
        ('{"1": "yes", "2": "perhaps"}', 2, ["YES", None]),
        # echoed questions, then unnumbered words: which word is whose is not said
        ("1. Is it night?\n2. Is there a cat?\nYES\nNO", 2, [None, None]),
        ("1.\n2.\nyes\nno", 2, [None, None]),  # never a word across a line break
        ("1. Is it night? yes 2. Is there a cat? no", 2, [None, None]),  # never past a number
    ],
)  # fmt: skip
def test_missing_or_contradictory_numbers_are_failures(
    reply: str, n: int, expected: list[str | None]
) -> None:
    assert parse_batch(reply, n) == expected


@pytest.mark.parametrize("garbage", ["[" * 100_000, "{" * 50_000, "[1, " * 20_000])
def test_deep_or_broken_json_is_no_answer_and_never_raises(garbage: str) -> None:
    assert parse_batch(garbage + "\n1: YES", 2) == ["YES", None]


# --- Hypothesis: generated layouts give the canonical verdicts --------------------------------

MARKERS = ("{i}: ", "{i}) ", "{i}. ", "**{i}**: ", "Q{i}: ", "q{i} - ", "- {i}: ", "({i}) ",
           "[{i}] ", "Question {i}: ", "{i} = ", "{i}:", "#{i}: ", "| {i} | ", "{i} ")  # fmt: skip
#: Words put last on a numbered line: after a short label or the echoed question.
LABELS = ("The top: ", "Is it night? ", "Does the person hold the cup? | ", "the hat - ")
JOINERS = ("\n", "\n\n", ", ", "; ", " ", " | ", ",\n", "\r\n", "\n- ")
#: An explanation after the word: never an answer word or a hedge, which are read
#: (``yes, the answer is no`` is two answers, ``yes, but …`` UNSURE: test_answer_hedges).
EXPLAIN = st.text(alphabet=string.ascii_letters + " ,", max_size=30).filter(
    lambda t: not re.search(r"\b(?:yes|no|unsure)\b", t.lower()) and not _HEDGE.search(t.lower())
)
PREAMBLE = st.text(alphabet=string.ascii_letters + " !:.", max_size=40)


@st.composite
def any_case(draw: st.DrawFn, word: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    return "".join(c.lower() if f else c for c, f in zip(word, flips, strict=True))


@st.composite
def text_layout(draw: st.DrawFn, answers: list[Answer | None]) -> str:
    marker = draw(st.sampled_from(MARKERS))
    joiner = draw(st.sampled_from(JOINERS))
    bold = draw(st.booleans())
    items = []
    for i, a in enumerate(answers, start=1):
        if a is None:
            continue
        word = draw(any_case(a))
        word = f"**{word}**" if bold else word
        if "\n" in joiner and marker != "{i} " and draw(st.booleans()):
            items.append(marker.format(i=i) + draw(st.sampled_from(LABELS)) + word)
            continue
        tail = draw(st.none() | EXPLAIN)
        sep = draw(st.sampled_from((" - ", ", ", " (", " because ", ". ")))
        items.append(marker.format(i=i) + word + (f"{sep}{tail}" if tail else ""))
        if draw(st.integers(0, 9)) == 0:  # said again, the same word
            items.append(f"{i}: {a}")
    items = draw(st.permutations(items)) if draw(st.booleans()) else items
    head = draw(st.none() | PREAMBLE)
    body = joiner.join(items)
    return f"{head}\n{body}" if head else body


@st.composite
def json_layout(draw: st.DrawFn, answers: list[Answer | None]) -> str:
    given_ = [(i, a) for i, a in enumerate(answers, start=1) if a is not None]
    style = draw(st.sampled_from(("object", "array", "records", "wrapped")))
    word = {i: draw(any_case(a)) for i, a in given_}
    if style == "array" and len(given_) == len(answers):
        doc: Any = [word[i] for i, _ in given_]
    elif style == "records":
        doc = [{"id": i, "answer": word[i]} for i, _ in given_]
    else:
        key = draw(st.sampled_from(("{i}", "Q{i}", "q{i}", "question {i}")))
        doc = {key.format(i=i): word[i] for i, _ in given_}
        doc = {"answers": doc} if style == "wrapped" else doc
    text = json.dumps(doc, indent=draw(st.sampled_from((None, 2))))
    return f"```json\n{text}\n```" if draw(st.booleans()) else text


ANSWERS = st.lists(st.sampled_from((*WORDS, None)), min_size=1, max_size=24)


@settings(max_examples=200, deadline=None)
@given(ANSWERS, st.data())
def test_no_layout_changes_a_verdict(answers: list[Answer | None], data: st.DataObject) -> None:
    expected = parse_batch(canonical(answers), len(answers))
    assert expected == answers  # the canonical layout reads back as written
    layout = data.draw(text_layout(answers) | json_layout(answers), label="layout")
    assert parse_batch(layout, len(answers)) == expected, layout


# --- fuzz: mutated answers never take another question's word --------------------------------

PUNCT = " \n,;:.)(-*[]"


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    for _ in range(draw(st.integers(1, 8))):
        lines = text.split("\n")
        op = draw(st.sampled_from(("delete", "insert", "swap", "repeat", "drop", "join")))
        if op in ("swap", "repeat", "drop", "join") and len(lines) > 1:
            a = draw(st.integers(0, len(lines) - 2))
            if op == "swap":
                lines[a], lines[a + 1] = lines[a + 1], lines[a]
            elif op == "repeat":
                lines.insert(draw(st.integers(0, len(lines))), lines[a])
            elif op == "drop":
                del lines[a]
            else:
                lines[a : a + 2] = [lines[a] + draw(st.sampled_from((" ", ", ", "; ", "")))
                                    + lines[a + 1]]  # fmt: skip
            text = "\n".join(lines)
        elif op == "delete" and text:
            at = draw(st.integers(0, len(text) - 1))
            if not text[at].isalnum():  # separators only: a changed digit renumbers
                text = text[:at] + text[at + 1 :]
        elif op == "insert":
            at = draw(st.integers(0, len(text)))
            inside_number = 0 < at < len(text) and text[at - 1].isdigit() and text[at].isdigit()
            if not inside_number:
                text = text[:at] + draw(st.sampled_from(PUNCT)) + text[at:]
    return text


@settings(max_examples=250, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=18, max_size=18), st.data())
def test_mutations_never_give_a_question_another_s_word(
    answers: list[Answer | None], data: st.DataObject
) -> None:
    asked = canonical(answers)
    text = data.draw(mutated(data.draw(st.sampled_from((asked, one_line(asked))))), label="mutated")
    got = parse_batch(text, len(answers))
    for i, (a, g) in enumerate(zip(answers, got, strict=True), start=1):
        assert g in (a, None), f"question {i}: {g} instead of {a} from {text!r}"


# --- end to end: a judge that answers on one line ---------------------------------------------


def one_line(content: str) -> str:
    """``1: YES\\n2: NO`` as the issue's judge wrote it: ``1: YES, 2: NO``."""
    return ", ".join(content.splitlines())


def markdown_json(content: str) -> str:
    pairs = [ln.split(": ", 1) for ln in content.splitlines()]
    return "```json\n" + json.dumps({f"Q{k}": w.lower() for k, w in pairs}) + "\n```"


class LayoutJudgeServer(SimJudgeServer):
    """The simulated judge on 127.0.0.1, its batched replies rewritten by ``layout``."""

    def __init__(self, run_dir: Path, layout: Any, **kw: Any) -> None:
        super().__init__(run_dir, **kw)
        self.layout = layout

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, reply = super().handle(path, body)
        if status == 200:
            msg = reply["choices"][0]["message"]
            msg["content"] = self.layout(msg["content"])
        return status, reply


@pytest.fixture(scope="module")
def drifting_run(tmp_path_factory: pytest.TempPathFactory, default_suite: list[Story]) -> Path:
    root = tmp_path_factory.mktemp("layouts")
    write_suite([s for s in default_suite if s.difficulty != "hard"][:4], root / "suite")
    argv = ["run", "--suite", str(root / "suite"), "--model", "procedural-amnesiac",
            "--condition", "independent", "--out", str(root / "run"),
            "--cache", str(root / "g")]  # fmt: skip
    assert main(argv) == 0
    return root / "run"


def _judged(run: Path, layout: Any, cache: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    with LayoutJudgeServer(run, layout, error_rate=0.1, seed=7) as server:
        argv = ["evaluate", str(run), "--evaluator", "vlm", "--judge", "openai-compatible:sim",
                "--base-url", server.url, "--cache", str(cache)]  # fmt: skip
        assert main(argv) == 0
    assert "could not be parsed" not in capsys.readouterr().err
    rows = iter_rows(run / "evaluations" / "requirements.parquet")
    return {(r["story_id"], r["scene"], r["req_id"]): r["verdict"] for _, r in rows
            if r["evaluator"] == "vlm"}  # fmt: skip


@pytest.mark.parametrize("layout", [one_line, markdown_json], ids=["one-line", "json"])
def test_evaluate_gets_the_same_verdicts_from_any_layout(
    drifting_run: Path, tmp_path: Path, layout: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = _judged(drifting_run, lambda c: c, tmp_path / "a", capsys)
    other = _judged(drifting_run, layout, tmp_path / "b", capsys)
    assert other == asked
    verdicts = set(asked.values())
    assert {"passed", "failed"} <= verdicts and "parse_failure" not in verdicts
