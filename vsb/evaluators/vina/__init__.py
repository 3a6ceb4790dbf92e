"""The internals of the ``vinabench`` evaluator (``vsb.evaluators.vinabench``): VinaBench's
questions and their answers (``questions``), the calls asked of a run (``calls``)."""
