"""Scores corrected for the judge's own error (issue 39).

A judge's pass rates are corrected for its sensitivity (it passes a true fact) and
specificity (it fails a false one), measured on the run's oracle frames against the sealed
truth (``vsb.validation.truth``); frames without an oracle never enter that measurement.
``errors.py`` measures the judge and resamples the measurement, ``estimate.py`` corrects a
story table's pass rates with it, ``apply.py`` puts the result into a ``ScoresReport``
(``vsb score --corrected``, the release built with ``--judge``), ``noisy.py`` is a reference
judge of known noise for the tests and the coverage benchmark. docs/validation.md states
the estimator, its bound and its assumption.
"""
