"""VinaBench's reference metrics, FID and CLIP-I against its gold images (evaluator
``vinabench_ref``): ``vsb.evaluators.embed.reference`` on the pairs VinaBench's
``MM-Interleaved/calculate_fid_clipi.py`` makes.

Pairs: one list per (model, condition, VinaBench portion); pair *i* is a frame of the model
and the gold image of the same sample and scene (the ``gold_model``'s frame, ``vinabench:gold``,
under the same condition, else under any: its images are the same under every condition).
A frame with no picture (its generation failed, or it cannot be read) or no gold image makes
no pair (VinaBench's ``Image.open`` would stop). The gold model is paired with itself, as a
check: CLIP-I 1, FID 0 up to rounding.

Rows (signals, evaluator ``vinabench_ref``):

- ``vinabench.<portion>.clip_i`` at each paired frame: the cosine of its CLIP ViT-L/14 image
  embedding with its gold image's; CLIP-I is their mean over the portion's pairs, so the
  table (``vsb.scores.peer.vinabench``) averages them as it averages the VQA metrics, with
  story-bootstrap intervals;
- ``vinabench.<portion>.fid``, one *set row* per (model, condition, portion) of two pairs or
  more: ``story_id`` empty and scene 0, the FID of all its pairs (gold features first). FID
  is a statistic of the whole set, not a mean of per-frame values; the table gives it no
  interval (docs/vinabench.md says why).

The Inception features and CLIP vectors are cached in ``CACHE/embeddings.sqlite`` by (model
identity, image sha256), so a rerun computes nothing. ``check`` fails in one line, before any
work, when the ``fid`` or ``embed`` extra or either model's weights are missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vsb.errors import InputError
from vsb.evaluators.interface import (
    EvaluateOptions,
    EvaluatorBase,
    FrameSequence,
    RunView,
    WorkItem,
    content_key,
)
from vsb.evaluators.vina.questions import signal_name
from vsb.fsio import sha256_file
from vsb.story.models import Requirement, Story
from vsb.story.vinabench import VinaSample, read_samples

if TYPE_CHECKING:
    from vsb.evaluators.embed.signals import EmbedSummary

EVALUATOR = "vinabench_ref"
GOLD = "vinabench:gold"
#: VinaBench's CLIP-I model (``calculate_clip_sim_i2i``'s default).
CLIP_I = "openai/clip-vit-large-patch14"
#: The reference metrics' columns of VinaBench's table.
REFERENCE_METRICS = ("fid", "clip_i")


def samples_given(
    files: Sequence[Path], handed: Mapping[str, VinaSample] | None
) -> dict[str, VinaSample]:
    """Story id -> annotations: those of VinaBench's ``files``, then those ``handed`` in."""
    out = dict(read_samples(list(files))) if files else {}
    out.update(handed or {})
    return out


@dataclass(frozen=True)
class ReferenceOptions:
    """Which models, where they run, and the stories' VinaBench annotations."""

    #: the FID Inception's weight file (None: the published file in torch's hub cache)
    fid_weights: Path | None = None
    #: CLIP-I's model: a hub name in the local Hugging Face cache or a model directory
    clip_i_model: str = CLIP_I
    device: str = "cpu"
    batch_size: int = 32
    cache_dir: Path = Path(".vsb-cache")
    #: VinaBench annotation files the run's stories come from (their portions)
    vinabench_file: tuple[Path, ...] = ()
    #: story id -> annotations, beside (and before) those of the files
    annotations: Mapping[str, VinaSample] | None = None
    #: the model whose frames are the gold images
    gold_model: str = GOLD


@dataclass(frozen=True)
class Pair:
    """A frame of a model and the gold image of its sample and scene."""

    story_id: str
    scene: int
    image: str
    gold: str


Cell = tuple[str, str, str]  # (model, condition, portion)


def pairs_of(
    run: RunView, samples: Mapping[str, VinaSample], gold_model: str = GOLD
) -> dict[Cell, list[Pair]]:
    """(model, condition, portion) -> its pairs, in story and scene order, for every selected
    model (the gold one included) of a story with annotations."""
    gold: dict[tuple[str, str, int], str] = {}
    anywhere: dict[tuple[str, int], str] = {}
    for seq in run.all_sequences or run.sequences:
        if seq.model != gold_model:
            continue
        for k, p in seq.images:
            if p is not None and (seq.condition, seq.story_id, k) not in run.unreadable:
                gold[(seq.condition, seq.story_id, k)] = p
                anywhere.setdefault((seq.story_id, k), p)
    out: dict[Cell, list[Pair]] = {}
    for seq in sorted(run.sequences, key=_seq_order):
        sample = samples.get(seq.story_id)
        if sample is None:
            continue
        for k, p in seq.images:
            ref = gold.get((seq.condition, seq.story_id, k)) or anywhere.get((seq.story_id, k))
            if p is not None and ref is not None:
                cell = (seq.model, seq.condition, sample.portion)
                out.setdefault(cell, []).append(Pair(seq.story_id, k, p, ref))
    return out


def _seq_order(seq: FrameSequence) -> tuple[str, str, str]:
    return seq.model, seq.condition, seq.story_id


#: ``--vinabench-file``, which the ``vinabench`` evaluator takes too.
VINABENCH_FILE = click.Option(
    ["--vinabench-file"], multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="vinabench, vinabench_ref: a VinaBench annotation file the run's stories come from "
    "(repeat for several portions).",
)  # fmt: skip


