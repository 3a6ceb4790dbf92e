"""Tiny random-weight CLIP and DINOv2 models built from configs (no download, no network).

The CLIP tokenizer is a word-level vocabulary over the words of the given texts, built with
the ``tokenizers`` library and wrapped as a ``PreTrainedTokenizerFast``; both models and their
processors are written with ``save_pretrained``, exactly what ``--clip-model DIR`` reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

IMAGE_SIZE = 32
CLIP_DIM = 16
DINO_DIM = 24
_MEAN = [0.48145466, 0.4578275, 0.40821073]
_STD = [0.26862954, 0.26130258, 0.27577711]


def tiny_tokenizer(texts: Iterable[str], max_length: int = 64) -> object:
    """A word-level tokenizer over ``texts`` (lower-cased, punctuation split off)."""
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    # CLIPProcessor takes any fast tokenizer in transformers 5, only a CLIPTokenizerFast in 4
    # (whose pre-tokenizer must be a Sequence).
    if int(transformers.__version__.split(".")[0]) < 5:
        from transformers import CLIPTokenizerFast as Fast
    else:
        from transformers import PreTrainedTokenizerFast as Fast

    # id 0 = end of text (also padding: CLIP pools at the first end-of-text token)
    vocab = {"<|endoftext|>": 0, "<|startoftext|>": 1, "[UNK]": 2}
    split = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    for text in texts:
        for word, _ in split.pre_tokenize_str(text.lower()):
            vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = split
    tok.post_processor = processors.TemplateProcessing(
        single="<|startoftext|> $A <|endoftext|>",
        special_tokens=[("<|startoftext|>", 1), ("<|endoftext|>", 0)],
    )
    return Fast(
        tokenizer_object=tok, bos_token="<|startoftext|>", eos_token="<|endoftext|>",
        unk_token="[UNK]", pad_token="<|endoftext|>", model_max_length=max_length,
    )  # fmt: skip


def save_tiny_clip(out: Path, texts: Iterable[str], seed: int = 0) -> Path:
    """A random-weight CLIP (projection dim ``CLIP_DIM``) with its processor, saved to ``out``."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    try:
        from transformers import CLIPImageProcessorPil as ImageProcessor
    except ImportError:  # transformers 4
        from transformers import CLIPImageProcessor as ImageProcessor

    tokenizer = tiny_tokenizer(texts)
    vocab_size = len(tokenizer)  # type: ignore[arg-type]
    cfg = CLIPConfig(
        text_config=dict(
            vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=0,
            pad_token_id=0,
        ),
        vision_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            image_size=IMAGE_SIZE, patch_size=8,
        ),
        projection_dim=CLIP_DIM,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = CLIPModel(cfg)
    images = ImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        image_mean=_MEAN, image_std=_STD,
    )  # fmt: skip
    model.save_pretrained(out)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(out)
    return out


def save_tiny_dino(out: Path, seed: int = 0) -> Path:
    """A random-weight DINOv2 (hidden size ``DINO_DIM``) with its image processor."""
    import torch
    from transformers import Dinov2Config, Dinov2Model

    try:
        from transformers import BitImageProcessorPil as ImageProcessor
    except ImportError:  # transformers 4
        from transformers import BitImageProcessor as ImageProcessor

    cfg = Dinov2Config(
        hidden_size=DINO_DIM, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
        image_size=IMAGE_SIZE, patch_size=8,
    )  # fmt: skip
    torch.manual_seed(seed)
    Dinov2Model(cfg).save_pretrained(out)
    ImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_center_crop=True, image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225],
    ).save_pretrained(out)  # fmt: skip
    return out
