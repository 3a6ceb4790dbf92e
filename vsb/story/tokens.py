"""CLIP's tokenizer: how many tokens a prompt is to a CLIP text encoder, and what it keeps.

The text encoders of Stable Diffusion 1.5 and SDXL read CLIP's byte-level BPE with a
context of 77 tokens, start and end tokens included: whatever lies past the first 75
content tokens never reaches the model. ``clip_count`` counts a text exactly as such an
encoder's tokenizer does (untruncated, start and end included); ``clip_keep`` gives the
prefix of a text that the encoder actually encodes.

The vocabulary is CLIP's own (``clip/bpe_simple_vocab_16e6.txt.gz``, from the
open_clip_torch wheel, MIT; its licence beside it). The tokenizer is built with the
``tokenizers`` library the way transformers' CLIP converter builds ``CLIPTokenizerFast``:
NFC, runs of whitespace to one space and lowercase; CLIP's split pattern, then the byte-level
pre-tokenizer; BPE with the ``</w>`` end-of-word suffix. Built once per process (about 0.3 s).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: The context of CLIP's text encoders (Stable Diffusion 1.5, SDXL), start and end included.
CLIP_CONTEXT = 77
#: CLIP's start and end tokens (ids 49406 and 49407).
START, END = "<|startoftext|>", "<|endoftext|>"
#: CLIP's split pattern (contractions, letters, single digits, other non-space runs).
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
_VOCAB_FILE = "clip/bpe_simple_vocab_16e6.txt.gz"
#: merges in CLIP's vocabulary: 49152 tokens less the 256 bytes and the two special tokens
_MERGES = 49152 - 256 - 2


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map of the 256 bytes to printable characters (CLIP's too)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    out = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in out:
            out[b] = chr(256 + extra)
            extra += 1
    return out  # in this order: the printable bytes first (token ids follow it)


@lru_cache(maxsize=1)
def clip_vocab() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """CLIP's vocabulary (token → id, 49408 of them) and its merges, in rank order."""
    raw = resources.files("vsb.story").joinpath(_VOCAB_FILE).read_bytes()
    lines = gzip.decompress(raw).decode("utf-8").split("\n")[1 : _MERGES + 1]
    merges = [(a, b) for a, b in (line.split() for line in lines)]
    tokens = list(_bytes_to_unicode().values())
    tokens += [t + "</w>" for t in tokens]
    tokens += ["".join(m) for m in merges]
    tokens += [START, END]
    return {t: i for i, t in enumerate(tokens)}, merges


@lru_cache(maxsize=1)
def clip_tokenizer() -> Tokenizer:
    """CLIP's tokenizer (no start/end tokens added: ``clip_count`` adds the two)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE

    vocab, merges = clip_vocab()
    tok = Tokenizer(
        BPE(
            vocab=vocab,
            merges=merges,
            continuing_subword_prefix="",
            end_of_word_suffix="</w>",
            fuse_unk=False,
            unk_token=END,
        )
    )
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Lowercase()]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PATTERN), behavior="removed", invert=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    # written in a text, the two special tokens are read as themselves (as a pipeline's is)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in (START, END)])
    return tok


def clip_ids(text: str) -> list[int]:
    """``text``'s CLIP token ids, untruncated, with the start and end tokens."""
    vocab, _ = clip_vocab()
    ids = clip_tokenizer().encode(text, add_special_tokens=False).ids
    return [vocab[START], *ids, vocab[END]]


@lru_cache(maxsize=16384)
def clip_count(text: str) -> int:
    """CLIP tokens in ``text``, start and end tokens included (untruncated)."""
    return len(clip_tokenizer().encode(text, add_special_tokens=False).ids) + 2


def clip_counts(texts: Iterable[str]) -> list[int]:
    """``clip_count`` of each text. One at a time, not the library's batch (its thread pool,
    once used, makes a forked worker print a warning); ~0.14 ms of CPU per 500-character
    prompt, and a prompt seen before (scene 1 under every condition) is counted once."""
    return [clip_count(t) for t in texts]


def clip_keep(text: str, budget: int = CLIP_CONTEXT) -> str:
    """The prefix of ``text`` a CLIP encoder of context ``budget`` encodes: the characters of
    its first ``budget - 2`` content tokens, cut at the end of the last one (a long word may
    be cut inside, where its tokens split); the whole text when it fits."""
    if budget < 2:
        raise ValueError(
            f"a CLIP context holds the start and end tokens: budget >= 2, not {budget}"
        )
    offsets = clip_tokenizer().encode(text, add_special_tokens=False).offsets
    room = budget - 2
    if len(offsets) <= room:
        return text
    return text[: offsets[room - 1][1]] if room else ""
