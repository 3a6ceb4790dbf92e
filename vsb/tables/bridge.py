"""pyarrow's pandas bridge, kept shut in processes that never hand Arrow data to pandas.

pyarrow converts Python rows to Arrow with pandas in mind: its first conversion in a process
imports pandas if it is installed (~0.2 s and ~45 MiB, to recognise pandas objects among the
rows), and it offers no switch. The main job's stage processes (``vsb.release.isolate``)
convert rows but never touch pandas, so they call ``skip_pandas()``; from then on
``conversion()`` blocks the pandas import while rows are converted, and pyarrow takes pandas
as absent (it is an optional dependency of pyarrow). The rows and their Parquet bytes are the
same either way. Nowhere else is anything blocked: a process that did not call
``skip_pandas()``, or that has already imported pandas, converts exactly as before.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

_skip = False


def skip_pandas() -> None:
    """Declare that this process never converts Arrow data to or from pandas (its row
    conversions then skip the pandas import)."""
    global _skip
    _skip = True


def skipping() -> bool:
    """Whether this process's row conversions skip pandas."""
    return _skip


class _NoPandas(importlib.abc.MetaPathFinder):
    """Finds no ``pandas``: importing it raises ModuleNotFoundError, as if not installed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> Any:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


@contextlib.contextmanager
def conversion() -> Iterator[None]:
    """Convert rows to Arrow inside this block: without pandas after ``skip_pandas()`` (unless
    pandas is already imported), else as pyarrow would anyway."""
    if not _skip or "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
