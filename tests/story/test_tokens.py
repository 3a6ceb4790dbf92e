"""``vsb.story.tokens``: CLIP's tokenizer counts a prompt exactly as a Stable Diffusion
pipeline's own tokenizer does, and ``clip_keep`` is what its 77-token encoder reads."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.story.clip_helpers import ReferenceBPE, clip_tokenizer_hf
from vsb.conditions import CONDITIONS
from vsb.generator.generate import generate_suite
from vsb.run.prompts import suite_prompts
from vsb.story.tokens import CLIP_CONTEXT, clip_count, clip_counts, clip_ids, clip_keep

ODD = [
    "",
    "   ",
    "a photo of a cat",
    "A PHOTO   of\ta\n\ncat.",
    "Noor's dog isn't here; they'll've gone, we'd say — or not?!",
    "Café naïve coöperate Ærøskøbing straße İstanbul ΣΊΣΥΦΟΣ",
    "e\u0301te\u0301 (decomposed) vs été (composed)",
    "日本語のテキストと中文，한국어 텍스트",
    "emoji 🐱‍👤🎨👩🏽‍🚀 and ZWJ, 🇫🇷 flags",
    "numbers 1234567890 3.14159 1,000,000 #42 @home 50% $9.99",
    "pneumonoultramicroscopicsilicovolcanoconiosis " * 3,
    "supercalifragilisticexpialidocious" * 8,
    "<|startoftext|> literal special tokens <|endoftext|>",
    "punctuation!!! ??? ... --- ((())) [[]] {{}} ''' \"\"\" ``` ~~~ ^^^ |||",
    "tabs\tand\u00a0no-break\u2003em spaces\u200bzero width",
    "State so far (JSON): " + '{"characters":[{"name":"Ari","skin":"medium-light"}]}' * 6,
]


@pytest.fixture(scope="module")
def prompts() -> list[str]:
    """Every prompt of the default suite under every registered condition."""
    names = list(CONDITIONS.names())
    return sorted({r.prompt for r in suite_prompts(generate_suite(0), names)})


@pytest.fixture(scope="module")
def hf(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return clip_tokenizer_hf(tmp_path_factory.mktemp("clip-tok"))


def test_known_ids() -> None:
    # CLIP's well-known encoding of this caption
    assert clip_ids("a photo of a cat") == [49406, 320, 1125, 539, 320, 2368, 49407]
    assert clip_count("") == 2
    assert CLIP_CONTEXT == 77


def test_equal_to_the_pipelines_tokenizer_and_to_clip_bpe(prompts: list[str], hf: Any) -> None:
    """Every prompt of the default suite (all conditions), and odd text: the ids equal those of
    transformers' CLIPTokenizer built from the same vocabulary files (what a diffusers pipeline
    loads) and those of OpenAI's BPE algorithm in plain Python."""
    assert len(prompts) > 1000
    ref = ReferenceBPE()
    texts = prompts + ODD
    counts = clip_counts(texts)
    for text, n in zip(texts, counts, strict=True):
        ids = clip_ids(text)
        assert ids == hf(text)["input_ids"], text
        assert ids == ref.ids(text), text
        assert clip_count(text) == n == len(ids), text
    assert max(counts) > CLIP_CONTEXT  # the suite has long prompts: counted untruncated


def test_keep_is_what_a_77_token_encoder_reads(prompts: list[str], hf: Any) -> None:
    """``clip_keep`` is the prefix whose tokens are exactly the first 75 content tokens of the
    truncated encoding; a prompt that fits is kept whole."""
    for text in [*prompts[::7], *ODD]:
        kept = clip_keep(text)
        truncated = hf(text, truncation=True, max_length=CLIP_CONTEXT)["input_ids"]
        if clip_count(text) <= CLIP_CONTEXT:
            assert kept == text
            continue
        assert text.startswith(kept) and len(kept) < len(text)
        assert len(truncated) == CLIP_CONTEXT
        # the kept characters are those the encoder's 75 tokens spell (spaces aside)
        spelt = hf.decode(truncated, skip_special_tokens=True)
        if text.isascii():
            assert "".join(spelt.split()) == "".join(kept.lower().split()), text
        # cut where the text splits anyway (a space, not inside a word or a run of
        # punctuation), the prefix's own tokens are the encoder's
        if text[len(kept) : len(kept) + 1].isspace():
            assert clip_ids(kept) == truncated, text


def test_keep_at_other_budgets() -> None:
    text = "one two three four five six seven"
    assert clip_keep(text, 9) == text  # 7 words + 2
    assert clip_keep(text, 8) == "one two three four five six"
    assert clip_keep(text, 3) == "one"
    assert clip_keep(text, 2) == ""
    assert clip_keep("a b, c", 5) == "a b,"
    with pytest.raises(ValueError, match="start and end"):
        clip_keep(text, 1)


def test_fast(prompts: list[str]) -> None:
    """Ten thousand distinct prompts are counted in about a second of CPU (1.4 s measured on
    the shared machine under load 6: 0.14 ms a prompt of ~490 characters)."""
    many = [f"{i} {p}" for i, p in enumerate((prompts * (10_000 // len(prompts) + 1))[:10_000])]
    clip_count("warm")
    t = time.process_time()
    counts = clip_counts(many)
    spent = time.process_time() - t
    assert len(counts) == 10_000
    assert spent < 4.0, spent


def test_the_vocabulary_ships_with_its_licence() -> None:
    from importlib import resources

    here = resources.files("vsb.story").joinpath("clip")
    assert "MIT" in here.joinpath("LICENSE").read_text("utf-8") or "Permission is hereby" in (
        here.joinpath("LICENSE").read_text("utf-8")
    )
    assert Path(str(here.joinpath("bpe_simple_vocab_16e6.txt.gz"))).stat().st_size > 1_000_000
