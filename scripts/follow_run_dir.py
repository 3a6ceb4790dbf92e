"""Follow run_dir through ``vsb evaluate``: the modules of the evaluation pass it enters.

    python scripts/follow_run_dir.py evaluate RUN [--evaluator …] [--judge mock] …

Runs the ``vsb`` command given (the run directory must be its second word) under a profiler and
follows every call of a vsb function that is handed the run directory or something made from it
(the ``RunView``, or a path at or under the run's root). A module is *entered* at each distinct
call site where such a call goes into it from a function of another module (a call inside a
comprehension or a dataclass's generated ``__init__`` belongs to the function around it; a loop
over one call site enters once, as a reader following the code enters it once). Prints, for each
module of ``vsb/evaluators/``, the call sites that enter it; exits 1 when one is entered more than
``--most`` times (default 2, ARCHITECTURE.md's bound), else 0. Other vsb modules (the story
files, tables, fsio, the store) are libraries the pass calls; they are printed with ``--all``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

#: Where the evaluation pass's own modules live (relative to the vsb package).
PASS = "evaluators/"


def _module(filename: str) -> str:
    """A vsb source file as its path under the package ('' for any other file)."""
    head, sep, tail = filename.rpartition("/vsb/")
    return tail if sep and "site-packages" not in head else ""


def _caller(frame: FrameType) -> FrameType | None:
    """The function frame a call comes from (past comprehensions and generated code)."""
    back = frame.f_back
    while back is not None and (
        back.f_code.co_name.startswith("<") or back.f_code.co_filename.startswith("<")
    ):
        back = back.f_back
    return back


def follow(argv: Sequence[str]) -> dict[str, list[str]]:
    """Run ``vsb *argv`` and return module -> the call sites (``caller -> callee``) entering it."""
    from vsb.cli.main import main

    root = Path(argv[1]).resolve()

    def made_from_run(value: Any) -> bool:
        if type(value).__name__ == "RunView":
            return True
        if isinstance(value, str | Path) and str(value):
            path = Path(value).resolve()
            return path == root or root in path.parents
        return False

    sites: dict[str, dict[str, None]] = {}

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        code = frame.f_code
        if event != "call" or code.co_name.startswith("<"):
            return
        module = _module(code.co_filename)
        if not module:
            return
        given = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if not any(made_from_run(frame.f_locals.get(name)) for name in given):
            return
        caller = _caller(frame)
        if caller is None:
            return
        where = _module(caller.f_code.co_filename) or caller.f_code.co_filename
        if where != module:
            site = f"{where}:{caller.f_code.co_name} -> {code.co_name}"
            sites.setdefault(module, {})[site] = None

    sys.setprofile(profile)
    try:
        status = main(list(argv))
    finally:
        sys.setprofile(None)
    if status != 0:
        raise SystemExit(f"vsb {' '.join(argv)} exited with status {status}")
    return {module: list(calls) for module, calls in sites.items()}


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--most", type=int, default=2, help="entries allowed per module")
    parser.add_argument("--all", action="store_true", help="print the library modules too")
    parser.add_argument("vsb", nargs=argparse.REMAINDER, help="the vsb command: evaluate RUN …")
    ns = parser.parse_args(args)
    entered = follow(ns.vsb)
    over = 0
    for module, calls in sorted(entered.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if not (module.startswith(PASS) or ns.all):
            continue
        mark = "" if len(calls) <= ns.most or not module.startswith(PASS) else "  (over)"
        over += bool(mark)
        print(f"{len(calls)} {module}{mark}")
        for call in calls:
            print(f"    {call}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
