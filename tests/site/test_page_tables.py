"""``nested_table``: the stability page's downloads flatten a list of parents, each with a
list of items, into one row per item under its parent's key columns."""

from __future__ import annotations

from types import SimpleNamespace as NS

from vsb.site.page_tables import nested_table


def test_one_row_per_child_under_its_parents_key() -> None:
    two = [NS(model="m1", rank=1), NS(model="m2", rank=2)]
    parents = [
        NS(condition="c1", evaluator="rules", models=two),
        NS(condition="c2", evaluator="vlm", models=[]),
        NS(condition="c3", evaluator="vlm", models=[NS(model="m1", rank=None)]),
    ]
    t = nested_table(parents, "models", ("evaluator", "condition"), ("model", "rank"), "T")
    assert t.columns == ("evaluator", "condition", "model", "rank")
    assert t.rows == [
        ("rules", "c1", "m1", 1),
        ("rules", "c1", "m2", 2),
        ("vlm", "c3", "m1", None),
    ]
    assert t.title == "T"
