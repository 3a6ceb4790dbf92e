"""Blinding of the ``/evaluate`` page: opaque names for everything a rater's browser sees.

The page never holds a model name or a control answer. What it holds instead, all derived
from one key with HMAC-SHA256:

- a *target id* per (story, condition, model) strip (``t`` + 20 hex digits): what a likert
  item rates and what a comparison shows on each side, and what the export holds;
- an opaque *image name* per rated picture (``rate/<32 hex>.png``), holding the release's
  image changed imperceptibly (±1 on about 2 % of its colour values, drawn by a generator
  seeded from the key and the picture: other in every release) and re-encoded, with a keyed
  nonce written into it (a PNG text chunk, a JPEG comment): neither its bytes nor its decoded
  pixels are those of any file under a model's name, so no checksum, file-size-and-hash or
  pixel lookup links the two (``rater_bytes``);
- a *group* number per model (its rank under the keyed hash, not the leaderboard's order),
  which the page maps to letters shuffled per session, so one model keeps one letter within
  a session;
- *decks*: lists of comparisons drawn at build time, each with ``n_pairwise`` ordinary pairs
  and ``n_control`` control pairs (the perfect simulator against the memory-less one) mixed
  and unlabelled, so the page cannot tell a control from an ordinary comparison; a session
  takes one deck at random.

The key is keyed by the release's sealed oracle (the top-level ``oracle/`` folder, which the
site never publishes): ``HMAC-SHA256(b"vsb-rating-blinding-v1", root_hash + each oracle
file's path and bytes)``. So the mapping lives in the release, outside the site, and
``vsb human import --release R`` resolves the export's target ids by recomputing it from R.
What this does not hide: whoever holds the release (or rebuilds it: the procedural oracle
is reproducible) can recompute the key, and the site's story pages show the same pictures
under model names, so a rater who browses them can match pictures by eye. For a study,
give raters the evaluate page alone: ``vsb human serve SITE`` serves nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vsb.errors import ReleaseError
from vsb.human.models import CONTROL_BAD, CONTROL_GOOD

if TYPE_CHECKING:
    from vsb.site.data import SiteData

KEY_DOMAIN = b"vsb-rating-blinding-v1"
TARGET_PATTERN = r"^t[0-9a-f]{20}$"
N_DECKS = 32
ORACLE_DIR = "oracle"  # the release's sealed oracle (vsb.release.manifest.ORACLE_DIR)


@dataclass(frozen=True)
class PoolStory:
    """One story in the rated condition: its scene texts and each model's image strip."""

    story_id: str
    texts: tuple[str, ...]
    #: model -> release-relative image path of every scene, in order
    images: dict[str, tuple[str, ...]]


def rated_condition(data: SiteData) -> str:
    """The condition humans rate: the leaderboard's primary one when the release has it."""
    primary = data.scores.primary_condition
    return primary if primary in data.conditions else data.conditions[0]


def story_pool(data: SiteData, condition: str | None = None) -> list[PoolStory]:
    """Stories (suite order) with at least one model whose strip is complete."""
    cond = condition or rated_condition(data)
    pool = []
    for story in data.stories:
        strips: dict[str, tuple[str, ...]] = {}
        for model in data.models:
            paths = [data.images.get((model, cond, story.id, sc.index)) for sc in story.scenes]
            if all(paths):
                strips[model] = tuple(p for p in paths if p)
        if strips:
            texts = tuple(sc.text for sc in story.scenes)
            pool.append(PoolStory(story.id, texts, strips))
    return pool


def blinding_key(release_dir: str | Path, root_hash: str) -> bytes:
    """The release's blinding key (``ReleaseError`` when it has no sealed oracle)."""
    oracle = Path(release_dir) / ORACLE_DIR
    files = sorted(p for p in oracle.rglob("*") if p.is_file()) if oracle.is_dir() else []
    if not files:
        raise ReleaseError(
            "the release has no sealed oracle (oracle/): the rating page's blinding is keyed by it",
            file=oracle,
        )
    mac = hmac.new(KEY_DOMAIN, root_hash.encode(), hashlib.sha256)
    for p in files:
        data = p.read_bytes()
        rel = p.relative_to(oracle).as_posix().encode()
        mac.update(len(rel).to_bytes(8, "big") + rel + len(data).to_bytes(8, "big") + data)
    return mac.digest()


