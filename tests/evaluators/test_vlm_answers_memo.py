"""``call_answers`` parses a reply text once (``execute._parsed`` keeps it): the answers are
always those ``parse_batch`` / ``parse_answer`` give, and a caller's list is its own."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vsb.evaluators.vlm.answers import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_SINGLE,
    parse_answer,
    parse_batch,
)
from vsb.evaluators.vlm.execute import _parsed, call_answers, unparsed
from vsb.evaluators.vlm.plan import JudgeCall
from vsb.evaluators.vlm.questions import Question
from vsb.evaluators.vlm.transports import JudgeReply

WORDS = st.sampled_from(["YES", "no", "Unsure", "maybe", "**yes**", "1", "2:", "\n", ", ", " "])
REPLIES = st.one_of(st.text(max_size=60), st.lists(WORDS, max_size=12).map("".join))


def _call(n: int, system: str = SYSTEM_PROMPT) -> JudgeCall:
    qs = tuple(Question(f"Is it {i}?", "YES") for i in range(n))
    prompt = "\n".join(f"{i}. {q.text}" for i, q in enumerate(qs, start=1))
    return JudgeCall("m", "c", "s", 1, "", "", (), qs, system, prompt, "key")


@given(text=REPLIES, n=st.integers(1, 6))
def test_the_kept_parse_is_the_parse(text: str, n: int) -> None:
    call, reply = _call(n), JudgeReply(text)
    for _ in range(2):  # parsed, then kept
        assert call_answers(call, reply) == parse_batch(text, n)
    assert unparsed(call, reply) == sum(a is None for a in parse_batch(text, n))
    single = _call(1, SYSTEM_PROMPT_SINGLE)
    for _ in range(2):
        assert call_answers(single, reply) == [parse_answer(text)]


def test_one_layout_is_parsed_once_and_each_caller_gets_its_own_list() -> None:
    _parsed.cache_clear()
    call, reply = _call(3), JudgeReply("1: YES\n2: NO\n3: UNSURE")
    first = call_answers(call, reply)
    first[0] = "garbage"  # a caller changing its list changes no one else's
    assert call_answers(call, reply) == ["YES", "NO", "UNSURE"]
    assert unparsed(call, reply) == 0
    info = _parsed.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    # the same words to another number of questions, or as a single answer, parse anew
    assert call_answers(_call(2), reply) == ["YES", "NO"]
    assert call_answers(_call(1, SYSTEM_PROMPT_SINGLE), JudgeReply("YES")) == ["YES"]
    assert _parsed.cache_info().misses == 3
