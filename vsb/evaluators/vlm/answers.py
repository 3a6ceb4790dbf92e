"""The judge's prompts and how its replies are read: YES, NO or UNSURE per question.

A batched call asks numbered questions and expects ``N: WORD`` lines (``parse_batch``); a
single-question call expects one word (``parse_answer``). Anything else is a parse failure:
counted and shown, never a pass (``verdict_of``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from vsb.evaluators.rules import Verdict
from vsb.evaluators.vlm.questions import Question

Answer = Literal["YES", "NO", "UNSURE"]

_RULES = (
    "Look only at the picture. Answer YES only if the picture clearly shows it is true, and NO "
    "only if it clearly shows it is false. Answer UNSURE when the picture does not let you tell "
    "(the thing is too small, hidden or ambiguous, or you cannot tell which person is meant). "
    "Do not guess. Do not explain."
)
SYSTEM_PROMPT = (
    "You are checking one picture from an illustrated story. You get numbered questions about "
    "it. Answer every question on its own line, in order, as its number, a colon and one word: "
    "YES, NO or UNSURE (for example `1: YES`). " + _RULES
)
SYSTEM_PROMPT_PAIRS = (
    "You are comparing two consecutive pictures from an illustrated story: the first picture, "
    "then the second. You get numbered questions about them. Answer every question on its "
    "own line, in order, as its number, a colon and one word: YES, NO or UNSURE (for example "
    "`1: YES`). " + _RULES
)
SYSTEM_PROMPT_SINGLE = (
    "You are checking one picture from an illustrated story against a single question. "
    "Answer with exactly one word: YES, NO or UNSURE. " + _RULES
)

_WORD = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+)?(?:answer|verdict)(?:\s+is)?\s*[:\-]?\s*|[^:\n]{0,40}:\s*)?"
    r"(yes|no|unsure)[\s.!]*$"
)
#: A line that starts with an answer word (``Yes, the cup is…``): an answer, parsable or not.
_LEAD = re.compile(r"^(?:\d{1,4}\s*[:.)\-]\s*)?(yes|no|unsure)\b")
_NUMBERED = re.compile(r"^\s*(?:q(?:uestion)?\s*)?(\d{1,4})\s*[:.)\-]\s*(.*)$")
_STRIP = str.maketrans("", "", "*_`\"'[]()<>#")
_STRIP_BATCH = str.maketrans("", "", "*_`\"'[]<>#")


def _word(text: str) -> Answer | None:
    m = _WORD.match(text.strip())
    if not m:
        return None
    return "YES" if m.group(1) == "yes" else "NO" if m.group(1) == "no" else "UNSURE"


def parse_answer(text: str) -> Answer | None:
    """YES, NO or UNSURE from a one-question reply: the reply must answer the question once.
    Its last line is the word, optionally after a short label ("Answer:", or the number 1);
    lines before it may explain, but none may answer too (``2: NO``, ``Yes, …``). Case,
    markdown and final punctuation are ignored. Anything else is None (a parse failure):
    a reply with several answers, or a numbered answer to another question, answers
    nothing."""
    cleaned = text.translate(_STRIP).strip().lower()
    lines = [ln.strip() for ln in cleaned.splitlines() if ln.strip()]
    if not lines:
        return None
    answers = [_word(ln) for ln in lines]
    mentions = sum(
        a is not None or bool(_LEAD.match(ln)) for ln, a in zip(lines, answers, strict=True)
    )
    if answers[-1] is None or mentions != 1:
        return None
    numbered = _NUMBERED.match(lines[-1])
    if numbered and int(numbered.group(1)) != 1:
        return None  # labelled as the answer to a question that was not asked
    return answers[-1]


def parse_batch(text: str, n: int) -> list[Answer | None]:
    """Answers to questions 1..n from ``N: WORD`` lines; None where the answer is missing,
    duplicated (the number appears twice) or unparsable. Never raises."""
    seen: dict[int, list[Answer | None]] = {}
    for line in text.translate(_STRIP_BATCH).lower().splitlines():
        m = _NUMBERED.match(line)
        if m:
            seen.setdefault(int(m.group(1)), []).append(_word(m.group(2).strip("() ")))
    return [v[0] if len(v := seen.get(i, [])) == 1 else None for i in range(1, n + 1)]


def scene_prompt(questions: Sequence[Question]) -> str:
    """The user prompt of a batched call: one numbered question per line."""
    return "\n".join(f"{i}. {q.text}" for i, q in enumerate(questions, start=1))


def verdict_of(answer: Answer | None, expect: str) -> Verdict:
    """A question's verdict from its parsed answer."""
    if answer is None:
        return "parse_failure"
    if answer == "UNSURE":
        return "unsure"
    return "passed" if answer == expect else "failed"
