"""Every error vsb raises on purpose.

Hierarchy::

    VsbError                      base; carries optional ``file`` and ``location``
    ├── InputError                a user-supplied file or argument is wrong
    │   ├── StoryValidationError  a story fails its JSON Schema
    │   ├── UnknownNameError      a registry lookup failed (lists the known names)
    │   └── ConfigError           a config file (pricing, run manifest…) is malformed
    ├── TransitionError           an event is impossible in the current state (vsb/state.py)
    ├── AdapterError              a model adapter failed to produce an image
    │   └── CredentialMissing     the adapter's API key is not in the environment
    ├── CacheError                the generation cache is unusable
    ├── RunError                  a run directory is missing or incomplete
    └── ReleaseError              a release fails freezing or verification

The CLI turns any ``VsbError`` into one line on stderr and exit status 1; ``str(err)``
is that line: ``FILE: LOCATION: MESSAGE`` with absent parts left out.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any


class VsbError(Exception):
    """Base class: a message plus the file and the location (JSON pointer, line…) it concerns."""

    def __init__(
        self, message: str, *, file: str | Path | None = None, location: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.location = location

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.location) if p]
        return ": ".join([*parts, self.message])

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its attributes, whatever the subclass's ``__init__`` takes (an error
        raised in a stage's own process is re-raised in the build process)."""
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[VsbError], args: tuple[Any, ...], state: dict[str, Any]) -> VsbError:
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


class InputError(VsbError):
    """A user-supplied file or argument is wrong."""


class StoryValidationError(InputError):
    """A story document fails schema validation."""


class ConfigError(InputError):
    """A configuration file is malformed."""


class UnknownNameError(InputError):
    """A name is not registered; the message lists the known names and a close match."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        known_sorted = sorted(known)
        hint = did_you_mean(name, known_sorted)
        super().__init__(f"unknown {kind} {name!r}{hint}; known: {', '.join(known_sorted)}")
        self.kind = kind
        self.name = name
        self.known = known_sorted


class TransitionError(VsbError):
    """An event cannot be applied: names the story, scene (1-based), event index and rule."""

    def __init__(self, rule: str, detail: str, *, story: str, scene: int, event: int) -> None:
        super().__init__(
            f"impossible transition ({rule}): {detail}",
            file=None,
            location=f"story {story} scene {scene} event {event}",
        )
        self.rule = rule
        self.story = story
        self.scene = scene
        self.event = event


class AdapterError(VsbError):
    """A model adapter failed to produce an image."""


class CredentialMissing(AdapterError):
    """The adapter's credential environment variable is not set."""


class CacheError(VsbError):
    """The generation cache cannot be used."""


class RunError(VsbError):
    """A run directory is missing, incomplete or inconsistent."""


class ReleaseError(VsbError):
    """A release cannot be frozen or fails verification."""


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` naming the closest of ``known`` to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def select_present(
    wanted: Sequence[str] | None,
    present: list[str],
    message: Callable[[list[str], str], str],
) -> set[str]:
    """The names ``wanted`` (every one ``present`` when None); ``InputError(message(unknown,
    hint))`` when some are not present (``hint`` is ``did_you_mean`` of the first of them)."""
    if wanted is None:
        return set(present)
    unknown = [w for w in wanted if w not in present]
    if unknown:
        raise InputError(message(unknown, did_you_mean(unknown[0], present)))
    return set(wanted)
