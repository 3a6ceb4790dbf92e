"""Dictionary-encoded columns are read from the Arrow buffers (``vsb.tables.io._indices``),
not through pyarrow's conversions, which import pandas; every index width and sign, nulls
and sliced arrays give what ``to_pylist`` gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from vsb.tables import io


@pytest.mark.parametrize(
    "itype", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16()]
)
def test_indices_of_every_width_sign_null_and_slice(itype: pa.DataType) -> None:
    values = pa.array([f"v{i}" for i in range(200)])
    raw = [0, None, 199, 130, None, 7, 128, 1]
    if pa.types.is_signed_integer(itype) and itype.bit_width == 8:
        raw = [x if x is None or x < 128 else x - 100 for x in raw]
    arr = pa.DictionaryArray.from_arrays(pa.array(raw, type=itype), values)
    for part in (arr, arr.slice(1), arr.slice(3, 4), arr.slice(8)):
        assert io._array_list(part) == part.to_pylist()


def test_reading_a_table_does_not_import_pandas(tmp_path: Path) -> None:
    rows = [
        {"model": "m", "condition": "c", "story_id": "s", "scene": k, "signal": "x",
         "value": 0.5 * k, "evaluator": None if k == 2 else "pairwise"}
        for k in range(1, 4)
    ]  # fmt: skip
    path = tmp_path / "signals.parquet"
    io.write_signals(path, rows)
    code = (
        "import sys; from pathlib import Path; from vsb.tables import io; "
        f"cols = io.read_columns(Path({str(path)!r}), ['model', 'evaluator', 'value']); "
        "assert cols['evaluator'] == ['pairwise', None, 'pairwise'], cols; "
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
