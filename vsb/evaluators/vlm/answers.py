"""The judge's prompts and how its replies are read: YES, NO or UNSURE per question.

A batched call asks numbered questions and expects ``N: WORD`` lines; ``parse_batch`` matches
each answer to its question by its number in any layout (one line, markdown, ``Q1:``, a JSON
object or array). A single-question call expects one word (``parse_answer``). Anything else
is a parse failure: counted and shown, never a pass (``verdict_of``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import islice
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


#: An answer word at the start of a text, after an optional short label ("Answer:").
#: Never across a line break: ``1.`` alone on a line does not take the next line's word.
_LEAD_WORD = re.compile(
    r"[ \t]*(?:(?:the[ \t]+)?(?:final[ \t]+)?(?:answer|verdict)(?:[ \t]+is)?[ \t]*[:\-]?[ \t]*)?"
    r"(yes|no|unsure)\b"
)
#: A question number: ``1:``, ``1)``, ``1.``, ``(1)``, ``[1]``, ``Q1:``, ``Question 1 -``,
#: ``1 =``, ``| 1 |``, ``1 YES`` (markdown already stripped); the separator is group 2.
_MARKER = re.compile(
    r"(?<!\w)(?:q(?:uestion)?[ \t]*(?:no\b\.?|number|#)?[ \t]*)?(\d{1,4})(?!\d)"
    r"([ \t]*[:.)\]}>=|/\-\u2013\u2014\u2192\uff1a]+[ \t]*|[ \t]+)"
)
#: A line that puts the word last, after a short label or an echoed question
#: (``the cup: yes``, ``is it night? no``, ``is it night? | no |``).
_LAST_WORD = re.compile(
    r"[^\n\d]{0,300}?[:?|\-\u2013\u2014\u2192][ \t|]*(yes|no|unsure)[ \t.!|,;]*$"
)
_THINKING = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S)
#: What may precede a number at the start of its line: space, bullets, brackets.
_LINE_HEAD = re.compile(r"[\s\-+\u2022>{\[(|]*")
_MARKDOWN = str.maketrans("", "", "*_`\"'#")
_ID_KEYS = ("id", "question", "q", "number", "n", "index", "question_id", "qid", "num")
_ANSWER_KEYS = ("answer", "verdict", "response", "a", "result", "value")

#: Brackets tried as the start of a JSON reply (a reply is short; garbage may not be).
_JSON_TRIES = 64
_WORDS: dict[str, Answer] = {"yes": "YES", "no": "NO", "unsure": "UNSURE"}
Pairs = list[tuple[int, "Answer | None"]]


def _lead(text: str, pos: int = 0) -> Answer | None:
    """The answer word that opens ``text[pos:]`` (lowercase), any explanation after it
    ignored."""
    m = _LEAD_WORD.match(text, pos)
    return _WORDS[m.group(1)] if m else None


def _number(key: object) -> int | None:
    """A question number from a JSON key or id: ``1``, ``"1"``, ``"Q1"``, ``"question 1"``."""
    if isinstance(key, bool):
        return None
    if isinstance(key, int):
        return key
    if isinstance(key, str):
        m = re.fullmatch(r"\s*(?:q(?:uestion)?\s*[_#]?\s*)?(\d{1,4})\s*[:.)]?\s*", key.lower())
        return int(m.group(1)) if m else None
    return None


def _json_value(value: object) -> Answer | None:
    """A JSON answer: a word (maybe explained), a boolean, or an object with an answer key."""
    if isinstance(value, bool):
        return "YES" if value else "NO"
    if isinstance(value, str):
        return _lead(value.translate(_MARKDOWN).lower())
    if isinstance(value, dict):
        low = {str(k).lower(): v for k, v in value.items()}
        for k in _ANSWER_KEYS:
            if k in low:
                return _json_value(low[k])
    return None


def _json_pairs(obj: object, n: int) -> Pairs | None:
    """(number, answer) pairs from a parsed JSON reply, or None if it holds no answers."""
    if isinstance(obj, dict):
        numbered = [(_number(k), v) for k, v in obj.items()]
        if numbered and all(k is not None for k, _ in numbered):
            return [(k, _json_value(v)) for k, v in numbered if k is not None]
        low = {str(k).lower(): v for k, v in obj.items()}
        ids = [low[k] for k in _ID_KEYS if k in low]
        if ids and any(k in low for k in _ANSWER_KEYS) and (num := _number(ids[0])) is not None:
            return [(num, _json_value(low))]
        for v in obj.values():  # a wrapper: {"answers": {...}} or {"answers": [...]}
            if isinstance(v, (dict, list)) and (inner := _json_pairs(v, n)) is not None:
                return inner
        return None
    if isinstance(obj, list) and obj:
        if all(isinstance(v, (str, bool)) for v in obj):
            words = [_json_value(v) for v in obj]
            if all(w is not None for w in words):
                # an array of bare words: numbered by position, only when it answers all
                if len(obj) != n:
                    return [(0, None)]  # which one is missing cannot be told: none count
                return list(enumerate(words, start=1))
            return _text_pairs("\n".join(str(v) for v in obj).translate(_MARKDOWN).lower())
        pairs: Pairs = []
        for v in obj:
            inner = _json_pairs(v, n) if isinstance(v, dict) else None
            if inner is None:
                return None
            pairs += inner
        return pairs
    return None


def _json_reply(text: str, n: int) -> Pairs | None:
    """The pairs of the first JSON object or array in ``text`` that holds answers."""
    decoder = json.JSONDecoder()
    for m in islice(re.finditer(r"[{\[]", text), _JSON_TRIES):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            continue
        if (pairs := _json_pairs(obj, n)) is not None:
            return pairs
    return None


def _text_pairs(text: str) -> Pairs:
    """(number, answer) pairs from free text (lowercase, markdown stripped). A number counts
    as an answer's label where an answer word follows it on its line (anywhere: ``1: yes,
    2: no``), or where it opens a line with a separator: then the word may end that line
    after a short label or the echoed question (``1. Is it night? No``), or the answer does
    not parse (``4: maybe``). No word is taken across a line break or from past another
    number."""
    marks: list[re.Match[str]] = []
    for m in _MARKER.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        opens_line = bool(m.group(2).strip()) and bool(
            _LINE_HEAD.fullmatch(text, line_start, m.start())
        )
        if opens_line or _lead(text, m.end()) is not None:
            marks.append(m)
    pairs: Pairs = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        answer = _lead(text, m.end())
        if answer is None:
            last = _LAST_WORD.match(text[m.end() : end].split("\n", 1)[0].rstrip())
            answer = _WORDS[last.group(1)] if last else None
        pairs.append((int(m.group(1)), answer))
    return pairs


def parse_batch(text: str, n: int) -> list[Answer | None]:
    """Answers to questions 1..n, each matched to its question by its number, in any layout:
    ``N: WORD`` lines, one line (``1: NO, 2: YES``; commas, semicolons or spaces between),
    ``1)``, ``1.``, ``**1**:``, ``Q1:``, ``- 1: yes``, a JSON object (``{"1": "yes"}``) or
    array (``["YES", "NO"]``: by position, only if it has n words; ``[{"id": 1, "answer":
    "no"}]``), any case, with or without an explanation after the word. None where a
    number is missing, given twice with different words, or its answer does not parse; a
    reply numbered from 0 answers nothing. Never raises."""
    lowered = _THINKING.sub("", text.lower())  # a reasoning model's thoughts answer nothing
    pairs = _json_reply(lowered, n) if re.search(r"[{\[]", lowered) else None
    if pairs is None:
        pairs = _text_pairs(lowered.translate(_MARKDOWN))
    seen: dict[int, set[Answer | None]] = {}
    for k, answer in pairs:
        seen.setdefault(k, set()).add(answer)
    if 0 in seen:
        return [None] * n
    out: list[Answer | None] = []
    for i in range(1, n + 1):
        got = seen.get(i, {None})
        out.append(next(iter(got)) if len(got) == 1 else None)
    return out


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
