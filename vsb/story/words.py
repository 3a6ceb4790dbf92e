"""The one place a story's code becomes the words a model reads.

A story file keeps its codes (``tone-5``, ``hair: [black, bun]``, ``pose: cheering``): the
renderer draws from them and the rule checker compares them. Everything a model is sent (the
scene text, every condition's context, the structured memory's JSON values, paraphrases)
and every question the judge asks names a fact through the functions below, so the prompt
and the question cannot drift apart (``tests/story/test_words.py`` walks every fact of the
default suite). Each function passes a value it does not know through unchanged, so a fact an
imported story gives in its source's own words stays in those words.

``in_words`` turns a structured memory (``state_json``'s shape, codes) into what a model is
sent; ``in_codes`` reads such a memory back (an extractor's reading, a prompt's JSON) into
codes, so it can be compared with the story.
"""

from __future__ import annotations

import re
from typing import Any

#: The six skin tones, in the words the prompt and the judge both use.
SKIN: dict[str, str] = {
    "tone-1": "very light",
    "tone-2": "light",
    "tone-3": "medium-light",
    "tone-4": "medium-dark",
    "tone-5": "dark",
    "tone-6": "very dark",
}
SKIN_CODE: dict[str, str] = {w: c for c, w in SKIN.items()}

#: Poses as drawn (the renderer raises both arms to cheer).
POSE: dict[str, str] = {
    "standing": "standing",
    "sitting": "sitting",
    "waving": "waving",
    "cheering": "cheering with both arms raised",
}
POSE_CODE: dict[str, str] = {w: c for c, w in POSE.items()}

#: Accessories as a thing one has (``wears a red top, blue trousers and a hat``).
ACCESSORY: dict[str, str] = {
    "none": "no accessory",
    "hat": "a hat",
    "scarf": "a scarf",
    "glasses": "glasses",
    "bag": "a bag",
}
ACCESSORY_CODE: dict[str, str] = {w: c for c, w in ACCESSORY.items()}


def article(words: str) -> str:
    """``apple`` -> ``an apple``; ``red top`` -> ``a red top``."""
    return ("an " if words[:1].lower() in "aeiou" else "a ") + words


def skin_tone(code: str) -> str:
    """``tone-5`` -> ``dark`` (a value given in words stays as it is)."""
    return SKIN.get(code, code)


def skin(code: str) -> str:
    """``tone-5`` -> ``dark skin``."""
    return f"{skin_tone(code)} skin"


def hair(color: str, style: str) -> str:
    """``black``, ``short`` -> ``short black hair``; ``black``, ``bun`` -> ``black hair in a
    bun``; an empty style (a narrative that gives none) -> ``black hair``."""
    if style in ("bun", "ponytail"):
        return f"{color} hair in {article(style)}"
    return f"{style} {color} hair".strip()


def hair_value(words: str) -> tuple[str, str] | None:
    """``hair``'s words read back: ``short black hair`` -> (``black``, ``short``); None when
    ``words`` is not how ``hair`` writes a colour and style."""
    m = re.fullmatch(r"(.+) hair in an? (bun|ponytail)", words)
    if m:
        return m.group(1), m.group(2)
    m = re.fullmatch(r"(short|long) (.+) hair", words)
    return (m.group(2), m.group(1)) if m else None


def accessory(code: str) -> str:
    """``hat`` -> ``a hat``; ``glasses`` -> ``glasses``; ``none`` -> ``no accessory``."""
    return ACCESSORY.get(code, code)


def pose(code: str) -> str:
    """``cheering`` -> ``cheering with both arms raised``."""
    return POSE.get(code, code)


def count(kind_name: str, kind_plural: str, n: int) -> str:
    """``apple``, ``apples``, 3 -> ``three apples``."""
    numbers = ("no", "one", "two", "three", "four", "five", "six")
    word = numbers[n] if 0 <= n < len(numbers) else str(n)
    return f"{word} {kind_name if n == 1 else kind_plural}"


def _character_words(entry: dict[str, Any]) -> dict[str, Any]:
    out = dict(entry)
    if isinstance(out.get("skin"), str):
        out["skin"] = skin_tone(out["skin"])
    value = out.get("hair")
    if isinstance(value, list | tuple) and len(value) == 2:
        out["hair"] = hair(str(value[0]), str(value[1]))
    if isinstance(out.get("pose"), str):
        out["pose"] = pose(out["pose"])
    if isinstance(out.get("accessory"), str):
        out["accessory"] = accessory(out["accessory"])
    return out


def _character_codes(entry: dict[str, Any]) -> dict[str, Any]:
    out = dict(entry)
    if isinstance(out.get("skin"), str):
        value = out["skin"].removesuffix(" skin")
        out["skin"] = SKIN_CODE.get(value, out["skin"])
    if isinstance(out.get("hair"), str):
        read = hair_value(out["hair"])
        if read is not None:
            out["hair"] = list(read)
    if isinstance(out.get("pose"), str):
        out["pose"] = POSE_CODE.get(out["pose"], out["pose"])
    if isinstance(out.get("accessory"), str):
        out["accessory"] = ACCESSORY_CODE.get(out["accessory"], out["accessory"])
    return out


def _characters(memory: dict[str, Any], convert: Any) -> dict[str, Any]:
    out = dict(memory)
    chars = memory.get("characters")
    if isinstance(chars, dict):
        out["characters"] = {n: convert(c) if isinstance(c, dict) else c for n, c in chars.items()}
    return out


def in_words(memory: dict[str, Any]) -> dict[str, Any]:
    """A structured memory (``state_json``'s shape) as a model is sent it: each character's
    skin, hair, accessory and pose in words (a new dict; other values are words already)."""
    return _characters(memory, _character_words)


def in_codes(memory: dict[str, Any]) -> dict[str, Any]:
    """``in_words`` read back: the memory's words as the story's codes where they are one
    (a value that is no code's words stays as it is)."""
    return _characters(memory, _character_codes)
