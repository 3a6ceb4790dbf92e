"""A Progress that records every call, for the tests of stages run in other processes."""

from __future__ import annotations

from typing import Any


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def start(self, stage: str, total: int | None) -> None:
        self.calls.append(("start", (stage, total)))

    def advance(self, stage: str, done: int, total: int | None) -> None:
        self.calls.append(("advance", (stage, done, total)))

    def note(self, stage: str, message: str) -> None:
        self.calls.append(("note", (stage, message)))

    def finish(self, stage: str, seconds: float, skipped: bool) -> None:
        self.calls.append(("finish", (stage, seconds, skipped)))
