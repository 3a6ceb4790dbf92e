"""FID and CLIP-I with their real loading code on tiny random-weight models: torch-fidelity's
FID Inception (random weights in a state-dict file, read as the published file is read) and a
random CLIP (``save_pretrained``); preprocessing, caching, the weights' lookup and errors."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embed_helpers import save_tiny_clip
from PIL import Image
from reference_helpers import from_samples, save_random_inception

from vsb.errors import InputError
from vsb.evaluators.embed import inception as inc
from vsb.evaluators.embed.cache import EmbeddingCache
from vsb.evaluators.embed.inception import (
    LAYERS,
    fid_pixels,
    load_inception,
    locate_inception,
)
from vsb.evaluators.embed.reference import (
    CLIP_I_MODEL,
    clip_i,
    image_features,
    load_clip_i,
    reference_scores,
)


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_random_inception(tmp_path_factory.mktemp("inception") / "random-inception.pth")


@pytest.fixture(scope="module")
def encoder(weights: Path) -> Any:
    return load_inception(weights)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Three generated and three gold images (their own sizes, as models and datasets give)."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    out: dict[str, list[str]] = {"gen": [], "gold": []}
    for side, sizes in (("gen", [(96, 64), (64, 80), (70, 70)]), ("gold", [(120, 90)] * 3)):
        for i, (w, h) in enumerate(sizes):
            base = rng.integers(0, 256, size=3)
            noise = rng.integers(-60, 60, size=(h, w, 3))
            px = np.clip(base + noise, 0, 255).astype(np.uint8)
            path = root / f"{side}_{i}.png"
            Image.fromarray(px).save(path)
            out[side].append(str(path))
    return out


def test_torchvision_is_never_imported(encoder: Any) -> None:
    assert encoder.net.__class__.__name__ == "FeatureExtractorInceptionV3"
    assert "torchvision" not in sys.modules


def test_the_layers_are_the_librarys_own_forward(encoder: Any) -> None:
    """On a 299 × 299 image torch-fidelity's forward does no resizing: its pool3 output and
    vsb's walk through ``LAYERS`` (after the same ``(x - 128) / 128``) are one computation."""
    import torch

    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.integers(0, 256, size=(1, 3, 299, 299), dtype=np.uint8))
    with torch.inference_mode():
        theirs = encoder.net(x)[0]
    ours = encoder.image_forward((x.float() - 128) / 128)
    assert ours.shape == (1, 2048)
    assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-5)
    assert float(theirs.std()) > 0  # the random network passes a signal


def test_pixels_are_resized_and_centre_cropped_as_torchvision_does() -> None:
    rng = np.random.default_rng(2)
    im = Image.fromarray(rng.integers(0, 256, size=(80, 100, 3), dtype=np.uint8))
    # shorter side 80 -> 64, longer 100 -> int(64 * 100 / 80) = 80, crop left round(8) = 8
    want = np.asarray(im.resize((80, 64), Image.Resampling.BICUBIC))[:, 8:72]
    assert np.array_equal(fid_pixels(im), want)
    # already 64 high: no resampling; (89 - 64) / 2 = 12.5 rounds to 12, as Python rounds
    wide = Image.fromarray(rng.integers(0, 256, size=(64, 89, 3), dtype=np.uint8))
    assert np.array_equal(fid_pixels(wide), np.asarray(wide)[:, 12:76])
    tall = Image.fromarray(rng.integers(0, 256, size=(90, 45, 3), dtype=np.uint8))
    assert fid_pixels(tall, 32).shape == (32, 32, 3)
    assert fid_pixels(tall, None).shape == (90, 45, 3)


def test_inputs_are_299_pixels_in_minus_one_to_one(encoder: Any) -> None:
    px = [np.full((64, 64, 3), 255, np.uint8), np.zeros((64, 64, 3), np.uint8)]
    x = encoder.to_inputs(px)
    assert tuple(x.shape) == (2, 3, 299, 299)
    assert float(x[0].min()) == pytest.approx(1.0) and float(x[1].max()) == pytest.approx(-1.0)


def test_features_are_cached_by_content_in_order(
    weights: Path, encoder: Any, images: dict[str, list[str]], tmp_path: Path
) -> None:
    paths = images["gen"][:2]
    with EmbeddingCache(tmp_path) as cache:
        feats = image_features([paths[0], paths[1], paths[0]], encoder, cache)
        assert feats.shape == (3, 2048) and np.array_equal(feats[0], feats[2])
        assert not np.allclose(feats[0], feats[1])
        assert cache.count(encoder.ident) == 2

        class Refuses:
            ident = encoder.ident

            def image_arrays(self, _images: Any) -> Any:
                raise AssertionError("a cached image was computed again")

        again = image_features(list(reversed(paths)), Refuses(), cache)
        assert np.array_equal(again, feats[[1, 0]])
    # the weights' bytes and the preprocessing name the features
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert encoder.ident == f"fid-inception:sha256:{digest}:size=64:resize=pytorch-fid"