def _cli() -> tuple[click.Option, ...]:
    from vsb.evaluators.embed.signals import MODEL_OPTIONS

    return (
        click.Option(
            ["--fid-weights"], default=None,
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="vinabench_ref: the FID Inception's weight file [default: the published "
            "weights-inception-2015-12-05-6726825d.pth in torch's hub cache].",
        ),
        click.Option(
            ["--clip-i-model"], default=None, metavar="NAME_OR_DIR",
            help=f"vinabench_ref: CLIP-I's model, a hub name in the local Hugging Face cache "
            f"or a model directory [default: {CLIP_I}, VinaBench's].",
        ),
        VINABENCH_FILE,
        *MODEL_OPTIONS,
    )  # fmt: skip


class VinaBenchReference(EvaluatorBase):
    """FID and CLIP-I of each model's frames against VinaBench's gold images."""

    name = EVALUATOR
    kind = "signals"
    reads = "any"
    stage = "models"
    needs = (
        "the FID Inception's weights (--fid-weights) and CLIP ViT-L/14 (--clip-i-model); "
        "pip install 'vsb[fid,embed]'; vinabench:gold in the run"
    )
    description = "VinaBench's FID and CLIP-I against its gold images (vinabench:gold)"
    Options = ReferenceOptions
    options: ReferenceOptions
    cli_options = _cli()

    def check(self, options: EvaluateOptions) -> None:
        """Annotations, both extras and both models' weights, before any work (one line)."""
        from vsb.evaluators.embed.inception import locate_inception
        from vsb.evaluators.embed.inception import require_extra as require_fid
        from vsb.evaluators.embed.models import locate_weights
        from vsb.evaluators.embed.models import require_extra as require_embed

        opts = self.options
        if not opts.vinabench_file and not opts.annotations:
            raise InputError(
                "--evaluator vinabench_ref needs the stories' VinaBench annotations: "
                "--vinabench-file FILE (the file the suite was imported from)"
            )
        require_fid()
        locate_inception(opts.fid_weights)
        require_embed(EVALUATOR)
        locate_weights("clip", opts.clip_i_model)

    def requirements_at(self, story: Story, scene: int) -> list[Requirement]:
        """None: it writes signals."""
        return []

    def plan(self, run: RunView, options: EvaluateOptions) -> list[WorkItem]:
        """One item: every pair through both models."""
        opts = self.options
        samples = samples_given(opts.vinabench_file, opts.annotations)
        pairs = pairs_of(run, samples, opts.gold_model)
        if not pairs:
            raise InputError(
                f"vinabench_ref: no frame of the run has a gold image ({self.options.gold_model} "
                "frames of the same story and scene): run it beside the model "
                "(vsb run --model …,vinabench:gold --samples ANNOTATIONS)"
            )
        flat = sorted((c, (p.story_id, p.scene, p.image, p.gold)) for c, ps in pairs.items()
                      for p in ps)  # fmt: skip
        key = content_key(self.name, self.options.clip_i_model, str(self.options.fid_weights), flat)
        return [WorkItem(self.name, key, 0.0, pairs)]

    def run_models(
        self, items: Sequence[WorkItem], progress: Any = None
    ) -> tuple[list[dict[str, Any]], list[EmbedSummary]]:
        """The rows of the planned pairs, and what each model computed."""
        from vsb.evaluators.embed.cache import EmbeddingCache
        from vsb.evaluators.embed.inception import load_inception, locate_inception
        from vsb.evaluators.embed.reference import load_clip_i, reference_scores
        from vsb.evaluators.embed.signals import EmbedSummary

        opts = self.options
        pairs: dict[Cell, list[Pair]] = {}
        for it in items:
            pairs.update(it.payload)
        rows: list[dict[str, Any]] = []
        with EmbeddingCache(opts.cache_dir) as cache:
            inception = load_inception(locate_inception(opts.fid_weights), device=opts.device)
            clip = load_clip_i(cache, opts.clip_i_model, opts.device)
            before = {e.ident: cache.count(e.ident) for e in (inception, clip)}
            for n, ((model, condition, portion), ps) in enumerate(sorted(pairs.items())):
                got = reference_scores([(p.image, p.gold) for p in ps], inception, clip, cache,
                                       opts.batch_size)  # fmt: skip
                for p, cos in zip(ps, got.cosines, strict=True):
                    rows.append(_row(model, condition, p.story_id, p.scene,
                                     signal_name(portion, "clip_i"), cos))  # fmt: skip
                if len(ps) >= 2:
                    rows.append(_row(model, condition, "", 0, signal_name(portion, "fid"),
                                     got.fid))  # fmt: skip
                if progress:
                    progress(n + 1, len(pairs))
            files = {x for ps in pairs.values() for p in ps for x in (p.image, p.gold)}
            images = len({sha256_file(Path(x)) for x in files})
            summaries = []
            for e in (inception, clip):
                new = cache.count(e.ident) - before[e.ident]
                summaries.append(EmbedSummary(evaluator=EVALUATOR, model=e.ident, images=images,
                                              computed=new, cached=images - new))  # fmt: skip
        return rows, summaries


def _row(model: str, condition: str, story_id: str, scene: int, signal: str, value: float
         ) -> dict[str, Any]:  # fmt: skip
    return {"model": model, "condition": condition, "story_id": story_id, "scene": scene,
            "signal": signal, "value": float(value), "evaluator": EVALUATOR}  # fmt: skip
