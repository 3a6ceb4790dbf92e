#!/usr/bin/env python3
"""Embedding evaluators (CLIP, DINOv2) over a run or a release: a thin wrapper over
``vsb evaluate RUN --evaluator clip,dino`` (the same library function, ``evaluate_run``).

Usage::

    scripts/embed_release.py RUN_OR_RELEASE [--clip-model NAME_OR_DIR] [--dino-model NAME_OR_DIR]
                             [--device cpu|cuda|mps] [--batch-size N] [--cache DIR]
                             [--evaluator clip|dino|clip,dino] [--model M] [--condition C]

RUN_OR_RELEASE is a run directory (``vsb run``), a release directory (``release/`` of
``vsb release build``, with MANIFEST.json) or the build directory holding that ``release/``.
Signals go to ``evaluations/signals.parquet``.

A frozen release is a new release afterwards: the script adds the signals, validates the
judges again (``validation/`` then holds the CLIP and DINOv2 AUROCs) and freezes it again
under the same name. Its root hash changes and an old signature is removed (sign it again
with ``vsb release sign``). Should evaluation fail, the release is left as it was.
Needs ``pip install 'vsb[embed]'``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

USAGE = "usage: embed_release.py RUN_OR_RELEASE [vsb evaluate options]"
FROZEN = ("MANIFEST.json", "MANIFEST.json.sig")


def resolve(target: str) -> Path:
    """The directory holding ``records.jsonl``: the target, or its ``release/``."""
    root = Path(target)
    if not (root / "records.jsonl").is_file() and (root / "release" / "records.jsonl").is_file():
        return root / "release"
    return root


def _evaluate(root: Path, rest: list[str]) -> int:
    from vsb.cli.main import main as vsb_main

    return vsb_main(["evaluate", str(root), *rest])


def _into_release(root: Path, rest: list[str]) -> int:
    """Evaluate a frozen release, validate it and freeze it again (same name)."""
    from vsb.cli.main import main as vsb_main
    from vsb.release.manifest import load_manifest

    try:
        old = load_manifest(root)
    except Exception as err:  # ReleaseError: one line, as vsb prints it
        print(f"error: {err}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="embed-release-") as tmp:
        kept = Path(tmp)
        for name in FROZEN:  # set the freeze aside; put it back if anything fails
            if (root / name).is_file():
                shutil.copy2(root / name, kept / name)
                (root / name).unlink()
        status = _evaluate(root, rest)
        if status == 0 and (root / "validation").is_dir():
            status = vsb_main(["validate-judge", str(root)])
        if status != 0:
            for name in FROZEN:
                if (kept / name).is_file():
                    shutil.copy2(kept / name, root / name)
            return status
    status = vsb_main(["release", "freeze", str(root), "--name", old.release])
    if status == 0:
        new = load_manifest(root)
        print(
            f"note: {root} is frozen again as {old.release}: root hash {old.root_hash} -> "
            f"{new.root_hash}; publish the new one (and sign it again with `vsb release sign`)",
            file=sys.stderr,
        )
    return status


def main(argv: list[str] | None = None) -> int:
    """Run ``vsb evaluate`` with the embedding evaluators; return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__ if args else USAGE, file=sys.stderr if not args else sys.stdout)
        return 0 if args else 2
    root = resolve(args[0])
    rest = args[1:]
    if not any(a == "--evaluator" or a.startswith("--evaluator=") for a in rest):
        rest = ["--evaluator", "clip,dino", *rest]
    if (root / "MANIFEST.json").is_file() and "--dry-run" not in rest:
        return _into_release(root, rest)
    return _evaluate(root, rest)


if __name__ == "__main__":
    sys.exit(main())
