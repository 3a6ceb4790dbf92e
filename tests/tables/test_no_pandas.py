"""A stage process converts rows to Arrow without importing pandas (vsb.tables.bridge)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pandas")  # what is skipped must be installed for this to mean anything

_ROWS = (
    'rows = [{"model": "m", "condition": "c", "story_id": "s", "scene": k, "signal": "x", '
    '"value": 0.5 * k, "evaluator": None if k == 2 else "pairwise"} for k in range(50)]'
)


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_after_skip_pandas_writing_a_table_imports_no_pandas(tmp_path: Path) -> None:
    code = f"""
    import sys
    from pathlib import Path
    from vsb.tables import write_signals
    from vsb.tables.bridge import skip_pandas
    {_ROWS}
    skip_pandas()
    write_signals(Path({str(tmp_path / "a.parquet")!r}), rows)
    print("pandas" in sys.modules)
    import pandas  # still importable by anyone who asks for it
    print(pandas.__name__)
    """
    assert _run(code).split() == ["False", "pandas"]


def test_without_it_pyarrow_imports_pandas_and_the_bytes_are_the_same(tmp_path: Path) -> None:
    # The other half: pyarrow does import pandas unless told (so the test above can fail),
    # and the Parquet bytes do not depend on it.
    code = f"""
    import sys
    from pathlib import Path
    from vsb.tables import write_signals
    {_ROWS}
    write_signals(Path({str(tmp_path / "b.parquet")!r}), rows)
    print("pandas" in sys.modules)
    """
    assert _run(code) == "True"
    skipped = f"""
    from pathlib import Path
    from vsb.tables import write_signals
    from vsb.tables.bridge import skip_pandas
    {_ROWS}
    skip_pandas()
    write_signals(Path({str(tmp_path / "a.parquet")!r}), rows)
    """
    _run(skipped)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_a_block_is_lifted_after_the_conversion_and_pandas_already_loaded_is_used() -> None:
    code = """
    import sys
    import pyarrow as pa
    from vsb.tables import to_arrow
    from vsb.tables.bridge import skip_pandas, skipping
    skip_pandas()
    n = len(sys.meta_path)
    to_arrow([{"scene": 1}], ("scene",), None)
    print(skipping(), len(sys.meta_path) == n)
    import pandas as pd
    print(pa.array(pd.Series([1, 2])).to_pylist())
    """
    assert _run(code).splitlines() == ["True True", "[1, 2]"]


def test_a_stage_process_writes_without_pandas(tmp_path: Path) -> None:
    code = f"""
    import sys
    from pathlib import Path
    from vsb.release.isolate import run_isolated
    from vsb.tables import write_signals
    {_ROWS}

    class Quiet:
        def start(self, *a): pass
        def advance(self, *a): pass
        def note(self, *a): pass
        def finish(self, *a): pass

    def stage(progress):
        write_signals(Path({str(tmp_path / "s.parquet")!r}), rows)
        return "pandas" in sys.modules

    print(run_isolated(stage, Quiet()), "pandas" in sys.modules)
    """
    assert _run(code) == "False False"
