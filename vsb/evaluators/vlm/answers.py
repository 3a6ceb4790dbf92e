"""The judge's prompts and how its replies are read: YES, NO or UNSURE per question.

A batched call asks numbered questions and expects ``N: WORD`` lines; ``parse_batch`` matches
each answer to its question by its number in any layout (one line, markdown, ``Q1:``, a JSON
object or array). A single-question call expects one word (``parse_answer``). Saying one
cannot tell ("not sure", "hard to say") or hedging the word ("yes, but it is partly hidden",
"probably no") is UNSURE; a line with two answers ("yes no", "no: yes", "yes or no") answers
nothing. Anything else is a parse failure: counted and shown, never a pass (``verdict_of``).
docs/judge-interop.md tabulates what is read how.
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
_WORDS: dict[str, Answer] = {"yes": "YES", "no": "NO", "unsure": "UNSURE"}

# Hedges (docs/judge-interop.md, "How answers are read"); apostrophes are stripped before
# reading (``can't`` is ``cant``), a typographic one is not (``can’t``).
#: Saying that the picture does not let one tell: UNSURE wherever an answer word may stand.
_CANNOT_TELL = (
    r"(?:(?:i\u2019?m|i[ \t]+am|it\u2019?s|it[ \t]+is)[ \t]+)?"
    r"(?:(?:not|isn\u2019?t)[ \t]+(?:sure|certain|clear)"
    r"|(?:i[ \t]+)?(?:can[ \t]*not|can\u2019?t|could[ \t]*not|couldn\u2019?t|unable[ \t]+to)"
    r"[ \t]+(?:tell|say|determine|decide|judge|be[ \t]+sure|be[ \t]+certain)"
    r"|(?:hard|difficult|impossible)[ \t]+to[ \t]+(?:tell|say|determine|judge)"
    r"|(?:i[ \t]+)?(?:don\u2019?t|do[ \t]+not)[ \t]+know|no[ \t]+idea|unsure|uncertain|unclear)\b"
)
#: A word that qualifies an answer (``yes, but it is partly hidden``, ``probably no``).
_QUALIFIER = (
    r"(?:but|although|though|however|partly|partially|mostly|somewhat|maybe|perhaps|probably"
    r"|possibly|likely|might|could[ \t]+be|may[ \t]+be|seems?|apparently|i[ \t]+think"
    r"|i[ \t]+believe|i[ \t]+guess|not[ \t]+(?:entirely|fully|completely|clearly))\b"
)
_HEDGE = re.compile(rf"\b(?:{_QUALIFIER}|{_CANNOT_TELL})")
#: What may open an answer, after an optional short label ("Answer:"): saying one cannot
#: tell (group 1), or an answer word (group 3), maybe after a qualifier (group 2). Never
#: across a line break: ``1.`` alone on a line does not take the next line's word.
_OPENS = re.compile(
    r"[ \t]*(?:(?:the[ \t]+)?(?:final[ \t]+)?(?:answer|verdict)(?:[ \t]+is)?[ \t]*[:\-]?[ \t]*)?"
    rf"(?:({_CANNOT_TELL})|(?:({_QUALIFIER})[ \t,]*)?(yes|no|unsure)\b)"
)
#: A second answer word right after the first (``yes no``, ``no: yes``, ``yes or no``) …
_NEXT_WORD = re.compile(r"[ \t.,;:!?/|\-]*(?:(?:or|and)\b[ \t,]*)?(yes|no|unsure)\b")
#: … or later, standing alone (``yes, the answer is no.``; not ``yes, there is no hat``).
_ALONE_WORD = re.compile(r"\b(yes|no|unsure)[ \t]*(?=[,.;:!?|)]|$)")
#: Where an answer's explanation ends: its line's end, or a number with a separator.
_EXPLAINED_UNTIL = re.compile(r"\n|(?<!\w)\d{1,4}[ \t]*[:.)\]}>=|/\-\u2013\u2014\u2192\uff1a]")


def _read_opening(m: re.Match[str], text: str, end: int) -> Answer | None:
    """The answer ``m`` (an ``_OPENS`` match in ``text``) opens: UNSURE where it says it
    cannot tell or qualifies its word, or where the explanation after the word (up to
    ``end``, its line's end or the next number) hedges; None where that explanation gives
    another answer word; else the word."""
    if m.group(1) or m.group(2):
        return "UNSURE"
    word = _WORDS[m.group(3)]
    stop = _EXPLAINED_UNTIL.search(text, m.end(), end)
    rest = text[m.end() : stop.start() if stop else end]
    nxt = _NEXT_WORD.match(rest)
    others = {w for w in _ALONE_WORD.findall(rest)} | ({nxt.group(1)} if nxt else set())
    if any(_WORDS[w] != word for w in others):
        return None  # two answers: which one is meant is not said
    return "UNSURE" if _HEDGE.search(rest) else word


def _read(text: str) -> Answer | None:
    """The answer that opens ``text`` (lowercase, markdown stripped), read as
    ``_read_opening`` reads it; None where none does."""
    m = _OPENS.match(text)
    return _read_opening(m, text, len(text)) if m else None


def _word(text: str) -> Answer | None:
    """A line's answer in a one-question reply: the word alone, after an optional short
    label that is not itself an answer (``no: yes`` answers twice); or UNSURE where the line
    says it cannot tell or hedges its word (after an optional number). Else None."""
    line = text.strip()
    m = _WORD.match(line)
    if m:
        return None if _ALONE_WORD.search(line, 0, m.start(1)) else _WORDS[m.group(1)]
    numbered = _NUMBERED.match(line)
    said = _read(numbered.group(2) if numbered else line)
    return "UNSURE" if said == "UNSURE" else None


def parse_answer(text: str) -> Answer | None:
    """YES, NO or UNSURE from a one-question reply: the reply must answer the question once.
    Its last line is the word, optionally after a short label ("Answer:", or the number 1);
    lines before it may explain, but none may answer too (``2: NO``, ``Yes, …``). Case,
    markdown and final punctuation are ignored. A line that says it cannot tell or hedges
    its word is UNSURE. Anything else is None (a parse failure): a reply with several
    answers (saying twice that it cannot tell is one), a line with two answer words, or a
    numbered answer to another question, answers nothing."""
    cleaned = text.translate(_STRIP).strip().lower()
    lines = [ln.strip() for ln in cleaned.splitlines() if ln.strip()]
    if not lines:
        return None
    answers = [_word(ln) for ln in lines]
    earlier = [
        a for ln, a in zip(lines[:-1], answers, strict=False) if a is not None or _LEAD.match(ln)
    ]
    if answers[-1] is None or any(a != "UNSURE" or answers[-1] != a for a in earlier):
        return None  # answered twice (only saying twice that one cannot tell is one answer)
    numbered = _NUMBERED.match(lines[-1])
    if numbered and int(numbered.group(1)) != 1:
        return None  # labelled as the answer to a question that was not asked
    return answers[-1]


#: A question number: ``1:``, ``1)``, ``1.``, ``(1)``, ``[1]``, ``Q1:``, ``Question 1 -``,
#: ``1 =``, ``| 1 |``, ``1 YES`` (markdown already stripped); the separator is group 2.
_MARKER = re.compile(
    r"(?<!\w)(?:q(?:uestion)?[ \t]*(?:no\b\.?|number|#)?[ \t]*)?(\d{1,4})(?!\d)"
    r"([ \t]*[:.)\]}>=|/\-\u2013\u2014\u2192\uff1a]+[ \t]*|[ \t]+)"
)
#: A line that puts the word last, after a short label or an echoed question
#: (``the cup: yes``, ``is it night? no``, ``is it night? | no |``).
_LAST_WORD = re.compile(
    r"[^\n\d]{0,300}?[:?|\-\u2013\u2014\u2192][ \t|]*"
    rf"(yes|no|unsure|{_CANNOT_TELL})[ \t.!|,;]*$"
)
_THINKING = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S)
#: What may precede a number at the start of its line: space, bullets, brackets.
_LINE_HEAD = re.compile(r"[\s\-+\u2022>{\[(|]*")
_MARKDOWN = str.maketrans("", "", "*_`\"'#")
_ID_KEYS = ("id", "question", "q", "number", "n", "index", "question_id", "qid", "num")
_ANSWER_KEYS = ("answer", "verdict", "response", "a", "result", "value")

#: Brackets tried as the start of a JSON reply (a reply is short; garbage may not be).
_JSON_TRIES = 64
Pairs = list[tuple[int, "Answer | None"]]


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
        return _read(value.translate(_MARKDOWN).lower())
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
    as an answer's label where an answer follows it on its line (anywhere: ``1: yes,
    2: not sure``), or where it opens a line with a separator: then the word may end that line
    after a short label or the echoed question (``1. Is it night? No``), or the answer does
    not parse (``4: maybe``). No word is taken across a line break or from past another
    number."""
    marks: list[re.Match[str]] = []
    for m in _MARKER.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        opens_line = bool(m.group(2).strip()) and bool(
            _LINE_HEAD.fullmatch(text, line_start, m.start())
        )
        if opens_line or _OPENS.match(text, m.end()):
            marks.append(m)
    pairs: Pairs = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        pairs.append((int(m.group(1)), _after_number(text, m.end(), end)))
    return pairs


def _after_number(text: str, pos: int, end: int) -> Answer | None:
    """The answer after a question number at ``pos`` (its text ends at ``end``): the one
    that opens it, or else the word (or saying one cannot tell) that ends its line after a
    label or the echoed question, unless an answer word ends that label too (``no: yes``)."""
    if opens := _OPENS.match(text, pos, end):
        return _read_opening(opens, text, end)
    line = text[pos:end].split("\n", 1)[0].rstrip()
    last = _LAST_WORD.match(line)
    if last is None or _ALONE_WORD.search(line, 0, last.start(1)):
        return None
    return _WORDS.get(last.group(1), "UNSURE")


def parse_batch(text: str, n: int) -> list[Answer | None]:
    """Answers to questions 1..n, each matched to its question by its number, in any layout:
    ``N: WORD`` lines, one line (``1: NO, 2: YES``; commas, semicolons or spaces between),
    ``1)``, ``1.``, ``**1**:``, ``Q1:``, ``- 1: yes``, a JSON object (``{"1": "yes"}``) or
    array (``["YES", "NO"]``: by position, only if it has n words; ``[{"id": 1, "answer":
    "no"}]``), any case, with or without an explanation after the word. UNSURE where it
    says it cannot tell or hedges the word, in the word's place or in its explanation. None
    where a number is missing, given twice with different words, its line gives two answer
    words, or its answer does not parse; a reply numbered from 0 answers nothing. Never
    raises."""
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
