#!/usr/bin/env python3
"""Embedding evaluators (CLIP, DINOv2) over a run or a release: a thin wrapper over
``vsb evaluate RUN --evaluator clip,dino`` (the same library function, ``evaluate_run``).

Usage::

    scripts/embed_release.py RUN_OR_RELEASE [--clip-model NAME_OR_DIR] [--dino-model NAME_OR_DIR]
                             [--device cpu|cuda|mps] [--batch-size N] [--cache DIR]
                             [--evaluator clip|dino|clip,dino] [--model M] [--condition C]

RUN_OR_RELEASE is a run directory (``vsb run``), a release directory (``release/`` of
``vsb release build``, with MANIFEST.json) or the build directory holding that ``release/``.
Signals go to ``evaluations/signals.{jsonl,csv}``; a frozen release must be frozen again
afterwards (``vsb release freeze DIR``). Needs ``pip install 'vsb[embed]'``.
"""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = "usage: embed_release.py RUN_OR_RELEASE [vsb evaluate options]"


def resolve(target: str) -> Path:
    """The directory holding ``records.jsonl``: the target, or its ``release/``."""
    root = Path(target)
    if not (root / "records.jsonl").is_file() and (root / "release" / "records.jsonl").is_file():
        return root / "release"
    return root


def main(argv: list[str] | None = None) -> int:
    """Run ``vsb evaluate`` with the embedding evaluators; return the exit status."""
    from vsb.cli.main import main as vsb_main

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__ if args else USAGE, file=sys.stderr if not args else sys.stdout)
        return 0 if args else 2
    root = resolve(args[0])
    rest = args[1:]
    if not any(a == "--evaluator" or a.startswith("--evaluator=") for a in rest):
        rest = ["--evaluator", "clip,dino", *rest]
    status = vsb_main(["evaluate", str(root), *rest])
    if status == 0 and (root / "MANIFEST.json").is_file():
        print(
            f"note: {root} is a frozen release whose evaluations changed: freeze it again "
            f"with `vsb release freeze {root}`",
            file=sys.stderr,
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
