"""The evaluator registry: evaluators by name, found by import path, never imported here.

Built-ins are declared in ``BUILTINS`` as ``"module:Class"`` strings, the same way a plug-in
declares its own in its distribution's entry points (group ``vsb.evaluators``, as pytest
finds ``pytest11`` plug-ins): a class is imported only when its evaluator is asked for, so
no evaluator module is imported by this one (no registration circle). The class declares
what it is, reads and costs (``vsb.evaluators.interface``); ``evaluator_info`` gathers that
into an ``EvaluatorInfo``. ``add`` registers a declaration made in code (tests, notebooks).

Built-ins:

- ``rules``: blind extractor + rule checker (renders only);
- ``pairwise``: colour-histogram intersection of consecutive frames (renders only);
- ``vlm``: the VLM question-answering judge (any image; needs ``--judge``; paid);
- ``vlm_xframe``: the judge's cross-frame questions on consecutive frames (same person, same
  clothes, same place; VinaBench's consistency checks), scored as an evaluator of its own;
- ``clip``, ``dino``: embedding signals (any image; ``vsb[embed]`` and model weights);
- ``vinabench``: VinaBench's eight VQA metrics (needs ``--judge``); ``vinabench_ref``: its
  FID and CLIP-I against the gold images (``vsb[fid,embed]`` and both models' weights).
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import Any, Literal

from vsb.errors import InputError, UnknownNameError
from vsb.evaluators.interface import (
    Evaluator,
    EvaluatorInfo,
    EvaluatorOutput,
    Frame,
    info_of,
)
from vsb.registry import plugin_entries

__all__ = [
    "BUILTINS", "DEFAULT_EVALUATORS", "ENTRY_POINT_GROUP", "Evaluator", "EvaluatorInfo",
    "EvaluatorOutput", "Frame", "add", "evaluator_info", "evaluator_names", "get_evaluator",
    "register_evaluator",
]  # fmt: skip

#: The entry-point group of plug-in evaluators (``name = "module:Class"``).
ENTRY_POINT_GROUP = "vsb.evaluators"
#: The built-in evaluators, by import path.
BUILTINS: dict[str, str] = {
    "rules": "vsb.evaluators.rules:RulesEvaluator",
    "pairwise": "vsb.evaluators.pairwise:PairwiseEvaluator",
    "vlm": "vsb.evaluators.vlm_judge:VlmJudge",
    "vlm_xframe": "vsb.evaluators.vlm_judge:VlmPairJudge",
    "clip": "vsb.evaluators.embed.signals:ClipEvaluator",
    "dino": "vsb.evaluators.embed.signals:DinoEvaluator",
    "vinabench": "vsb.evaluators.vinabench:VinaBenchEvaluator",
    "vinabench_ref": "vsb.evaluators.vina.reference:VinaBenchReference",
}
#: Evaluators ``vsb evaluate`` runs when none is named (a judge joins them with --judge).
DEFAULT_EVALUATORS: tuple[str, ...] = ("rules", "pairwise")
#: Declarations registered in code (``add``, ``register_evaluator``).
_INFO: dict[str, EvaluatorInfo] = {}


@lru_cache(maxsize=8)
def _plugins(_path: tuple[str, ...]) -> dict[str, str]:
    """name -> "module:Class" of the installed plug-ins (rescanned when sys.path changes)."""
    found = plugin_entries(ENTRY_POINT_GROUP, BUILTINS, "an evaluator")
    return {name: target for name, (target, _) in found.items()}


def _targets() -> dict[str, str]:
    plugins = _plugins(tuple(sys.path))
    found = {**BUILTINS}
    found.update(plugins)  # plugin_entries refused any that would shadow a built-in
    return found


def add(info: EvaluatorInfo) -> None:
    """Register a declaration made in code (names are unique)."""
    if info.name in _INFO or info.name in _targets():
        raise ValueError(f"evaluator {info.name!r} registered twice")
    _INFO[info.name] = info


def register_evaluator(
    name: str,
    *,
    kind: Literal["verdicts", "signals"] = "verdicts",
    reads: Literal["renders", "any"] = "any",
    paid: bool = False,
    needs: str = "",
    description: str = "",
) -> Any:
    """Class decorator: register an evaluator class defined in code under ``name``."""

    def deco(cls: type[Any]) -> type[Any]:
        cls.name, cls.kind, cls.reads, cls.paid = name, kind, reads, paid
        cls.needs, cls.description = needs, description
        add(info_of(cls, f"{cls.__module__}:{cls.__qualname__}"))
        return cls

    return deco


def evaluator_names() -> list[str]:
    """Known evaluator names: built-ins first, then plug-ins and ones added in code."""
    return [*_targets(), *(n for n in _INFO if n not in _targets())]


@lru_cache(maxsize=64)
def _info_at(name: str, target: str) -> EvaluatorInfo:
    try:
        cls = EvaluatorInfo(name, "signals", "any", False, target).load()
    except (ImportError, AttributeError) as err:
        raise InputError(f"evaluator {name!r}: cannot import {target} ({err})") from None
    return info_of(cls, target, name)


def evaluator_info(name: str) -> EvaluatorInfo:
    """The declaration of ``name``; unknown names list the known ones."""
    if name in _INFO:
        return _INFO[name]
    target = _targets().get(name)
    if target is None:
        raise UnknownNameError("evaluator", name, evaluator_names())
    return _info_at(name, target)


def get_evaluator(name: str, *args: Any, **kwargs: Any) -> Evaluator:
    """A fresh instance of the evaluator registered as ``name``."""
    return evaluator_info(name).load()(*args, **kwargs)
