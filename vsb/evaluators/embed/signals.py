"""The embedding evaluators: CLIP text–image similarity and ranking, DINOv2 frame consistency.

Signals (one row per frame, higher = more coherent; docs/CONTRACTS.md):

- ``clip`` / ``clip_text``: cosine similarity between a frame's image and its scene's text;
- ``clip`` / ``clip_rr``: *text-side* reciprocal rank (vsb's own measure, not VinaBench's):
  the scene's own text ranked among candidate texts by CLIP similarity to the generated
  image. The candidates are the own text, every other scene of the same story (hard
  negatives: same characters, other events) and scenes of other stories of the suite, drawn
  without replacement up to ``pool_size`` candidates in all. The draw depends only on the
  suite, the seed and (story, scene), never on which models were evaluated, so every model
  is ranked against the same texts. A negative whose text equals the own text is dropped;
  a negative as similar as the own text ranks above it (ties are not in the frame's favour).
  Its mean is a text-retrieval MRR (``vsb.scores.signals``).
- ``clip`` / ``clip_image_rr``: *image-side* reciprocal rank, the ranking of VinaBench's
  CLIP-T-MRR (``evaluation/clip_text_rank.py`` in its repository): the generated image
  ranked among reference images by CLIP similarity to the scene's text. The reference images
  are the run's renders by ``reference_model`` (default ``procedural-oracle``, the perfect
  simulator: the suite's oracle renders of every scene, every condition, distinct by
  content); the candidates for one frame are the ``reference_pool`` (100) references nearest
  the scene's text, whichever story they render (the scene's own oracle render is usually
  among them). Ties go to the generated image; the value is 1 / (1 + number of candidates
  strictly more similar to the text). A run without the reference model has no
  ``clip_image_rr`` rows (``EmbedSummary.references`` is 0). Comparable with VinaBench's
  figure only with its model, CLIP ViT-L/14 (``--clip-model openai/clip-vit-large-patch14``);
  the default ``openai/clip-vit-base-patch32`` gives another scale.
- ``dino`` / ``dino_prev``: cosine similarity of DINOv2 CLS embeddings of a frame and the
  frame before it (from scene 2 on); ``dino`` / ``dino_first``: of a frame and scene 1 (drift
  over the story). A frame without an image (generation failed) has no rows.

Both read any image. They run as their own phase of ``vsb evaluate`` (never in the fork pool):
every distinct image (by sha256 of its bytes) and text is embedded once per model, in batches
of ``batch_size`` (the next batch is decoded and preprocessed while the model runs), and
cached in ``CACHE/embeddings.sqlite`` by (model identity, content sha256), so a rerun
computes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import click
import numpy as np

from vsb.errors import InputError
from vsb.evaluators.embed.cache import Embedder, EmbeddingCache, Vectors, hash_images
from vsb.evaluators.embed.models import (
    DEFAULT_MODELS,
    Kind,
    Weights,
    load_encoder,
    locate_weights,
    require_extra,
)
from vsb.evaluators.interface import (
    EvaluateOptions,
    EvaluatorBase,
    EvaluatorOutput,
    Frame,
    RunView,
    WorkItem,
    content_key,
)
from vsb.story.models import Requirement, Story

#: The embedding evaluators (``vsb evaluate`` runs them in their own phase).
EMBED_EVALUATORS: tuple[Kind, ...] = ("clip", "dino")
SIGNALS: dict[str, tuple[str, ...]] = {
    "clip": ("clip_text", "clip_rr", "clip_image_rr"),
    "dino": ("dino_prev", "dino_first"),
}
ProgressFn = Callable[[int, int], None]
#: ``(weights, device, dir_ident) -> encoder`` (see ``run_embeddings``)
EncoderLoader = Callable[[Weights, str, Callable[[Path], str]], Any]


@dataclass(frozen=True)
class EmbedOptions:
    """How the embedding evaluators run."""

    clip_model: str = DEFAULT_MODELS["clip"]
    dino_model: str = DEFAULT_MODELS["dino"]
    device: str = "cpu"
    batch_size: int = 32
    cache_dir: Path = Path(".vsb-cache")
    pool_size: int = 100  # candidate texts per CLIP ranking, the own text included
    seed: int = 0  # of the draw of other stories' scenes as negatives
    reference_model: str = "procedural-oracle"  # whose renders are clip_image_rr's references
    reference_pool: int = 100  # references nearest the text that a generated image meets

    def model(self, kind: Kind) -> str:
        """The model name or directory of an evaluator."""
        return self.clip_model if kind == "clip" else self.dino_model


@dataclass(frozen=True)
class EmbedSummary:
    """What one embedding evaluator did."""

    evaluator: str
    model: str  # the model's identity (hub:NAME@COMMIT or dir:SHA256)
    images: int  # distinct images
    computed: int  # image embeddings computed by this evaluation
    cached: int  # image embeddings read from the cache
    texts: int = 0  # distinct scene texts (CLIP)
    texts_computed: int = 0
    references: int = 0  # distinct reference images of clip_image_rr (CLIP)
    failed_checks: int = 0  # cached vectors that failed their check, computed again


class Sequence_(Protocol):
    """The frames of one (model, condition, story): ``images`` = ((scene, path or None), …)."""

    @property
    def model(self) -> str: ...
    @property
    def condition(self) -> str: ...
    @property
    def story_id(self) -> str: ...
    @property
    def images(self) -> tuple[tuple[int, str | None], ...]: ...


@dataclass(frozen=True)
class StorySequence:
    """A plain ``Sequence_``."""

    model: str
    condition: str
    story_id: str
    images: tuple[tuple[int, str | None], ...]


def check_embeddings(options: Mapping[str, EmbedOptions]) -> dict[str, Weights]:
    """Fail early (before other evaluators run) when the extra or the weights of an
    evaluator (name -> its options) are missing; imports neither torch nor transformers."""
    found: dict[str, Weights] = {}
    for name, opts in options.items():
        kind = _kind(name)
        require_extra(name)
        found[name] = locate_weights(kind, opts.model(kind))
        if opts.batch_size < 1:
            raise InputError("--batch-size must be at least 1")
        if opts.pool_size < 2:
            raise InputError("the CLIP ranking needs at least 2 candidate texts")
        if opts.reference_pool < 1:
            raise InputError("the CLIP image ranking needs at least 1 reference image")
    return found


def _kind(name: str) -> Kind:
    if name == "clip":
        return "clip"
    if name == "dino":
        return "dino"
    raise InputError(f"{name!r} is not an embedding evaluator ({', '.join(EMBED_EVALUATORS)})")


def _row(seq: Sequence_, scene: int, signal: str, value: float, evaluator: str) -> dict[str, Any]:
    return {
        "model": seq.model, "condition": seq.condition, "story_id": seq.story_id,
        "scene": scene, "signal": signal, "value": value, "evaluator": evaluator,
    }  # fmt: skip


def _story_key(story_id: str) -> int:
    return int.from_bytes(hashlib.sha256(story_id.encode("utf-8")).digest()[:8], "big")


def candidate_texts(
    stories: dict[str, Story], story_id: str, scene: int, pool_size: int, seed: int
) -> list[str]:
    """The texts a frame's own text is ranked among: the own text first, then the story's
    other scenes, then other stories' scenes drawn (seeded by ``seed``, the story and the
    scene) up to ``pool_size`` texts in all; texts equal to the own text are left out."""
    story = stories[story_id]
    own = story.scenes[scene - 1].text
    hard = list(dict.fromkeys(s.text for s in story.scenes if s.text != own))
    taken = {own, *hard}
    others = list(
        dict.fromkeys(
            s.text
            for sid in sorted(stories)
            if sid != story_id
            for s in stories[sid].scenes
            if s.text not in taken
        )
    )
    room = max(0, pool_size - 1 - len(hard))
    if len(others) > room:
        rng = np.random.default_rng([seed, _story_key(story_id), scene])
        picked = np.sort(rng.choice(len(others), size=room, replace=False))
        others = [others[i] for i in picked]
    return [own, *hard, *others]


def reciprocal_rank(image: Vectors, candidates: Vectors) -> float:
    """1 / rank of candidate 0 among ``candidates`` by cosine similarity to ``image``
    (unit vectors; a candidate as similar as candidate 0 ranks above it)."""
    sims = candidates.astype(np.float64) @ image.astype(np.float64)
    return 1.0 / (1 + int(np.count_nonzero(sims[1:] >= sims[0])))


def image_reciprocal_rank(text: Vectors, image: Vectors, references: Vectors, pool: int) -> float:
    """VinaBench's image-side reciprocal rank: ``image`` among the ``pool`` rows of
    ``references`` nearest ``text`` (unit vectors), by similarity to ``text``; a reference
    as similar as ``image`` ranks below it (ties go to the generated image)."""
    sims = references.astype(np.float64) @ text.astype(np.float64)
    if sims.size > pool:
        sims = np.partition(sims, sims.size - pool)[sims.size - pool :]
    own = float(np.dot(image.astype(np.float64), text.astype(np.float64)))
    return 1.0 / (1 + int(np.count_nonzero(sims > own)))


def _cos(a: Vectors, b: Vectors) -> float:
    return float(np.dot(a.astype(np.float64), b.astype(np.float64)))


def _clip_rows(
    stories: dict[str, Story],
    sequences: Sequence[Sequence_],
    shas: dict[str, str],
    emb: Embedder,
    options: EmbedOptions,
    ref_shas: dict[str, str],
) -> list[dict[str, Any]]:
    image_vecs = emb.images({**shas, **ref_shas})
    refs = sorted(set(ref_shas.values()))
    ref_mat = np.stack([image_vecs[r] for r in refs]) if refs else None
    frames = [(seq, k, p) for seq in sequences for k, p in seq.images if p is not None]
    n, seed = options.pool_size, options.seed
    pools = {
        (s.story_id, k): candidate_texts(stories, s.story_id, k, n, seed) for s, k, _ in frames
    }
    text_vecs = emb.texts([t for pool in pools.values() for t in pool])
    rows = []
    for seq, k, path in frames:
        img = image_vecs[shas[path]]
        cand = np.stack([text_vecs[t] for t in pools[(seq.story_id, k)]])
        rows.append(_row(seq, k, "clip_text", _cos(img, cand[0]), "clip"))
        rows.append(_row(seq, k, "clip_rr", reciprocal_rank(img, cand), "clip"))
        if ref_mat is not None:
            rr = image_reciprocal_rank(cand[0], img, ref_mat, options.reference_pool)
            rows.append(_row(seq, k, "clip_image_rr", rr, "clip"))
    return rows


def _dino_rows(
    sequences: Sequence[Sequence_], shas: dict[str, str], emb: Embedder
) -> list[dict[str, Any]]:
    vecs = emb.images(shas)
    rows = []
    for seq in sequences:
        by_scene = {k: vecs[shas[p]] for k, p in seq.images if p is not None}
        first = by_scene.get(1)
        for k in sorted(by_scene):
            if k == 1:
                continue
            if k - 1 in by_scene:
                rows.append(_row(seq, k, "dino_prev", _cos(by_scene[k], by_scene[k - 1]), "dino"))
            if first is not None:
                rows.append(_row(seq, k, "dino_first", _cos(by_scene[k], first), "dino"))
    return rows


def run_embeddings(
    stories: dict[str, Story],
    sequences: Sequence[Sequence_],
    options: Mapping[str, EmbedOptions],
    progress: ProgressFn | None = None,
    load: EncoderLoader | None = None,
    references: Sequence[Sequence_] = (),
) -> tuple[list[dict[str, Any]], list[EmbedSummary]]:
    """Signal rows of the embedding evaluators of ``options`` (name -> its options) over
    ``sequences`` (``stories``: the whole suite, the source of the CLIP negatives), and what
    each evaluator computed.
    ``references``: the reference model's frames (clip_image_rr's reference images; none:
    no clip_image_rr rows).

    ``load(weights, device, dir_ident)`` gives the encoder (default ``load_encoder``: the
    model in this process; ``vsb.evaluators.evaluate_ray`` gives one on a Ray worker). The
    cache stays here: only images and texts it lacks reach the encoder."""
    weights = check_embeddings(options)
    shas = hash_images(sequences)
    ref_shas = hash_images(references) if "clip" in options else {}
    total = len(set(shas.values())) * len(options) + len(
        set(ref_shas.values()) - set(shas.values())
    )
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    rows: list[dict[str, Any]] = []
    summaries: list[EmbedSummary] = []
    with EmbeddingCache(next(iter(options.values())).cache_dir) as cache:
        for name, opts in options.items():
            failed_before = cache.failed_checks
            encoder = (load or load_encoder)(weights[name], opts.device, cache.dir_digest)
            emb = Embedder(encoder, cache, opts.batch_size, advance)
            if name == "clip":
                rows += _clip_rows(stories, sequences, shas, emb, opts, ref_shas)
            else:
                rows += _dino_rows(sequences, shas, emb)
            summaries.append(
                EmbedSummary(
                    evaluator=name, model=encoder.ident, images=emb.cached + emb.computed,
                    computed=emb.computed, cached=emb.cached,
                    texts=emb.texts_seen,
                    texts_computed=emb.texts_computed,
                    references=len(set(ref_shas.values())) if name == "clip" else 0,
                    failed_checks=cache.failed_checks - failed_before,
                )
            )  # fmt: skip
    return rows, summaries


class _EmbedEvaluator(EvaluatorBase):
    """An embedding evaluator: in ``vsb evaluate`` one item, the whole run's pass through
    the model (cached per image and text by content), run in the ``models`` stage;
    ``evaluate_story`` embeds one story at a time (library use)."""

    stage = "models"
    Options = EmbedOptions
    options: EmbedOptions

    def check(self, options: EvaluateOptions) -> None:
        """The extra and the weights are there (before any work)."""
        check_embeddings({self.name: self.options})

    def plan(self, run: RunView, options: EvaluateOptions) -> list[WorkItem]:
        """One item: every frame through the model (payload: the reference frames)."""
        model = self.options.model(_kind(self.name))
        frames = [(s.model, s.condition, s.story_id, k, p) for s, k, p in run.frames]
        return [WorkItem(self.name, content_key(self.name, model, frames), 0.0, [])]

    def requirements_at(self, story: Story, scene: int) -> list[Requirement]:
        """None: it gives signals."""
        return []

    def evaluate_story(self, story: Story, frames: list[Frame]) -> EvaluatorOutput:
        """Signal rows of one sequence (negatives: the story's own other scenes only)."""
        groups: dict[tuple[str, str], list[tuple[int, str | None]]] = {}
        for f in frames:
            groups.setdefault((f.model, f.condition), []).append((f.scene, f.path))
        seqs = [StorySequence(m, c, story.id, tuple(sorted(v))) for (m, c), v in groups.items()]
        refs = [s for s in seqs if s.model == self.options.reference_model]
        rows, _ = run_embeddings(
            {story.id: story}, seqs, {self.name: self.options}, references=refs
        )
        return EvaluatorOutput(signals=rows)


def _model_option(name: Kind, more: str) -> click.Option:
    """``--NAME-model``: the weights the ``name`` evaluator loads (``more`` ends its help)."""
    return click.Option(
        [f"--{name}-model"], default=None, metavar="NAME_OR_DIR",
        help=f"{name} evaluator: a hub name in the local Hugging Face cache or a model "
        f"directory [default: {DEFAULT_MODELS[name]}]{more}",
    )  # fmt: skip


#: The command-line options the embedding evaluators take (fields of ``EmbedOptions``, and of
#: ``vsb.evaluators.vina.reference.ReferenceOptions``).
MODEL_OPTIONS = (
    click.Option(
        ["--device"], default="cpu", show_default=True, type=click.Choice(["cpu", "cuda", "mps"]),
        help="Where the clip, dino and vinabench_ref models run.",
    ),
    click.Option(
        ["--batch-size"], default=32, show_default=True, type=click.IntRange(min=1),
        help="Images (and texts) per forward pass of the clip, dino and vinabench_ref models.",
    ),
)  # fmt: skip


class ClipEvaluator(_EmbedEvaluator):
    """CLIP text–image similarity, the text-side reciprocal rank (``clip_rr``) and
    VinaBench's image-side one (``clip_image_rr``)."""

    name = "clip"
    needs = "CLIP weights (--clip-model); pip install 'vsb[embed]'"
    description = "CLIP text–image similarity and reciprocal rank among negative texts (any image)"
    cli_options = (
        _model_option(
            "clip", "; openai/clip-vit-large-patch14 (ViT-L/14, VinaBench's model) makes "
            "clip_image_rr comparable with its CLIP-T-MRR.",
        ),
        *MODEL_OPTIONS,
    )  # fmt: skip

    def plan(self, run: RunView, options: EvaluateOptions) -> list[WorkItem]:
        """One item whose payload is the reference model's frames (clip_image_rr)."""
        ref = self.options.reference_model
        refs = [s for s in run.all_sequences if s.model == ref]
        (item,) = super().plan(run, options)
        return [WorkItem(item.evaluator, item.key, 0.0, refs)]


class DinoEvaluator(_EmbedEvaluator):
    """DINOv2 CLS similarity to the previous frame and to scene 1."""

    name = "dino"
    needs = "DINOv2 weights (--dino-model); pip install 'vsb[embed]'"
    description = "DINOv2 CLS similarity to the previous frame and to scene 1 (any image)"
    cli_options = (
        _model_option("dino", "."),
        *MODEL_OPTIONS,
    )  # fmt: skip
