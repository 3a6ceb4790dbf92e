"""The Fréchet distance (scipy's sqrtm, as the FID tools take it) against independent
computations: the eigenvalues of sqrt(Σ1) Σ2 sqrt(Σ1); for covariances of samples, the
singular values of A1 A2ᵀ (centred samples: Tr sqrt(Σ1 Σ2) is their sum over
sqrt((n1 - 1)(n2 - 1)), exact even where Σ1 Σ2 is singular); closed forms for diagonal and 1-D
Gaussians. Then its handling of singular and complex roots, FID's statistics, CLIP-I's cosines.

Within 1e-6 where the covariances have full rank. Where they do not (fewer images than
dimensions, as FID on a few hundred images always is), sqrtm of the singular product is
itself off by about sqrt(machine epsilon) per zero eigenvalue: within 1e-6 of the distance
(relative): the FID tools' own error, which vsb keeps so that its figures are theirs. Measured
once in FID's 2048 dimensions (a minute of sqrtm each, so not here): 2.1e-7 relative (1.5e-3
absolute) with 3 samples, 8.0e-8 (4.1e-4) with 50."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from reference_helpers import from_samples
from scipy import linalg

from vsb.errors import InputError
from vsb.evaluators.embed import reference
from vsb.evaluators.embed.reference import fid, frechet_distance, gaussian_stats, pair_cosines

TOL = 1e-6


def _psd_sqrt(s: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(s)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def independent(mu1: Any, s1: Any, mu2: Any, s2: Any) -> float:
    """Tr sqrt(Σ1 Σ2) = Σ sqrt(eigenvalues of the symmetric sqrt(Σ1) Σ2 sqrt(Σ1)): no sqrtm,
    no product of the two covariances' roots taken by scipy."""
    r1 = _psd_sqrt(np.asarray(s1, dtype=np.float64))
    middle = r1 @ s2 @ r1
    w = np.linalg.eigvalsh((middle + middle.T) / 2)
    diff = np.asarray(mu1) - np.asarray(mu2)
    return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2 * np.sqrt(np.clip(w, 0, None)).sum())


def _samples(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) / np.sqrt(d)
    b = 0.5 + rng.normal(size=(n, d)) * rng.uniform(0.2, 2.0, size=d)
    return a, b


def _gaussians(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, ...]:
    a, b = _samples(rng, n, d)
    return a.mean(0), np.cov(a, rowvar=False), b.mean(0), np.cov(b, rowvar=False)


@pytest.mark.parametrize(("n", "d"), [(200, 4), (400, 16), (500, 64), (300, 128)])
def test_full_rank_covariances_equal_the_eigenvalue_computation(n: int, d: int) -> None:
    rng = np.random.default_rng(d)
    a, b = _samples(rng, n, d)
    mu1, s1, mu2, s2 = a.mean(0), np.cov(a.T), b.mean(0), np.cov(b.T)
    got = frechet_distance(mu1, s1, mu2, s2)
    assert abs(got - independent(mu1, s1, mu2, s2)) < TOL
    assert abs(got - from_samples(a, b)) < TOL
    # symmetric, and zero against itself
    assert abs(got - frechet_distance(mu2, s2, mu1, s1)) < TOL
    assert abs(frechet_distance(mu1, s1, mu1, s1)) < TOL


@pytest.mark.parametrize(("n", "d"), [(5, 16), (10, 64), (30, 200), (3, 512), (40, 512)])
def test_singular_covariances_from_fewer_samples_than_dimensions(n: int, d: int) -> None:
    """FID on few images: rank n - 1 covariances, a complex sqrtm whose rounding is dropped."""
    rng = np.random.default_rng(n)
    a, b = _samples(rng, n, d)
    s1 = np.cov(a.T)
    assert np.linalg.matrix_rank(s1) < d
    got = frechet_distance(a.mean(0), s1, b.mean(0), np.cov(b.T))
    assert abs(got - from_samples(a, b)) < TOL * abs(got)


def test_diagonal_covariances_have_a_closed_form() -> None:
    rng = np.random.default_rng(7)
    for d in (1, 3, 50):
        a, b = rng.uniform(0.01, 5, size=d), rng.uniform(0.01, 5, size=d)
        mu1, mu2 = rng.normal(size=d), rng.normal(size=d)
        closed = float(((mu1 - mu2) ** 2).sum() + ((np.sqrt(a) - np.sqrt(b)) ** 2).sum())
        assert abs(frechet_distance(mu1, np.diag(a), mu2, np.diag(b)) - closed) < TOL


