"""``Resampling``: the one bootstrap settings value every report takes (its checks, its
seeded counts and the fields it gives a report)."""

from __future__ import annotations

import numpy as np
import pytest

from vsb.errors import InputError
from vsb.scores.models import Resampled
from vsb.scores.stats.bootstrap import DEFAULT_RESAMPLES, Resampling, resample_counts


def test_defaults_are_the_cli_defaults() -> None:
    s = Resampling()
    assert (s.seed, s.n_resamples, s.confidence) == (0, DEFAULT_RESAMPLES, 0.95)
    assert (s.n_draws, s.alpha) == (1000, 1.0)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (Resampling(n_resamples=0), "--resamples must be ≥ 1, got 0"),
        (Resampling(confidence=1.0), "confidence must be in (0, 1), got 1.0"),
        (Resampling(confidence=0.0), "confidence must be in (0, 1), got 0.0"),
    ],
)
def test_check_refuses_settings_without_an_interval(settings: Resampling, message: str) -> None:
    with pytest.raises(InputError) as err:
        settings.check()
    assert message in str(err.value)


def test_weights_are_the_seeded_counts() -> None:
    s = Resampling(seed=7, n_resamples=50)
    expected = resample_counts(np.random.default_rng(7), 12, 50)
    assert np.array_equal(s.weights(12), expected)
    assert np.array_equal(s.weights(12), s.weights(12))
    assert not np.array_equal(Resampling(seed=8, n_resamples=50).weights(12), expected)


def test_report_fields_are_the_resampled_fields() -> None:
    s = Resampling(seed=3, n_resamples=10, confidence=0.9, n_draws=5, alpha=2.0)
    fields = s.report_fields()
    assert set(fields) == set(Resampled.model_fields)
    assert Resampled(**fields) == Resampled(seed=3, n_resamples=10, confidence=0.9)
