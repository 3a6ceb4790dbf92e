"""A tiny random-weight Stable Diffusion pipeline built from configs (no download, no network).

UNet2DConditionModel with block_out_channels (8, 16), a two-block AutoencoderKL, a one-layer
CLIPTextModel and a word-level tokenizer over the given texts (built with the ``tokenizers``
library, as the embedding tests do), or with ``clip=True`` CLIP's own tokenizer (77 tokens,
from vsb's vocabulary) before a text encoder of 77 positions; written with
``save_pretrained``, exactly what ``--model diffusers:DIR`` reads. 32×32 images, a DDIM
scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.evaluators.embed_helpers import tiny_tokenizer

IMAGE_SIZE = 32


def save_tiny_sd(out: Path, texts: Iterable[str], seed: int = 0, *, clip: bool = False) -> Path:
    """A random-weight Stable Diffusion pipeline (text-to-image; img2img from its parts)."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline
    from diffusers import UNet2DConditionModel as UNet
    from transformers import CLIPTextConfig, CLIPTextModel

    from vsb.adapters.diffusers import quiet

    with quiet():
        torch.manual_seed(seed)
        unet = UNet(
            block_out_channels=(8, 16), layers_per_block=1, sample_size=IMAGE_SIZE // 2,
            in_channels=4, out_channels=4, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=16,
            norm_num_groups=4, attention_head_dim=4,
        )  # fmt: skip
        vae = AutoencoderKL(
            block_out_channels=(8, 16), in_channels=3, out_channels=3, latent_channels=4,
            down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
            norm_num_groups=4, sample_size=IMAGE_SIZE,
        )  # fmt: skip
        if clip:
            from tests.story.clip_helpers import clip_tokenizer_hf

            tokenizer: Any = clip_tokenizer_hf(out.parent / f"{out.name}-vocab")
            ids = {"bos_token_id": 49406, "eos_token_id": 49407, "pad_token_id": 49407}
            positions = 77
        else:
            tokenizer = tiny_tokenizer(texts, max_length=32)
            ids = {"bos_token_id": 1, "eos_token_id": 0, "pad_token_id": 0}
            positions = 32
        text_encoder = CLIPTextModel(
            CLIPTextConfig(
                vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=positions,
                **ids,
            )
        )  # fmt: skip
        scheduler = DDIMScheduler(
            beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
            clip_sample=False, set_alpha_to_one=False, steps_offset=1,
        )  # fmt: skip
        pipe = StableDiffusionPipeline(
            vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
            scheduler=scheduler, safety_checker=None, feature_extractor=None,
            requires_safety_checker=False,
        )  # fmt: skip
        pipe.save_pretrained(out)
    return out
