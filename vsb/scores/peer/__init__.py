"""Other benchmarks' tables, computed from vsb's evaluation rows as those benchmarks compute
them (``vinabench``: VinaBench's table, ``scores/vinabench.csv``)."""
