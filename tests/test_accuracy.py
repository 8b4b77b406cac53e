"""Acceptance: default counts are no worse than 2x native FP64, against exact references."""

import numpy as np
import pytest

import ozaki
from validation.reference import exact_matmul, fraction_matmul, test_matrix

U = 2.0 ** -53
CASES = [(256, 16), (4096, 16), (65536, 8), (2 ** 17, 4)]  # (k, m = n)


def max_rel(C, ref):
    nz = ref != 0
    return float(np.max(np.abs(C[nz] - ref[nz]) / np.abs(ref[nz])))


@pytest.fixture(scope="module")
def problems():
    rng = np.random.default_rng(7)
    out = {}
    for k, m in CASES:
        for phi in (0.0, 0.5, 1.0, None):
            A = test_matrix(m, k, phi, rng)
            B = test_matrix(k, m, phi, rng)
            ref = exact_matmul(A, B)
            out[k, phi] = (A, B, ref, max_rel(A @ B, ref))
    return out


def test_reference_matches_fractions(rng):
    A = test_matrix(3, 40, 2.0, rng)
    B = test_matrix(40, 3, 2.0, rng)
    F = fraction_matmul(A, B)
    assert np.array_equal(exact_matmul(A, B), np.array([[float(x) for x in r] for r in F]))


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["int8", "fp8", "fp64", "int7"])
@pytest.mark.parametrize("mode", ["accurate", "fast"])
@pytest.mark.parametrize("k", [k for k, _ in CASES])
def test_default_count_within_twice_native(problems, scheme, mode, k):
    for phi in (0.0, 0.5, 1.0, None):
        A, B, ref, native = problems[k, phi]
        C, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, return_info=True)
        err = max_rel(C, ref)
        limit = max(2 * native, 2.0 ** -52)
        assert err <= limit, (scheme, mode, k, phi, info.num_moduli, err, native)


@pytest.mark.parametrize("scheme", ["int8", "fp8", "fp64"])
def test_error_decreases_with_moduli(scheme, rng):
    A = test_matrix(8, 512, 1.0, rng)
    B = test_matrix(512, 8, 1.0, rng)
    ref = exact_matmul(A, B)
    scale = np.abs(A) @ np.abs(B)
    lo = {"int8": 6, "fp8": 5, "fp64": 3}[scheme]
    errs = [np.max(np.abs(ozaki.dgemm(A, B, scheme=scheme, num_moduli=n) - ref) / scale)
            for n in range(lo, lo + 4)]
    assert errs[0] > 1e-10 and all(b < a / 8 for a, b in zip(errs, errs[1:]) if a > 1e-15)


def test_wide_exponent_range_with_many_moduli(rng):
    """phi = 4: with the largest counts the result is FP64-grade (normalised error < 2u)."""
    A = test_matrix(8, 1024, 4.0, rng)
    B = test_matrix(1024, 8, 4.0, rng)
    ref = exact_matmul(A, B)
    scale = np.abs(A) @ np.abs(B)
    for scheme, n in (("int8", 20), ("fp8", 18), ("fp64", 8)):
        for mode in ("accurate", "fast"):
            C = ozaki.dgemm(A, B, scheme=scheme, num_moduli=n, mode=mode)
            assert np.max(np.abs(C - ref) / scale) < 2 * U, (scheme, mode)
