"""The large evaluation tables on disk: requirement (verdict) rows and signal rows.

Written once per run as Parquet (``RUN/evaluations/{requirements,signals}.parquet``); runs
evaluated before that hold JSON lines, which every reader here still takes. This package is
the only code that knows how these files are stored (docs/CONTRACTS.md); it imports nothing
above the foundation.
"""

from vsb.tables.columns import REQUIREMENT_COLUMNS, SIGNAL_COLUMNS
from vsb.tables.io import (
    column_list,
    is_legacy,
    iter_rows,
    parquet_bytes,
    read_columns,
    read_table,
    requirements_file,
    signals_file,
    to_arrow,
    unit,
    where,
    write_requirements,
    write_rows,
    write_signals,
)

__all__ = [
    "REQUIREMENT_COLUMNS",
    "SIGNAL_COLUMNS",
    "column_list",
    "is_legacy",
    "iter_rows",
    "parquet_bytes",
    "read_columns",
    "read_table",
    "requirements_file",
    "signals_file",
    "to_arrow",
    "unit",
    "where",
    "write_requirements",
    "write_rows",
    "write_signals",
]
