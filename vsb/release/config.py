"""What the main job builds (``BuildConfig``) and how it reports (``Progress``): read by
``vsb.release.build``, which orders the stages, and by ``vsb.release.stages``, which runs them
(a leaf both import, so neither imports the other)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Progress(Protocol):
    """How the main job reports (the CLI draws rich bars; the library never prints)."""

    def start(self, stage: str, total: int | None) -> None: ...
    def advance(self, stage: str, done: int, total: int | None) -> None: ...
    def note(self, stage: str, message: str) -> None: ...
    def finish(self, stage: str, seconds: float, skipped: bool) -> None: ...


class Silent:
    """A ``Progress`` that draws nothing."""

    def start(self, stage: str, total: int | None) -> None:
        pass

    def advance(self, stage: str, done: int, total: int | None) -> None:
        pass

    def note(self, stage: str, message: str) -> None:
        pass

    def finish(self, stage: str, seconds: float, skipped: bool) -> None:
        pass


class OpenStages:
    """The build's progress, passed on only for a stage that has started and not finished:
    work that begins early (the reference judges, part of validate, answer during the suite
    variants) reports to its stage from the moment the stage starts."""

    def __init__(self, inner: Progress) -> None:
        self.inner = inner
        self.open: set[str] = set()

    def start(self, stage: str, total: int | None) -> None:
        self.open.add(stage)
        self.inner.start(stage, total)

    def advance(self, stage: str, done: int, total: int | None) -> None:
        if stage in self.open:
            self.inner.advance(stage, done, total)

    def note(self, stage: str, message: str) -> None:
        if stage in self.open:
            self.inner.note(stage, message)

    def finish(self, stage: str, seconds: float, skipped: bool) -> None:
        self.open.discard(stage)
        self.inner.finish(stage, seconds, skipped)


@dataclass(frozen=True)
class BuildConfig:
    """What the main job builds."""

    name: str
    out: Path = Path("build")
    workers: int = 2
    seed: int = 0
    models: tuple[str, ...] | None = None
    conditions: tuple[str, ...] | None = None
    #: Evaluators (None: rules and pairwise, plus vlm when ``judge`` is set).
    evaluators: tuple[str, ...] | None = None
    #: A judge pass: ``--judge`` spec (openai-compatible:MODEL, anthropic:MODEL, replay:DIR,
    #: mock[:ERROR_RATE]), its base URL and call options.
    judge: str | None = None
    base_url: str | None = None
    judge_batch: int = 0
    judge_concurrency: int = 4
    budget_usd: float | None = None
    #: ``--timeout``: the longest wait for a judge's answer (None: the transport's own); how
    #: patient the calls are, not what they answer, so not part of any stage's fingerprint.
    timeout_s: float | None = None
    #: Also run the paraphrased suite and put the prompt sensitivity into the release.
    paraphrase: bool = True
    #: Also run the implicit-effect stories and put the inference gap into the release.
    implicit: bool = True
    #: Serve the reference judges over HTTP on 127.0.0.1 (default: answered in process;
    #: the same verdicts, so not part of any stage's fingerprint).
    served_judges: bool = False
    #: Your suite instead of the default one (``vsb suite import``, ``--per-cell N``): it is
    #: copied into the build; the suite variants (paraphrase, implicit) are the default
    #: suite's, so they are off with it.
    suite: Path | None = None
    #: Your models, run beside the simulators (the simulators stay: they give the oracle
    #: validation and the floor); stored:SOURCE ones read ``samples``.
    extra_models: tuple[str, ...] = ()
    #: The samples directory of ``stored:SOURCE`` models (``--samples DIR``), and of
    #: ``vinabench:gold`` (VinaBench's annotations folder).
    samples: Path | None = None
    #: How ``stored:SOURCE`` folders are laid out: ``vsb`` or ``vinabench`` (``--layout``).
    samples_layout: str = "vsb"

    @property
    def root(self) -> Path:
        return self.out / self.name