def test_tensorflow_resize_is_torch_fidelitys_own_path(weights: Path) -> None:
    import torch

    tf = load_inception(weights, resize="tensorflow", image_size=None)
    rng = np.random.default_rng(3)
    px = rng.integers(0, 256, size=(40, 50, 3), dtype=np.uint8)
    with torch.inference_mode():
        theirs = tf.net(torch.from_numpy(px).permute(2, 0, 1)[None])[0].numpy()
    assert np.allclose(tf.images([Image.fromarray(px)]), theirs, atol=1e-6)
    assert tf.ident.endswith(":size=full:resize=tensorflow")


def test_weights_are_found_in_torchs_hub_cache_never_downloaded(
    weights: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(InputError) as err:
        locate_inception()
    msg = str(err.value)
    assert "weights-inception-2015-12-05-6726825d.pth" in msg and "pt_inception" in msg
    assert str(tmp_path / "hub" / "checkpoints") in msg
    checkpoints = tmp_path / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    target = checkpoints / "pt_inception-2015-12-05-6726825d.pth"
    target.write_bytes(weights.read_bytes())
    with pytest.raises(InputError, match="does not begin 6726825d"):
        locate_inception()  # random weights under the published name: a damaged download
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    monkeypatch.setattr(inc, "SHA256_PREFIX", digest[:8])
    assert locate_inception() == target
    assert locate_inception(weights) == weights.resolve()
    with pytest.raises(InputError, match="no such file"):
        locate_inception(tmp_path / "absent.pth")


def test_a_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = inc.importlib.util.find_spec
    monkeypatch.setattr(
        inc.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch_fidelity" else real(name, *a),
    )
    with pytest.raises(
        InputError, match=r"torch_fidelity is not installed\): pip install 'vsb\[fid\]'"
    ):
        inc.require_extra()


def test_a_file_that_is_not_the_network_is_one_error(tmp_path: Path) -> None:
    import torch

    bad = tmp_path / "other.pth"
    torch.save({"conv.weight": torch.zeros(1)}, bad)
    with pytest.raises(InputError, match="cannot load the Inception weights"):
        load_inception(bad)
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="cannot load the Inception weights"):
        load_inception(bad)


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_clip(tmp_path_factory.mktemp("clip") / "tiny-clip", ["a picture"])


def test_clip_i_is_the_cosine_of_clips_projected_image_embeddings(
    clip_dir: Path, images: dict[str, list[str]], tmp_path: Path
) -> None:
    """Against transformers called directly, as VinaBench calls it."""
    import torch
    from transformers import CLIPModel, CLIPProcessor

    gen, gold = images["gen"], images["gold"]
    with EmbeddingCache(tmp_path) as cache:
        enc = load_clip_i(cache, str(clip_dir))
        got = clip_i(gen, gold, enc, cache)
        assert clip_i(gold[:1], gold[:1], enc, cache) == pytest.approx([1.0])
    model = CLIPModel.from_pretrained(clip_dir).eval()
    proc = CLIPProcessor.from_pretrained(clip_dir)

    def embed(paths: list[str]) -> np.ndarray:
        ims = [Image.open(p).convert("RGB") for p in paths]
        with torch.no_grad():
            out = model.get_image_features(**proc(images=ims, return_tensors="pt"))
        v = (out if isinstance(out, torch.Tensor) else out.pooler_output).numpy()
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    want = (embed(gen) * embed(gold)).sum(axis=1)
    assert got == pytest.approx(want, abs=1e-5)
    with pytest.raises(ValueError):
        clip_i(gen, gold[:2], enc, cache)


def test_reference_scores_of_pairs(
    encoder: Any, clip_dir: Path, images: dict[str, list[str]], tmp_path: Path
) -> None:
    """One portion's FID (the real 2048 dimensions: sqrtm of a singular 2048 × 2048 product,
    against the exact singular-value computation) and CLIP-I."""
    pairs = list(zip(images["gen"], images["gold"], strict=True))
    with EmbeddingCache(tmp_path) as cache:
        clip = load_clip_i(cache, str(clip_dir))
        scores = reference_scores(pairs, encoder, clip, cache)
        gen = image_features(images["gen"], encoder, cache)
        gold = image_features(images["gold"], encoder, cache)
        one = reference_scores(pairs[:1], encoder, clip, cache)
    assert scores.pairs == 3 and len(scores.cosines) == 3
    assert scores.clip_i == pytest.approx(np.mean(scores.cosines))
    exact = from_samples(gold.astype(np.float64), gen.astype(np.float64))
    assert scores.fid > 0 and abs(scores.fid - exact) < 1e-6 * scores.fid
    assert scores.inception == encoder.ident and scores.clip == clip.ident
    assert np.isnan(one.fid) and one.clip_i == pytest.approx(scores.cosines[0])


def test_the_clip_i_model_is_vinabenchs_and_never_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CLIP_I_MODEL == "openai/clip-vit-large-patch14"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with EmbeddingCache(tmp_path) as cache, pytest.raises(InputError) as err:
        load_clip_i(cache)
    assert "hf download openai/clip-vit-large-patch14" in str(err.value)
    assert LAYERS[-1] == "AvgPool"
