"""VinaBench's metrics against the sealed oracle (issue 47, item 5): the literal reference
judge reading VinaBench's questions (``judge``), the ``vinabench`` evaluator asked of the
simulators' frames through it (``ask``), and which injected fault labels each metric catches
(``validity``: ``validation/vinabench_validity.csv`` and ``.json``)."""
