"""A small third-party plug-in distribution, written into a folder by a test: a real
``*.dist-info`` (``METADATA``, ``entry_points.txt``, ``RECORD``) beside its package, the way
pip lays out an installed wheel. Put the folder on ``sys.path`` / ``PYTHONPATH`` and
``importlib.metadata`` finds its entry points; vsb itself is not edited.

It adds the model ``demo-painter`` (group ``vsb.adapters``) and the evaluators
``demo-presence`` and ``demo-ink`` (group ``vsb.evaluators``; ``demo-ink`` has options of its
own, set by its command-line option ``--ink-index``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

DIST = "vsb-demo-plugin"
PACKAGE = "vsb_demo_plugin"
MODEL = "demo-painter"
EVALUATOR = "demo-presence"
INK = "demo-ink"

ADAPTER_SOURCE = '''
"""A toy text-to-image model: paints the prompt's sha256 as a grid of palette colours."""

import hashlib
import io

from PIL import Image

from vsb.adapters.base import GenerationRequest, GenerationResult, ImageModelAdapter
from vsb.render.palette import PALETTE


class DemoPainter(ImageModelAdapter):
    """Paints sha256(prompt) as an 8x8 grid of palette colours (no network, no weights)."""

    name = "demo-painter"
    version = "1"
    process_safe = True

    def __init__(self, **options):
        self.options = options

    def generate(self, request: GenerationRequest) -> GenerationResult:
        digest = hashlib.sha256(request.full_prompt().encode()).digest()
        img = Image.new("RGB", (8, 8))
        img.putdata([PALETTE[digest[i % 32] % len(PALETTE)] for i in range(64)])
        buf = io.BytesIO()
        img.resize((256, 256), Image.NEAREST).save(buf, format="PNG")
        return GenerationResult(png=buf.getvalue(), metadata={}, cost_usd=0.0)
'''

EVALUATOR_SOURCE = '''
"""A toy judge: a requirement passes when its subject is seen at all (presence only)."""

from vsb.evaluators.render.detected import EntityVocabulary
from vsb.evaluators.extractor import extract
import dataclasses

import click
import numpy as np

from vsb.evaluators.interface import EvaluatorOutput, StoryEvaluator, signal_row
from vsb.evaluators.rules import RequirementResult


class DemoPresence(StoryEvaluator):
    """Passes a requirement when its subject is in the frame: a person of the character's
    skin tone, an object of its kind, the scene's location; blind to every other attribute."""

    name = "demo-presence"
    kind = "verdicts"
    reads = "renders"
    description = "presence-only judge (a vsb plug-in)"

    def evaluate_story(self, story, frames):
        out = EvaluatorOutput()
        voc = EntityVocabulary.from_world(story.world)
        skins = {c.name: c.skin for c in story.world.characters}
        for f in frames:
            if f.image is None:
                continue
            seen = extract(f.image, voc, f.counts)
            present = {p.skin for p in seen.people} | {o.kind for o in seen.objects}
            for req in story.scenes[f.scene - 1].requirements:
                if req.subject == "scene":
                    ok = req.attribute != "location" or seen.location == req.expected
                else:
                    ok = skins.get(req.subject, req.subject) in present
                result = RequirementResult.of(req, ok, ok, "demo_missing", self.name)
                out.requirements.append(result.row(
                    model=f.model, condition=f.condition, story_id=f.story_id, scene=f.scene
                ))
        return out


@dataclasses.dataclass(frozen=True)
class InkOptions:
    ink_index: int = 0  # the palette index counted as ink


class DemoInk(StoryEvaluator):
    """Share of a frame's pixels of one palette index (``--ink-index``)."""

    name = "demo-ink"
    kind = "signals"
    reads = "renders"
    Options = InkOptions
    cli_options = (
        click.Option(["--ink-index"], type=int, default=None,
                     help="demo-ink: the palette index counted as ink [default: 0]."),
    )

    def evaluate_story(self, story, frames):
        out = EvaluatorOutput()
        index = self.options.ink_index
        for f in frames:
            if f.image is not None:
                share = float(np.mean(f.image == index))
                out.signals.append(signal_row(f, f"ink_{index}", share, self.name))
        return out
'''


def write_plugin(root: Path, *, entry_points: str | None = None) -> Path:
    """Write the plug-in distribution into ``root`` (made if needed); returns ``root``.
    ``entry_points``: another ``entry_points.txt`` (e.g. a broken one)."""
    pkg = root / PACKAGE
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text('"""vsb demo plug-in."""\n')
    (pkg / "adapter.py").write_text(ADAPTER_SOURCE)
    (pkg / "evaluator.py").write_text(EVALUATOR_SOURCE)
    info = root / f"{PACKAGE}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\nRequires-Dist: vsb\n"
    )
    (info / "entry_points.txt").write_text(
        entry_points
        if entry_points is not None
        else textwrap.dedent(f"""\
            [vsb.adapters]
            {MODEL} = {PACKAGE}.adapter:DemoPainter

            [vsb.evaluators]
            {EVALUATOR} = {PACKAGE}.evaluator:DemoPresence
            {INK} = {PACKAGE}.evaluator:DemoInk
            """)
    )
    files = ["__init__.py", "adapter.py", "evaluator.py"]
    (info / "RECORD").write_text(
        "".join(f"{PACKAGE}/{f},,\n" for f in files)
        + "".join(f"{info.name}/{f},,\n" for f in ("METADATA", "entry_points.txt", "RECORD"))
    )
    return root


def write_module_plugin(site: Path, module: str, source: str, entry_points: str) -> Path:
    """A one-module distribution in ``site`` (made if needed): ``module``.py holding
    ``source`` and a ``*.dist-info`` whose ``entry_points.txt`` is ``entry_points``; the
    tests put ``site`` on sys.path. Returns ``site``."""
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site
