"""Hedges and lines with two answers (issue #45 §2).

A judge that says it cannot tell ("Not sure", "cannot tell", "hard to say") answers UNSURE,
not something unreadable; an answer word qualified by a hedge ("Yes, but it is partly
hidden", "probably yes") is UNSURE, never the word; a line that gives two answers ("YES NO",
"NO: YES", "yes or no") is unreadable, never one of them. The table of docs/judge-interop.md
lists the same cases. Hypothesis puts hedged and two-word answers into the layouts of
``test_answer_layouts`` and checks that the other questions keep their answers.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vsb.evaluators.vlm.answers import Answer, parse_answer, parse_batch

#: What a judge writes when the picture does not let it tell (read UNSURE).
CANNOT_TELL = ("Not sure", "not sure.", "Cannot tell", "can't tell", "I can\u2019t tell",
               "I cannot tell.", "Unsure", "Hard to say", "hard to tell", "I don't know",
               "No idea", "unclear", "It is impossible to tell", "I'm not sure")  # fmt: skip
#: An answer word with a hedge: UNSURE.
HEDGED = ("Yes, but it is partly hidden", "YES (partly hidden)", "No, although it is small",
          "probably yes", "Maybe no", "I think yes", "yes, probably", "NO - hard to say",
          "Yes, I think", "no, it seems")  # fmt: skip
#: Two answers on one line: unreadable.
TWO_WORDS = ("YES NO", "NO: YES", "yes or no", "YES/NO", "no, yes", "Yes, the answer is no.",
             "YES. Actually no, it is blue", "YES UNSURE")  # fmt: skip


@pytest.mark.parametrize("said", CANNOT_TELL)
def test_cannot_tell_is_unsure(said: str) -> None:
    assert parse_batch(f"1: {said}\n2: NO", 2) == ["UNSURE", "NO"]
    assert parse_batch(f"1: YES, 2: {said}, 3: NO", 3) == ["YES", "UNSURE", "NO"]
    assert parse_batch(f'{{"1": "{said}", "2": "no"}}', 2) == ["UNSURE", "NO"]
    assert parse_batch(f"1. Is it night? {said}\n2: YES", 2) == ["UNSURE", "YES"]
    assert parse_answer(said) == "UNSURE"


@pytest.mark.parametrize("said", HEDGED)
def test_a_hedged_word_is_unsure(said: str) -> None:
    assert parse_batch(f"1: {said}\n2: NO", 2) == ["UNSURE", "NO"]
    assert parse_batch(f"1: NO, 2: {said}", 2) == ["NO", "UNSURE"]
    assert parse_batch(f'{{"Q1": "{said}", "Q2": "yes"}}', 2) == ["UNSURE", "YES"]
    assert parse_answer(said) == "UNSURE"


@pytest.mark.parametrize("said", TWO_WORDS)
def test_two_answers_on_a_line_are_unreadable(said: str) -> None:
    assert parse_batch(f"1: {said}\n2: NO", 2) == [None, "NO"]
    assert parse_batch(f"1: NO; 2: {said}; 3: YES", 3) == ["NO", None, "YES"]
    assert parse_batch(f'{{"1": "{said}", "2": "yes"}}', 2) == [None, "YES"]
    assert parse_answer(said) is None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("1: YES, the top is red\n2: NO - nobody holds it", ["YES", "NO"]),
        ("1: YES, there is no hat\n2: NO, the cup is not red", ["YES", "NO"]),
        ("1: YES because the top is red\n2: no, no cup", ["YES", "NO"]),
        ("1: YES\n2: maybe\n3: NO", ["YES", None, "NO"]),  # a bare maybe answers nothing
        ("1: YES 2: maybe 3: NO", ["YES", None, "NO"]),  # not question 1's hedge
        ("1. Is the cup partly hidden? YES\n2. Is it night? no", ["YES", "NO"]),  # echoed
        ("1: YES, 2 cups, maybe more\n2: NO", ["UNSURE", "NO"]),
    ],
)  # fmt: skip
def test_explanations_without_a_hedge_keep_the_word(reply: str, expected: list[str]) -> None:
    assert parse_batch(reply, len(expected)) == expected


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("I'm not sure, the cup is small.\nUNSURE", "UNSURE"),  # said twice: one answer
        ("Not sure.\nYES", None),  # two answers
        ("1: not sure", "UNSURE"),
        ("2: not sure", None),  # the answer to a question that was not asked
        ("Yes, the cup is red", None),  # one question: the word alone, as before
    ],
)  # fmt: skip
def test_one_question_replies(reply: str, answer: str | None) -> None:
    assert parse_answer(reply) == answer


# --- Hypothesis: a hedge or a second word touches its own question only ----------------------

WORDS: tuple[Answer, ...] = ("YES", "NO", "UNSURE")
MARKERS = ("{i}: ", "{i}) ", "{i}. ", "**{i}**: ", "Q{i}: ", "- {i}: ", "Question {i}: ")
JOINERS = ("\n", ", ", "; ", "\n\n")
#: What a question gets: a plain word (read as it is), a hedge (UNSURE), two words (None).
SAID = st.one_of(
    st.sampled_from(WORDS).map(lambda w: (w, w)),
    st.sampled_from(CANNOT_TELL + HEDGED).map(lambda s: (s, "UNSURE")),
    st.sampled_from(TWO_WORDS).map(lambda s: (s, None)),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(SAID, min_size=1, max_size=16),
    st.sampled_from(MARKERS),
    st.sampled_from(JOINERS),
)
def test_each_answer_is_read_alone(
    said: list[tuple[str, Answer | None]], marker: str, joiner: str
) -> None:
    text = joiner.join(marker.format(i=i) + s for i, (s, _) in enumerate(said, start=1))
    assert parse_batch(text, len(said)) == [want for _, want in said], text