def test_one_dimension_takes_scalars() -> None:
    # N(1, 2²) and N(4, 3²): (1 - 4)² + (2 - 3)² = 10
    assert frechet_distance(1.0, 4.0, 4.0, 9.0) == pytest.approx(10.0, abs=TOL)


def test_a_non_finite_root_is_taken_again_with_eps_on_both_diagonals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[np.ndarray] = []
    real = linalg.sqrtm

    def sqrtm(a: np.ndarray) -> np.ndarray:
        calls.append(a)
        return np.full_like(a, np.nan) if len(calls) == 1 else real(a)

    monkeypatch.setattr(linalg, "sqrtm", sqrtm)
    s1, s2 = np.diag([1.0, 0.0]), np.diag([0.0, 4.0])
    got = frechet_distance([0, 0], s1, [0, 0], s2, eps=1e-2)
    assert len(calls) == 2
    shifted = (s1 + 1e-2 * np.eye(2)) @ (s2 + 1e-2 * np.eye(2))
    assert np.allclose(calls[1], shifted)
    assert got == pytest.approx(5.0 - 2 * np.trace(real(shifted)), abs=TOL)


def test_an_imaginary_diagonal_is_an_error_and_rounding_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = np.eye(2, dtype=np.complex128)
    monkeypatch.setattr(linalg, "sqrtm", lambda _a: root)
    root[0, 1] = 0.5j  # off the diagonal: dropped
    assert frechet_distance([0, 0], np.eye(2), [0, 0], np.eye(2)) == pytest.approx(0.0)
    root[1, 1] = 1 + 1e-2j
    with pytest.raises(ValueError, match="imaginary"):
        frechet_distance([0, 0], np.eye(2), [0, 0], np.eye(2))


def test_shapes_must_fit() -> None:
    with pytest.raises(ValueError, match="means"):
        frechet_distance([0, 0], np.eye(2), [0, 0, 0], np.eye(3))
    with pytest.raises(ValueError, match="covariances"):
        frechet_distance([0, 0], np.eye(2), [0, 0], np.eye(3))


def test_fid_fits_mean_and_sample_covariance_gold_first() -> None:
    rng = np.random.default_rng(3)
    gen, ref = rng.normal(size=(40, 6)), 1 + 2 * rng.normal(size=(30, 6))
    mu, sigma = gaussian_stats(gen)
    assert np.allclose(mu, gen.mean(0)) and np.allclose(sigma, np.cov(gen.T, ddof=1))
    assert abs(fid(gen, ref) - from_samples(ref, gen)) < TOL
    assert fid(ref, ref) == pytest.approx(0.0, abs=TOL)
    with pytest.raises(InputError, match="at least 2 images"):
        fid(gen[:1], ref)


def test_pair_cosines_are_rowwise() -> None:
    a = np.array([[1.0, 0.0], [3.0, 4.0], [0.0, 2.0]])
    b = np.array([[2.0, 0.0], [4.0, -3.0], [0.0, -1.0]])
    assert pair_cosines(a, b) == pytest.approx([1.0, 0.0, -1.0])
    with pytest.raises(ValueError):
        pair_cosines(a, b[:2])


def test_many_full_rank_draws() -> None:
    """Forty draws of sizes and dimensions, more samples than dimensions: within 1e-6."""
    rng = np.random.default_rng(2025)
    worst = 0.0
    for _ in range(40):
        d = int(rng.integers(1, 96))
        a, b = _samples(rng, int(rng.integers(2 * d + 2, 400)), d)
        got = frechet_distance(a.mean(0), np.cov(a.T), b.mean(0), np.cov(b.T))
        worst = max(worst, abs(got - from_samples(a, b)))
    assert worst < TOL
    assert reference.IMAGINARY_TOLERANCE == 1e-3


def test_dimensions_without_variance_are_silent_and_exact() -> None:
    """ReLU features: columns that are zero in every image make Σ1 Σ2 exactly singular;
    scipy's warning about it is no error (pytest turns warnings into errors here)."""
    rng = np.random.default_rng(11)
    a, b = (np.maximum(rng.normal(size=(6, 48)), 0) for _ in range(2))
    a[:, :10] = 0.0
    b[:, 5:12] = 0.0
    got = fid(b, a)
    assert abs(got - from_samples(a, b)) < TOL * got
