"""What a VinaBench character profile says in vsb's render vocabulary (no LLM: fixed patterns).

A profile is free prose ("a young woman with long black hair, wearing a red cardigan and
glasses"). ``read_profile`` picks out the phrases that name something vsb draws:

- hair: ``<colour> hair`` and ``short``/``long`` hair, a ``bun``, a ``ponytail``;
- skin: ``<tone> skin`` (very light, light, medium-light, medium-dark, dark, very dark) or
  another colour word before ``skin`` (free text: "fair skin");
- top: ``<colour> <shirt, t-shirt, top, sweater, jumper, jacket, coat, blouse, hoodie,
  cardigan, dress, vest, sweatshirt, uniform>``; trousers: ``<colour> <trousers, pants,
  jeans, shorts>``;
- accessory: a hat (cap, beret), glasses (spectacles, sunglasses), a scarf, a bag
  (backpack, handbag, purse, satchel): the first one named.

A value in the vocabulary is a ``vocab`` value (the state holds it, the rule checker can
check it); a colour outside it (a "beige" coat, "brown" hair) is ``free`` text, judged by
the VLM only. Each value keeps the ``phrase`` it came from (the source rule: a fact is
``prompt`` when its scene text contains that phrase). Two different hair colours, hair
styles or skin tones in one profile contradict each other (``ProfileConflict``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vsb.story import vocab

_COLOURS = (
    "very light|very dark|medium-light|medium-dark|dark brown|light brown|black|brown|blond|"
    "blonde|auburn|ginger|red|grey|gray|silver|white|golden|fair|pale|light|dark|olive|tan|"
    "tanned|beige|cream|khaki|navy|maroon|teal|blue|green|yellow|purple|orange|pink|"
    "denim|striped|checked|plaid"
)
_TOPS = (
    "t-shirt|shirt|top|sweater|jumper|jacket|coat|blouse|hoodie|cardigan|dress|vest|"
    "sweatshirt|uniform|suit|robe|gown|tunic|blazer|overalls"
)
_BOTTOMS = "trousers|pants|jeans|shorts"
_HAIR = re.compile(
    r"\b((?:(?:very\s+|medium-)?[a-z]+[\s,-]+){0,3})hair\b", re.IGNORECASE
)  # the words just before "hair"
_SKIN = re.compile(rf"\b({_COLOURS})[\s-]+(?:skin|skinned)\b", re.IGNORECASE)
_TOP = re.compile(rf"\b({_COLOURS})\s+(?:[a-z]+\s+)?({_TOPS})\b", re.IGNORECASE)
_BOTTOM = re.compile(rf"\b({_COLOURS})\s+(?:[a-z]+\s+)?({_BOTTOMS})\b", re.IGNORECASE)
_ACCESSORY = re.compile(
    r"\b(hat|cap|beret|glasses|spectacles|sunglasses|scarf|bag|backpack|handbag|purse|satchel)\b",
    re.IGNORECASE,
)
_ACCESSORY_OF = {
    "cap": "hat", "beret": "hat", "spectacles": "glasses", "sunglasses": "glasses",
    "backpack": "bag", "handbag": "bag", "purse": "bag", "satchel": "bag",
}  # fmt: skip
_HAIR_COLOUR_OF = {"blonde": "blond", "gray": "grey"}
_HAIR_COLOUR_WORDS = (
    "black", "dark brown", "light brown", "brown", "blond", "blonde", "auburn", "ginger",
    "red", "grey", "gray", "silver", "white", "golden",
)  # fmt: skip
_SKIN_OF = {
    "very light": "tone-1", "light": "tone-2", "medium-light": "tone-3",
    "medium-dark": "tone-4", "dark": "tone-5", "very dark": "tone-6",
}  # fmt: skip
_CLOTHING_COLOUR_OF = {"gray": "grey"}


class ProfileConflict(ValueError):
    """A profile that names two values of one attribute (two hair colours, …)."""


@dataclass(frozen=True)
class Fact:
    """One look attribute as the profile gives it: a vocabulary value or free text, and the
    phrase of the profile it came from."""

    value: str
    vocab: bool
    phrase: str


@dataclass
class Look:
    """The look attributes a profile gives (skin, hair_color, hair_style, top, trousers,
    accessory); absent attributes it does not give."""

    facts: dict[str, Fact] = field(default_factory=dict)

    def set(self, attr: str, fact: Fact) -> None:
        old = self.facts.get(attr)
        if old is not None and old.value != fact.value:
            raise ProfileConflict(
                f"{attr.replace('_', ' ')} {old.value!r} ({old.phrase!r}) and "
                f"{fact.value!r} ({fact.phrase!r})"
            )
        self.facts.setdefault(attr, fact)


def _hair(look: Look, text: str) -> None:
    for m in _HAIR.finditer(text):
        words = re.sub(r"[\s,]+", " ", m.group(1).lower()).strip()
        phrase = m.group(0).strip()
        colour = next((c for c in _HAIR_COLOUR_WORDS if re.search(rf"\b{c}\b", words)), None)
        if colour is not None:
            value = _HAIR_COLOUR_OF.get(colour, colour)
            look.set("hair_color", Fact(value, value in vocab.HAIR_COLORS, phrase))
        style = next((s for s in ("short", "long") if re.search(rf"\b{s}\b", words)), None)
        if style is not None:
            look.set("hair_style", Fact(style, True, phrase))
    for style in ("bun", "ponytail"):
        hit = re.search(rf"\b{style}s?\b", text, re.IGNORECASE)
        if hit is not None:
            look.set("hair_style", Fact(style, True, hit.group(0)))


def _clothing(look: Look, attr: str, pattern: re.Pattern[str], text: str) -> None:
    m = pattern.search(text)
    if m is None:
        return
    colour = m.group(1).lower()
    colour = _CLOTHING_COLOUR_OF.get(colour, colour)
    look.facts[attr] = Fact(colour, colour in vocab.CLOTHING_COLORS, m.group(0))


def read_profile(description: str) -> Look:
    """The look a profile gives, or ``ProfileConflict``."""
    look = Look()
    _hair(look, description)
    for m in _SKIN.finditer(description):
        word = m.group(1).lower()
        tone = _SKIN_OF.get(word)
        look.set("skin", Fact(tone or word, tone is not None, m.group(0)))
    _clothing(look, "top", _TOP, description)
    _clothing(look, "trousers", _BOTTOM, description)
    acc = _ACCESSORY.search(description)
    if acc is not None:
        word = acc.group(1).lower()
        look.facts["accessory"] = Fact(_ACCESSORY_OF.get(word, word), True, acc.group(0))
    return look
