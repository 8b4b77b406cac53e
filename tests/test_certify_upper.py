"""The refinement's upper bound ``U' = (F_A + I_A)(F_B + I_B)`` without its GEMM.

:func:`ozaki.core.certify.upper_product` forms ``U'`` from ``G' = F_A F_B`` and line sums
where the lines hold no zero, and by exact GEMMs of the other lines only. Its values must
be the GEMM's exactly (an int64 reference here), on lines with zeros of both signs, inf
and NaN (``I = 0``), none, a few or most of them; and whole products must keep their
bits against the refinement that always ran the GEMM.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki.backends import get_backend
from ozaki.core import certify

CPU, NP = get_backend("cpu"), get_backend("numpy")


def _operand(rng, shape, lines, axis):
    """Spread FP64 data; the lines ``lines`` (along ``axis``) hold zeros, inf or NaN."""
    X = rng.standard_normal(shape) * np.exp(rng.standard_normal(shape))
    for i in lines:
        line = X[i] if axis == 0 else X[:, i]
        spots = rng.integers(0, line.size, rng.integers(1, 4))
        line[spots] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan], spots.size)
    return X


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from(["none", "few", "most"]),
       st.sampled_from([CPU, NP]), st.booleans())
def test_upper_product_is_the_exact_gemm(seed, zeros, backend, given_out):
    """``U'`` equals the integer GEMM of ``F + I`` whichever way it is formed, fresh or
    in the memory given (the refinement's workspace plane, here full of NaNs)."""
    rng = np.random.default_rng(seed)
    m, k, n = (int(x) for x in rng.integers(1, 40, 3))
    r = min(20, (53 - int(np.ceil(np.log2(k)))) // 2 - 1)
    share = {"none": 0.0, "few": 0.15, "most": 0.9}[zeros]
    ra = np.flatnonzero(rng.random(m) < share)
    cb = np.flatnonzero(rng.random(n) < share)
    A, B = _operand(rng, (m, k), ra, 0), _operand(rng, (k, n), cb, 1)
    FA = np.floor(rng.uniform(0, 2 ** r, (m, k)))
    FB = np.floor(rng.uniform(0, 2 ** r, (k, n)))
    if rng.random() < 0.3:  # floors at the top of the range: U' near k 2**(2r)
        FA[:] = 2 ** r - 1
        FB[:] = 2 ** r - 1
    IA = (A != 0) & np.isfinite(A)
    IB = (B != 0) & np.isfinite(B)
    want = (FA.astype(np.int64) + IA) @ (FB.astype(np.int64) + IB)
    exact = backend.exact_engine()
    G = exact.matmul(FA, FB, 2 ** r - 1, 2 ** r - 1)
    G0, FA0, FB0 = G.copy(), FA.copy(), FB.copy()
    oa, ob = backend.operand(A[None], 0), backend.operand(B[None], 1)
    out = np.full((m, n), np.nan) if given_out else None
    U, gemms = certify.upper_product(backend, exact, oa, ob, FA, FB, G, r,
                                     FA.sum(axis=1), FB.sum(axis=0), IA.sum(axis=1),
                                     IB.sum(axis=0), out=out)
    assert U.dtype == np.float64 and U.shape == (m, n)
    if given_out:
        assert U is out or np.shares_memory(U, out)
    np.testing.assert_array_equal(U.astype(np.int64), want)
    assert np.all(U == want)  # and the float is that integer (|U'| <= 2**51)
    np.testing.assert_array_equal(G, G0)  # the lower bound is left as it was
    sparse_r, sparse_c = (~IA).any(axis=1), (~IB).any(axis=0)
    # the floors hold F + I, the operands of U''s GEMMs, where some line has a zero;
    # else no pass touched them
    some = sparse_r.any() or sparse_c.any()
    np.testing.assert_array_equal(FA, FA0 + IA if some else FA0)
    np.testing.assert_array_equal(FB, FB0 + IB if some else FB0)
    if sparse_r.sum() * n + m * sparse_c.sum() >= m * n:
        assert gemms == 1
    else:
        assert gemms == int(sparse_r.any()) + int(sparse_c.any())


def _full_upper(backend, exact, oa, ob, FA, FB, G, r, rs, cs, nA, nB, out=None):
    """The refinement as it first was: ``U'`` always by one fresh GEMM of ``F + I``."""
    backend.add_nonzeros(oa, FA[None])
    backend.add_nonzeros(ob, FB[None])
    return exact.matmul(FA, FB, 2 ** r, 2 ** r), 1


@pytest.mark.parametrize("n, seed, scheme, zeros", [
    (257, 2, "int8", False), (300, 1, "int8", True), (200, 7, "fp8", True),
    (180, 5, "fp64", False)])
def test_products_keep_their_bits(n, seed, scheme, zeros, monkeypatch):
    """``ozaki.dgemm`` on spread inputs whose certificate refines a block: result, info
    and error bound equal to those with ``U'`` by a whole GEMM (with zeros in some lines:
    the partial GEMMs; without: none)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) * np.exp(2 * rng.standard_normal((n, n)))
    B = rng.standard_normal((n, n)) * np.exp(2 * rng.standard_normal((n, n)))
    if zeros:
        A[::7, 3] = 0.0
        B[5, ::11] = 0.0
    got = []
    for upper in (certify.upper_product, _full_upper):
        monkeypatch.setattr(certify, "upper_product", upper)
        got.append(ozaki.dgemm(A, B, scheme=scheme, bounds=True, return_info=True))
    (C1, i1), (C2, i2) = got
    assert i1.refined_block != (0, 0)  # the case under test
    assert C1.tobytes() == C2.tobytes()
    assert i1.error_bound.tobytes() == i2.error_bound.tobytes()
    skip = {"seconds", "error_bound", "gemms"}
    assert {k: v for k, v in vars(i1).items() if k not in skip} == \
        {k: v for k, v in vars(i2).items() if k not in skip}
    # without zeros U' costs no GEMM; with them, at most the two partial ones
    assert i1.gemms - i2.gemms in ((-1,) if not zeros else (-1, 0, 1))


@pytest.mark.parametrize("zeros", [False, True])
def test_complex_products_keep_their_bits(zeros, monkeypatch):
    """``ozaki.zgemm``: the embedding's lines (``[A_r, A_i]`` rows, ``[B_r; -B_i]`` and
    ``[B_i; B_r]`` columns) count their nonzeros as the refinement's operands do, so the
    sweep is taken exactly where those lines hold no zero: the same bits as the GEMM."""
    rng = np.random.default_rng(11)
    n = 150

    def spread():
        return rng.standard_normal((n, n)) * np.exp(2 * rng.standard_normal((n, n)))

    A, B = spread() + 1j * spread(), spread() + 1j * spread()
    if zeros:
        A.real[::9, 2] = 0.0   # a zero in the real part only: the row is sparse
        B.imag[4, ::13] = 0.0  # in the imaginary part only: both embedded columns are
    got = []
    for upper in (certify.upper_product, _full_upper):
        monkeypatch.setattr(certify, "upper_product", upper)
        got.append(ozaki.zgemm(A, B, scheme="int8", bounds=True, return_info=True))
    (C1, i1), (C2, i2) = got
    assert i1.refined_block != (0, 0)
    assert C1.tobytes() == C2.tobytes()
    assert i1.error_bound.tobytes() == i2.error_bound.tobytes()
    assert i1.max_bound_ratio == i2.max_bound_ratio and i1.num_moduli == i2.num_moduli


@pytest.mark.parametrize("batch, num_moduli, fallback", [
    (None, "auto", "none"), (None, 16, "exact"), (3, "auto", "exact"), (3, 16, "exact")])
def test_per_entry_reads_the_last_refined_step(batch, num_moduli, fallback, monkeypatch):
    """Where every slice is refined, the per-entry pass takes the ratios of each slice's
    last refinement step (at the count it settled on) instead of forming them again: the
    same result, fallback entries and info as the pass that forms them (forced here by
    forgetting those steps)."""
    from ozaki.core import decisions
    rng = np.random.default_rng(3)
    shape = (180, 180) if batch is None else (batch, 120, 120)
    A = rng.standard_normal(shape) * np.exp(2 * rng.standard_normal(shape))
    B = rng.standard_normal(shape) * np.exp(2 * rng.standard_normal(shape))
    refine = decisions._Accurate.refine
    got = []
    for forget in (False, True):
        def refine_then(self, *args, forget=forget):
            out = refine(self, *args)
            if forget:
                self.last.clear()
            return out
        monkeypatch.setattr(decisions._Accurate, "refine", refine_then)
        got.append(ozaki.matmul(A, B, scheme="int8", mode="accurate", num_moduli=num_moduli,
                                fallback=fallback, return_info=True))
    (C1, i1), (C2, i2) = got
    assert i1.refined_block != (0, 0)
    if num_moduli != "auto":  # a low explicit count: some entries fail and fall back
        assert 0 < i1.fallback_entries < A.size
    assert C1.tobytes() == C2.tobytes()
    for key, value in vars(i1).items():  # per-slice fields of a stack are arrays
        if key != "seconds":
            np.testing.assert_array_equal(value, getattr(i2, key), err_msg=key)
