"""Click arguments and options that several commands share.

``run_dir_argument``, ``bootstrap_options`` and ``evaluators_option`` are the run directory,
the bootstrap's seed and resamples, and the comma-separated evaluator selection of the scoring
and validation commands; ``budget_option``, ``base_url_option``, ``dry_run_option`` and
``cache_option`` those of every command that calls a paid service (each says in its own
help what it applies to).

The options of local-model adapters and of the executor on ``vsb run``: ``@local_model_options``
adds them to a command; ``local_adapters`` builds the adapters of the ``diffusers:`` models it
names with those options (other models are left to the registry; every one of these options is
an adapter parameter: it enters the cache key), and ``executor_from`` the executor named by
``--executor`` (``--ray-address``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from vsb.run.executors import executor_names
from vsb.store.cache import DEFAULT_CACHE_DIR

F = TypeVar("F", bound=Callable[..., Any])

#: A run or release directory (or where to write), as a ``Path``.
RUN_PATH = click.Path(path_type=Path)

#: A cache directory (``--cache``), as a ``Path``.
_CACHE_PATH = click.Path(file_okay=False, path_type=Path)

#: The ``RUN_DIR`` argument of the commands that read a run.
run_dir_argument = click.argument("run_dir", type=RUN_PATH)


def bootstrap_options(
    seed_help: str = "Bootstrap seed.", resamples: int = 2000
) -> Callable[[F], F]:
    """Decorator: ``--seed`` and ``--resamples`` of a story bootstrap."""

    def add(f: F) -> F:
        f = click.option(
            "--resamples", default=resamples, show_default=True, help="Bootstrap resamples."
        )(f)
        return click.option("--seed", default=0, show_default=True, help=seed_help)(f)

    return add


def cells_options(f: F) -> F:
    """Decorator: ``--model`` and ``--condition`` (comma-separated), passed as ``models`` and
    ``conditions`` (None: every one)."""
    f = click.option(
        "--condition", "conditions", default=None, help="Only these conditions (comma-separated)."
    )(f)
    return click.option(
        "--model", "models", default=None, help="Only these models (comma-separated)."
    )(f)


def budget_option(help: str) -> Callable[[F], F]:
    """Decorator: ``--budget USD`` (≥ 0; None: no limit), passed as ``budget``; ``help`` says
    which calls it stops before."""
    return click.option(
        "--budget", default=None, type=click.FloatRange(min=0), metavar="USD", help=help
    )


def base_url_option(help: str) -> Callable[[F], F]:
    """Decorator: ``--base-url URL`` (None: the default endpoint); ``help`` says whose."""
    return click.option("--base-url", default=None, help=help)


def dry_run_option(help: str) -> Callable[[F], F]:
    """Decorator: the ``--dry-run`` flag; ``help`` says what it prints instead of calling."""
    return click.option("--dry-run", is_flag=True, help=help)


def cache_option(help: str) -> Callable[[F], F]:
    """Decorator: ``--cache DIR`` (default ``.vsb-cache``), passed as ``cache_dir``; ``help``
    says what is cached there."""
    return click.option(
        "--cache", "cache_dir", default=DEFAULT_CACHE_DIR, show_default=True,
        type=_CACHE_PATH, help=help,
    )  # fmt: skip


#: The VLM judge's options (``vsb evaluate``, ``vsb release build``), in their help order.
_JUDGE_OPTIONS = (
    click.option(
        "--judge", default=None, metavar="KIND:ARG",
        help="The VLM judge: openai-compatible:MODEL (key from OPENAI_API_KEY, optional for a "
        "loopback --base-url), anthropic:MODEL (ANTHROPIC_API_KEY), replay:DIR (answers from "
        "judge_calls.jsonl files), mock[:ERROR_RATE] (pipeline checks only).",
    ),
    base_url_option(
        "Judge endpoint, e.g. http://127.0.0.1:8000/v1 (vLLM, Ollama, LM Studio) or "
        "https://openrouter.ai/api/v1."
    ),
    click.option(
        "--judge-batch", default=0, show_default=True, type=click.IntRange(min=0),
        help="Questions per judge call; 0 = every question of a scene in one call; 1 = one "
        "question per call (judges that cannot batch).",
    ),
    click.option(
        "--judge-concurrency", default=4, show_default=True, type=click.IntRange(min=1),
        help="Judge calls in flight at once.",
    ),
    budget_option(
        "Stop before a judge call that could take spending past this (cached calls are free)."
    ),
)  # fmt: skip


def judge_options(f: F) -> F:
    """Decorator: ``--judge``, ``--base-url``, ``--judge-batch``, ``--judge-concurrency`` and
    ``--budget`` (the judge's spending)."""
    for opt in reversed(_JUDGE_OPTIONS):
        f = opt(f)
    return f


#: ``--timeout SECONDS`` of every command that calls a paid service.
timeout_option = click.option(
    "--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
    help="Longest wait for a paid service's connection or answer before the attempt counts as "
    "failed (it is retried; a timed-out attempt is in the ledger, at its price: it may have "
    "been billed). Default: 180 for image providers, 120 for judges and LLMs.",
)  # fmt: skip


def report_waits(timeout_s: float | None, enabled: bool = True) -> Any:
    """A context in which a call waited for long is named on stderr, every 15 s (sooner
    under a short ``--timeout``): "waiting for openai:x (story s, scene 2, …): 45 s". Its
    thread runs only when ``enabled`` (a paid service is called: no thread while a command
    that calls none forks its pool)."""
    from contextlib import nullcontext

    from vsb.store.paid import watch, watch_every

    if not enabled:
        return nullcontext()
    return watch(lambda line: click.echo(line, err=True), every=watch_every(timeout_s))


def stories_options(f: F) -> F:
    """Decorator: ``--stories ID,…`` and ``--limit N``, a few stories of the suite, passed as
    ``stories`` (a string or None) and ``limit`` (``vsb.run.selection`` resolves them)."""
    f = click.option(
        "--limit", type=click.IntRange(min=1), default=None, metavar="N",
        help="Only the first N stories in suite order (after --stories, when given).",
    )(f)  # fmt: skip
    return click.option(
        "--stories", "stories", default=None, metavar="ID[,ID…]",
        help="Only these stories (comma-separated ids, as in suite.json).",
    )(f)  # fmt: skip


def workers_option(help: str) -> Callable[[F], F]:
    """Decorator: ``--workers N`` (N ≥ 1, default 2); ``help`` says what the workers do."""
    return click.option(
        "--workers", default=2, show_default=True, type=click.IntRange(min=1), help=help
    )


def evaluators_option(help: str) -> Callable[[F], F]:
    """Decorator: ``--evaluator NAME[,NAME…]``, passed as ``evaluators`` (None: not given)."""
    return click.option(
        "--evaluator", "evaluators", default=None, metavar="NAME[,NAME…]", help=help
    )


_OPTIONS = (
    click.option(
        "--device", default="cpu", show_default=True,
        help="diffusers models: torch device (cpu, cuda, cuda:N, mps).",
    ),
    click.option(
        "--dtype", default="float32", show_default=True,
        type=click.Choice(["float32", "float16", "bfloat16"]),
        help="diffusers models: weights and activations dtype.",
    ),
    click.option(
        "--steps", type=click.IntRange(min=1), default=None,
        help="diffusers models: denoising steps (default: the pipeline's).",
    ),
    click.option(
        "--guidance", type=click.FloatRange(min=0), default=None,
        help="diffusers models: guidance scale (default: the pipeline's).",
    ),
    click.option(
        "--size", default=None,
        help="diffusers models: N or WIDTHxHEIGHT (default: the pipeline's).",
    ),
    click.option(
        "--batch-size", type=click.IntRange(min=1), default=1, show_default=True,
        help="diffusers models: images per pipeline call, scenes of different stories "
        "(--workers is raised to at least this).",
    ),
    click.option(
        "--strength", type=click.FloatRange(min=0, max=1, min_open=True), default=0.6,
        show_default=True,
        help="diffusers models: image-to-image strength under previous_image.",
    ),
    click.option(
        "--long-prompt", type=click.Choice(["chunks", "truncate"]), default="chunks",
        show_default=True,
        help="diffusers models: a prompt over the CLIP encoder's 77 tokens is encoded whole in "
        "chunks (compel), or cut with the scene text first (recorded as cut).",
    ),
)  # fmt: skip


def executor_options(help: str) -> Callable[[F], F]:
    """Decorator: ``--executor`` (``help`` says what runs where) and ``--ray-address``."""

    def add(f: F) -> F:
        f = click.option(
            "--ray-address", default=None,
            help="--executor ray: the cluster (auto, HOST:PORT, ray://HOST:PORT); none starts "
            "a local one.",
        )(f)  # fmt: skip
        return click.option(
            "--executor", default="local", show_default=True,
            type=click.Choice(executor_names()), help=help,
        )(f)  # fmt: skip

    return add


def local_model_options(f: F) -> F:
    """Decorator: add the diffusers options and the executor's to a click command."""
    for opt in reversed(_OPTIONS):
        f = opt(f)
    return executor_options(
        "Where (story, model) tasks run: local processes/threads, or a Ray cluster "
        "(pip install 'vsb[ray]')."
    )(f)


def executor_from(options: dict[str, Any]) -> Any:
    """The executor that ``--executor`` names (None: the runner's default, local); pops its
    options from ``options``."""
    name = options.pop("executor", None) or "local"
    address = options.pop("ray_address", None)
    if name == "local":
        if address is not None:
            raise click.UsageError("--ray-address needs --executor ray")
        return None
    from vsb.run.executors import get_executor

    return get_executor(name, address=address)


def local_adapters(models: Sequence[str], **options: Any) -> dict[str, Any]:
    """The adapters of the ``diffusers:`` models among ``models``, built with ``options``."""
    names = [m for m in models if m.startswith("diffusers:")]
    if not names:
        return {}
    from vsb.adapters.diffusers import DiffusersOptions, parse_size
    from vsb.adapters.registry import get_adapter

    width, height = parse_size(options.get("size"))
    opts = DiffusersOptions(
        device=options.get("device") or "cpu",
        dtype=options.get("dtype") or "float32",
        steps=options.get("steps"),
        guidance=options.get("guidance"),
        width=width,
        height=height,
        batch_size=options.get("batch_size") or 1,
        strength=options.get("strength") or 0.6,
        long_prompt=options.get("long_prompt") or "chunks",
    )
    return {m: get_adapter(m, options=opts) for m in names}
