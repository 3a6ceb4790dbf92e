"""Scores: per-run pass rates, story-clustered bootstrap CIs, paired comparisons, rank stability.

Entry points: ``vsb.scores.compute.score_run`` (-> ``ScoresReport``),
``vsb.scores.compute.compare_run`` and ``vsb.scores.write.write_scores``. The typed
outputs are in ``vsb.scores.models``. Nothing here imports scipy (it is slow to import).
"""