def _mac(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\x00".join(parts).encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Strip:
    """One model's complete image strip of one story, under its opaque names."""

    target: str
    story_id: str
    condition: str
    model: str
    #: release-relative image paths, scene order
    images: tuple[str, ...]


@dataclass(frozen=True)
class Blinding:
    """Every opaque name of one release's rated condition."""

    key: bytes
    condition: str
    strips: dict[str, Strip]
    #: model -> group number (0..n-1, keyed order)
    groups: dict[str, int]

    def target(self, story_id: str, model: str) -> str:
        """The target id of one (story, model) strip in the rated condition."""
        return "t" + _mac(self.key, "target", story_id, self.condition, model)[:20]

    def image_name(self, rel: str) -> str:
        """The site path of a rated picture (``rate/<hex>.png``)."""
        suffix = Path(rel).suffix.lower() if Path(rel).suffix.lower() in (".png", ".jpg") else ""
        return f"rate/{_mac(self.key, 'image', rel)[:32]}{suffix}"

    def rater_bytes(self, rel: str, data: bytes) -> bytes:
        """The bytes a rater gets for the release picture ``rel``: ``data`` perturbed
        imperceptibly by a generator seeded from the key and ``rel`` (``perturbed``), with a
        nonce keyed by ``rel`` written into it (other pixels, other bytes)."""
        rng = np.random.default_rng(int(_mac(self.key, "perturb", rel)[:16], 16))
        return with_nonce(perturbed(data, rng), _mac(self.key, "nonce", rel)[:32])

    def decks(self, pool: Iterable[PoolStory], n_pairwise: int, n_control: int) -> list[
        list[list[str]]
    ]:  # fmt: skip
        """``N_DECKS`` decks of comparisons (pairs of target ids, each pair sorted), drawn
        with a generator seeded from the key: ``n_pairwise`` ordinary pairs (never the
        control pair) and ``n_control`` control pairs each (fewer when the pool is small),
        shuffled together."""
        ordinary: list[list[str]] = []
        control: list[list[str]] = []
        for s in pool:
            models = sorted(s.images)
            for i, a in enumerate(models):
                for b in models[i + 1 :]:
                    pair = sorted((self.target(s.story_id, a), self.target(s.story_id, b)))
                    (control if {a, b} == {CONTROL_GOOD, CONTROL_BAD} else ordinary).append(pair)
        ordinary.sort()
        control.sort()
        rng = np.random.default_rng(int(_mac(self.key, "decks")[:16], 16))
        decks = []
        for _ in range(N_DECKS):
            deck = [ordinary[i] for i in rng.permutation(len(ordinary))[:n_pairwise]]
            if control:
                picks = rng.permutation(max(n_control, len(control)))[:n_control] % len(control)
                deck += [control[i] for i in picks]
            decks.append([deck[i] for i in rng.permutation(len(deck))])
        return decks


def make_blinding(key: bytes, condition: str, pool: Iterable[PoolStory]) -> Blinding:
    """The blinding of ``pool`` (stories of the rated condition with their complete strips)."""
    stories = list(pool)
    models = sorted({m for s in stories for m in s.images})
    ranked = sorted(models, key=lambda m: _mac(key, "group", m))
    b = Blinding(key, condition, {}, {m: i for i, m in enumerate(ranked)})
    for s in stories:
        for model, paths in s.images.items():
            t = b.target(s.story_id, model)
            b.strips[t] = Strip(t, s.story_id, condition, model, tuple(paths))
    return b


def release_blinding(release_dir: str | Path) -> Blinding:
    """The blinding of a release's rated condition, recomputed from the release (what
    ``vsb human import --release`` resolves target ids with)."""
    from vsb.site.data import load_site_data

    data = load_site_data(release_dir)
    cond = rated_condition(data)
    key = blinding_key(release_dir, data.manifest.root_hash)
    return make_blinding(key, cond, story_pool(data, cond))


_PNG = b"\x89PNG\r\n\x1a\n"
#: The share of a picture's colour values a rater's copy moves by one.
PERTURBED_SHARE = 0.02


def _perturbed_palette(im: Any, rng: np.random.Generator) -> bytes | None:
    """A palette picture (every render) kept as one: ``PERTURBED_SHARE`` of its pixels
    (at least one) point to a twin of their palette colour with one value moved by ±1,
    drawn from ``rng``; None when the palette has no room for the twins. One byte a pixel
    to encode, not three: 6 ms a render, not 20 (the site builds one per rated frame)."""
    import io

    from PIL import Image

    indices = np.array(im)
    palette = np.array(im.getpalette(), dtype=np.int16).reshape(-1, 3)
    used = np.flatnonzero(Image.fromarray(indices).histogram())  # its indices, sorted
    if len(palette) + len(used) > 256 or "transparency" in im.info:
        return None
    twins = palette[used].copy()
    twins[np.arange(len(used)), rng.integers(0, 3, size=len(used))] += rng.choice(
        np.array([-1, 1], dtype=np.int16), size=len(used)
    )
    twins = np.where(twins < 0, 1, np.where(twins > 255, 254, twins))
    twin_of = np.zeros(256, dtype=np.uint8)
    twin_of[used] = len(palette) + np.arange(len(used))
    flat = indices.reshape(-1)
    where = rng.choice(flat.size, size=max(1, round(flat.size * PERTURBED_SHARE)), replace=False)
    flat[where] = twin_of[flat[where]]
    out, image = io.BytesIO(), Image.fromarray(indices, "P")
    image.putpalette(np.concatenate([palette, twins]).astype(np.uint8).reshape(-1).tolist())
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()


def perturbed(data: bytes, rng: np.random.Generator) -> bytes:
    """The picture ``data`` changed imperceptibly by draws from ``rng``: a palette PNG (a
    render) has ``PERTURBED_SHARE`` of its pixels moved by ±1 in one colour value
    (``_perturbed_palette``), any other picture ``PERTURBED_SHARE`` of its colour values
    (at least one; alpha untouched); re-encoded in its own format (PNG losslessly, so every
    value is within 1 of the original; JPEG at quality 95); bytes that do not decode as a
    picture come back as they were."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as opened:
            fmt = "JPEG" if opened.format == "JPEG" else "PNG"
            opened.load()
            im: Image.Image = opened
            if fmt == "PNG" and im.mode == "P":
                quick = _perturbed_palette(im, rng)
                if quick is not None:
                    return quick
            if im.mode not in ("RGB", "RGBA", "L", "LA"):
                im = im.convert("RGBA" if "transparency" in im.info or "A" in im.mode else "RGB")
            pixels = np.array(im)
    except (UnidentifiedImageError, OSError):
        return data
    colour = pixels[..., : 3 if pixels.ndim == 3 and pixels.shape[2] == 4 else None]
    if pixels.ndim == 3 and pixels.shape[2] == 2:  # LA: the grey value alone
        colour = pixels[..., :1]
    values = colour.astype(np.int16)
    n = values.size
    k = min(n, max(1, round(n * PERTURBED_SHARE)))
    where = rng.choice(n, size=k, replace=False)
    step = rng.choice(np.array([-1, 1], dtype=np.int16), size=k)
    moved = values.reshape(-1)
    moved[where] += step
    moved[where] = np.where(moved[where] < 0, 1, np.where(moved[where] > 255, 254, moved[where]))
    colour[...] = values.astype(np.uint8)
    out = io.BytesIO()
    image = Image.fromarray(pixels)
    if fmt == "JPEG":
        image.convert("RGB").save(out, "JPEG", quality=95)
    else:
        image.save(out, "PNG", compress_level=1)
    return out.getvalue()


def with_nonce(data: bytes, nonce: str) -> bytes:
    """``data`` with ``nonce`` written into it where every decoder skips it: a ``tEXt``
    chunk after a PNG's header chunk, a comment segment after a JPEG's start marker, else
    appended (what follows the end of an image is ignored)."""
    text = b"vsb-rate\x00" + nonce.encode("ascii")
    if data.startswith(_PNG) and data[12:16] == b"IHDR":
        end = 8 + 12 + struct.unpack(">I", data[8:12])[0]  # after IHDR (length, type, data, CRC)
        chunk = struct.pack(">I", len(text)) + b"tEXt" + text
        chunk += struct.pack(">I", zlib.crc32(b"tEXt" + text) & 0xFFFFFFFF)
        return data[:end] + chunk + data[end:]
    if data.startswith(b"\xff\xd8"):
        return data[:2] + b"\xff\xfe" + struct.pack(">H", len(text) + 2) + text + data[2:]
    return data + text
