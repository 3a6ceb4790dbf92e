"""A tiny name -> object registry used for conditions, adapters, evaluators and simulators, and
the entry-point scan both plug-in registries share (``plugin_entries``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from vsb.errors import InputError, UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects; ``get`` of an unknown name raises ``UnknownNameError``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` (names are unique)."""

        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` under ``name`` without a decorator."""
        self.register(name)(obj)

    def get(self, name: str) -> T:
        """The object registered as ``name``; unknown names list the known ones."""
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._items) from None

    def names(self) -> list[str]:
        """Registered names in registration order."""
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def plugin_entries(group: str, builtin: Collection[str], kind: str) -> dict[str, tuple[str, str]]:
    """The entry points of ``group`` of the installed distributions: name -> (``module:attr``,
    ``"plug-in DIST"``). A plug-in may not take a built-in name, and two plug-ins may not
    declare one name with different targets: either is an ``InputError`` naming the plug-in."""
    found: dict[str, tuple[str, str]] = {}
    for ep in entry_points(group=group):
        source = f"plug-in {ep.dist.name if ep.dist is not None else '?'}"
        if ep.name in builtin:
            raise InputError(
                f"{source}: entry point {ep.name!r} (group {group}) names {kind} vsb already "
                "has; give it another name"
            )
        if ep.name in found and found[ep.name][0] != ep.value:
            raise InputError(
                f"{source}: entry point {ep.name!r} (group {group}) is also declared by "
                f"{found[ep.name][1]}"
            )
        found.setdefault(ep.name, (ep.value, source))
    return found
