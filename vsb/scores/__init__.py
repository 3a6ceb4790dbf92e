"""Scores: per-run pass rates, story-clustered bootstrap CIs, paired comparisons, rank stability
and judge-swap stability, per evaluator.

Entry points: ``vsb.scores.compute.score_run`` (-> ``ScoresReport``),
``vsb.scores.compare.compare_run`` and ``vsb.scores.write.write_scores``. The typed
outputs are in ``vsb.scores.models``; the evaluator axis (selection, verdict counts,
evaluators that did not apply) in ``vsb.scores.axis``; conditional coherence's knock-ons in
``vsb.scores.knockon``. Nothing here imports scipy (it is slow to import).
"""
