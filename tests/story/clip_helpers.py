"""CLIP's tokenizer files (``vocab.json``, ``merges.txt``) written from vsb's own vocabulary,
and an independent pure-Python CLIP BPE (OpenAI's algorithm) to check vsb's against."""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from pathlib import Path

from vsb.story.tokens import END, START, clip_vocab

#: CLIP's split pattern (the ``regex`` module: ``\p{L}``, ``\p{N}``)
_PATTERN = (
    r"""<\|startoftext\|>|<\|endoftext\|>|"""
    + r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
)


def write_clip_files(out: Path) -> tuple[Path, Path]:
    """``vocab.json`` and ``merges.txt`` as a Stable Diffusion pipeline's tokenizer folder has
    them (``merges.txt`` starts with its version line)."""
    vocab, merges = clip_vocab()
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    lines = ["#version: 0.2", *(f"{a} {b}" for a, b in merges)]
    (out / "merges.txt").write_text("\n".join(lines) + "\n", "utf-8")
    return out / "vocab.json", out / "merges.txt"


def clip_tokenizer_hf(folder: Path, max_length: int = 77) -> object:
    """transformers' ``CLIPTokenizer`` over the files ``write_clip_files`` wrote to ``folder``."""
    from transformers import CLIPTokenizer

    write_clip_files(folder)
    return CLIPTokenizer.from_pretrained(folder, model_max_length=max_length)


def _byte_chars() -> dict[int, str]:
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    bs += range(ord("®"), ord("ÿ") + 1)
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


class ReferenceBPE:
    """OpenAI CLIP's ``SimpleTokenizer`` algorithm in plain Python (the text cleaned as
    transformers' CLIP tokenizer does: NFC, whitespace collapsed, lowercase character by
    character; no ftfy)."""

    def __init__(self) -> None:
        import regex

        vocab, merges = clip_vocab()
        self.encoder = vocab
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.bytes = _byte_chars()
        self.pat = regex.compile(_PATTERN, regex.IGNORECASE)

    @cache  # noqa: B019 (the instance lives as long as the test module)
    def bpe(self, token: str) -> tuple[str, ...]:
        word = (*token[:-1], token[-1] + "</w>")
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            merged: list[str] = []
            i = 0
            while i < len(word):
                if i < len(word) - 1 and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = tuple(merged)
        return word

    def ids(self, text: str) -> list[int]:
        """Token ids with CLIP's start and end tokens, untruncated."""
        text = re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()
        # character by character, as the tokenizers library lowercases (str.lower() ends a
        # Greek word with ς, the Rust normaliser keeps σ)
        text = "".join(c.lower() for c in text)
        out = [self.encoder[START]]
        for piece in self.pat.findall(text):
            if piece in (START, END):
                out.append(self.encoder[piece])
                continue
            chars = "".join(self.bytes[b] for b in piece.encode("utf-8"))
            out += [self.encoder[t] for t in self.bpe(chars)]
        return [*out, self.encoder[END]]
