"""``vsb suite prompts``: the exact request of every (story, scene, condition), for a pipeline
outside vsb (a ComfyUI workflow, a diffusers notebook) to make the images that ``stored:SOURCE``
then serves back (issue #36).

One ``PromptRow`` per (story, scene, condition), in story order, then condition, then scene
(so a previous frame always comes before the row that takes it as reference):

- ``prompt`` is what a text-only model is sent (``GenerationRequest.full_prompt``: the
  context, then the scene text), ``context`` the context part of it as sent (None: no
  context), ``scene_text`` the scene text alone;
- ``reference`` is, under previous_image, the image the model is handed with the prompt: the
  path (relative to the samples folder) of its own previous frame under the same condition;
- ``path`` is where ``stored:SOURCE --samples DIR`` expects the image, relative to DIR: it
  starts with SOURCE;
- ``same_as`` is set when the row sends the same request as an earlier row of the same story
  and scene (scene 1 under every condition, a context equal to another's): the path of that
  row's image, which ``stored:`` serves for this one too. Make each row with ``same_as``
  empty once; leave the others out;
- with a token budget (``--max-tokens N``), ``tokens`` is the prompt's length in CLIP tokens
  (start and end included, ``vsb.story.tokens.clip_count``: the tokenizer of Stable
  Diffusion 1.5's and SDXL's text encoders) and ``cut`` whether it is over N (a CLIP encoder
  of context N reads only ``clip_keep(prompt, N)``). Without one the two columns are absent.

The request is the one ``vsb run`` builds (``vsb.run.tasks``): the same condition contexts,
the same ``full_prompt``, so what comes back scores like the model that made it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from vsb.adapters.base import GenerationRequest
from vsb.adapters.providers.stored import check_source, sample_path
from vsb.conditions import ConditionContext, get_condition
from vsb.errors import InputError
from vsb.fsio import atomic_write_text, csv_text
from vsb.story.io import load_suite
from vsb.story.models import Story

#: The formats ``write_prompts`` writes.
FORMATS = ("jsonl", "csv")
#: The source folder the paths start with when none is given.
DEFAULT_SOURCE = "mine"


@dataclass(frozen=True)
class PromptRow:
    """One request of a suite under one condition, as ``vsb run`` sends it."""

    story_id: str
    #: 1-based scene index
    scene: int
    condition: str
    #: the exact text a text-only model is sent: context, then scene
    prompt: str
    #: the context as sent (the part of ``prompt`` before the scene); None: no context
    context: str | None
    #: the scene text alone
    scene_text: str
    #: previous_image: the path (relative to the samples folder) of the frame handed along
    reference: str | None
    #: where ``stored:SOURCE`` expects the image, relative to the samples folder
    path: str
    #: the path of an earlier row with the same request (its image serves this row); None
    same_as: str | None
    #: the prompt's CLIP tokens, start and end included (None: no budget asked for)
    tokens: int | None = None
    #: the prompt is over the budget asked for (None: no budget asked for)
    cut: bool | None = None


def full_prompt(scene_text: str, context: ConditionContext) -> str:
    """What a text-only model is sent for ``scene_text`` under ``context``."""
    return GenerationRequest("", "", scene_text, 0, context).full_prompt()


def _context_text(prompt: str, scene_text: str, context: ConditionContext) -> str | None:
    if context.text is None and context.data is None:
        return None
    tail = "Draw this scene: " + scene_text
    return prompt[: -len(tail)].rstrip("\n") if prompt.endswith(tail) else prompt


def story_prompts(
    story: Story, conditions: Sequence[str], source: str = DEFAULT_SOURCE
) -> Iterator[PromptRow]:
    """The rows of one story under ``conditions`` (see the module docstring)."""
    check_source(source)
    first: dict[tuple[int, str, str | None], str] = {}  # (scene, prompt, reference) -> path
    for cname in conditions:
        cond = get_condition(cname)
        previous: str | None = None  # the path of this condition's previous frame
        for scene in story.scenes:
            k = scene.index
            ctx = cond.context(story, k)
            prompt = full_prompt(scene.text, ctx)
            reference = previous if ctx.reference_image else None
            path = sample_path(source, cname, story.id, k)
            same = first.setdefault((k, prompt, reference), path)
            same_as = None if same == path else same
            previous = same_as or path
            yield PromptRow(
                story.id, k, cname, prompt, _context_text(prompt, scene.text, ctx),
                scene.text, reference, path, same_as,
            )  # fmt: skip


def suite_prompts(
    suite: str | Path | Sequence[Story],
    conditions: Sequence[str],
    source: str = DEFAULT_SOURCE,
    max_tokens: int | None = None,
) -> Iterator[PromptRow]:
    """Every row of a suite (a directory, or stories already loaded) under ``conditions``;
    with ``max_tokens``, each with its CLIP ``tokens`` and whether it is ``cut``."""
    if not conditions:
        raise InputError("no condition given (--condition NAME[,…|all])")
    for c in conditions:
        get_condition(c)
    if max_tokens is not None and max_tokens < 2:
        raise InputError(f"--max-tokens counts CLIP's start and end tokens: >= 2, not {max_tokens}")
    stories = load_suite(suite) if isinstance(suite, str | Path) else suite
    for story in stories:
        rows = story_prompts(story, conditions, source)
        yield from (rows if max_tokens is None else (with_tokens(r, max_tokens) for r in rows))


def with_tokens(row: PromptRow, max_tokens: int) -> PromptRow:
    """``row`` with its prompt's CLIP ``tokens`` and whether it is over ``max_tokens``."""
    from vsb.story.tokens import clip_count

    n = clip_count(row.prompt)
    return replace(row, tokens=n, cut=n > max_tokens)


#: The columns of every export; ``TOKEN_COLUMNS`` follow them when a budget was asked for.
TOKEN_COLUMNS = ("tokens", "cut")
COLUMNS = tuple(f.name for f in fields(PromptRow) if f.name not in TOKEN_COLUMNS)


def _columns(rows: Sequence[PromptRow]) -> tuple[str, ...]:
    return COLUMNS + TOKEN_COLUMNS if any(r.tokens is not None for r in rows) else COLUMNS


def prompts_text(rows: Sequence[PromptRow], fmt: str = "jsonl") -> str:
    """``rows`` as JSON lines (the exact text) or CSV (a cell that starts like a formula gets
    a leading quote, as in every CSV vsb writes)."""
    columns = _columns(rows)
    if fmt == "jsonl":
        return "".join(
            json.dumps({c: getattr(r, c) for c in columns}, ensure_ascii=False) + "\n" for r in rows
        )
    if fmt == "csv":
        return csv_text(columns, (asdict(r) for r in rows))
    raise InputError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")


def write_prompts(rows: Sequence[PromptRow], out: str | Path, fmt: str = "jsonl") -> None:
    """Write ``rows`` to ``out`` atomically (a failure leaves no half-written file)."""
    atomic_write_text(out, prompts_text(rows, fmt))
