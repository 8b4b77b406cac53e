"""Stacked, complex and prepared products, and the partition semantics of the decisions.

* ``ozaki.matmul``: numpy's shapes and broadcasting; each slice bitwise equal to
  ``ozaki.dgemm`` (or ``zgemm``) on that slice, whatever the counts, fallbacks,
  shared operands and layouts of the stack.
* ``ozaki.zgemm``: exact complex references (Fractions), the per-part target and
  bounds, BLAS semantics, special values, engines, the GEMM count.
* ``ozaki.prepare``: prepared operands give the bits of unprepared calls.
* Partitions: column blocks and k-pieces decide as the whole does
  (:mod:`ozaki.core.decisions`), and :func:`ozaki.core.pipeline.emulate` given the whole's
  decision restricted to a column block gives the whole's bits.
"""

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ozaki
from ozaki.core import decisions
from ozaki.api.arguments import policy_for, resolve
from ozaki.core.backend import Operand
from ozaki.core.kind import REAL, kind_of
from ozaki.backends import get_backend
from ozaki.core.moduli import auto_num_moduli
from ozaki.core.operands import Prepared
from ozaki.core.pipeline import Options, decide, emulate
from validation.reference import fraction_matmul, test_matrix

U = Fraction(1, 2 ** 53)
SCHEMES = ["fp64", "int8", "fp8", "int7"]
MODES = ["accurate", "fast"]


def bits(C):
    return np.ascontiguousarray(C).view(np.int64)


def same_bits(X, Y):
    X, Y = np.asarray(X), np.asarray(Y)
    if X.dtype.kind not in "fc":
        return X.shape == Y.shape and X.dtype == Y.dtype and np.array_equal(X, Y)
    return X.shape == Y.shape and X.dtype == Y.dtype and np.array_equal(bits(X), bits(Y))


# A product whose entry (0, 0) needs the exact fallback with the int8 scheme:
# (AB)_00 = 1 comes from 1e-300 * 1e300, invisible next to the 1e300 in row 0.
FALLBACK_A = np.array([[1e300, 1e-300, 1.0], [2.0, 3.0, -1.0], [0.5, 1e-300, 4.0]])
FALLBACK_B = np.array([[0.0, 1.0], [1e300, 1.0], [0.0, 2.0]])


def mixed_stack(rng, b, m, k, n, phis):
    """Stacks (b, m, k) and (b, k, n) whose slice ``g`` has exponent spread ``phis[g]``.

    Slices with ``phi >= 4`` also pair the small entries of ``A``'s rows with the
    large ones of ``B``'s columns (every other ``l`` scaled by ``2**+-30``), so they
    reliably need more moduli in accurate mode than ``phi = 0`` slices.
    """
    A = np.stack([test_matrix(m, k, phis[g % len(phis)], rng) for g in range(b)])
    B = np.stack([test_matrix(k, n, phis[g % len(phis)], rng) for g in range(b)])
    for g in range(b):
        if phis[g % len(phis)] >= 4:
            A[g][:, ::2] *= 2.0 ** 30
            B[g][::2] *= 2.0 ** -30
    return A, B


def crandom(rng, m, n, phi=1.0):
    return test_matrix(m, n, phi, rng) + 1j * test_matrix(m, n, phi, rng)


# -- 1. matmul: numpy's shapes, broadcasting, values, errors, out ---------------

SHAPES = [
    ((5,), (5, 2)),            # 1-D @ 2-D
    ((3, 5), (5,)),            # 2-D @ 1-D
    ((5,), (5,)),              # 1-D @ 1-D: 0-d result
    ((5,), (4, 5, 2)),         # 1-D @ 3-D
    ((4, 3, 5), (5,)),         # 3-D @ 1-D
    ((2, 1, 3, 5), (3, 5, 2)),  # batches broadcast both ways
    ((3, 5), (4, 5, 2)),       # shared left operand
    ((4, 3, 5), (5, 2)),       # shared right operand
    ((1, 1, 3, 5), (4, 5, 2)),
    ((0, 3, 5), (5, 2)),       # empty batch
    ((2, 0, 3, 5), (1, 5, 2)),
    ((3, 0), (0, 2)),          # k = 0
    ((2, 3, 0), (0, 4)),
    ((0, 5), (5, 2)),          # m = 0
    ((3, 5), (5, 0)),          # n = 0
]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_shapes_and_small_integers(sa, sb, rng):
    A = rng.integers(-9, 10, sa).astype(np.float64)
    B = rng.integers(-9, 10, sb).astype(np.float64)
    want = np.matmul(A, B)
    C, info = ozaki.matmul(A, B, return_info=True)
    assert type(C) is type(want) and C.dtype == np.float64  # a scalar for 1-D @ 1-D
    assert C.shape == np.shape(want)
    assert np.array_equal(C, want)  # small integers: exact in FP64 and in the emulation
    batch = np.broadcast_shapes(np.shape(A)[:-2] if A.ndim > 1 else (),
                                np.shape(B)[:-2] if B.ndim > 1 else ())
    assert np.shape(info.slice_moduli) == batch
    Cz, iz = ozaki.matmul(A + 1j * A[..., ::-1], B, bounds=True)  # complex path
    assert Cz.dtype == np.complex128 and Cz.shape == np.shape(want)
    assert np.array_equal(Cz, np.matmul(A + 1j * A[..., ::-1], B))
    # a complex product's bound is complex (one per part), empty products included
    assert iz.error_bound.dtype == np.complex128 and iz.error_bound.shape == Cz.shape
    assert np.all(iz.error_bound.real >= 0) and np.all(iz.error_bound.imag >= 0)


@pytest.mark.parametrize("sa,sb", [s for s in SHAPES if 0 not in s[0] + s[1]])
def test_matmul_values_close_to_numpy(sa, sb, rng):
    A, B = rng.standard_normal(sa), rng.standard_normal(sb)
    C = ozaki.matmul(A, B)
    want = np.matmul(A, B)
    absab = np.matmul(np.abs(A), np.abs(B))
    assert C.shape == np.shape(want)
    assert np.all(np.abs(C - want) <= 4 * 2.0 ** -53 * (np.abs(want) + absab))


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_matmul_broadcasting_property(data):
    dims = st.integers(0, 3)
    m, k, n = data.draw(dims), data.draw(dims), data.draw(dims)
    nb = data.draw(st.integers(0, 3))
    batch = data.draw(st.lists(st.integers(0, 3), min_size=nb, max_size=nb))
    # each side drops leading dimensions and sets some to 1 at random
    def side():
        drop = data.draw(st.integers(0, len(batch)))
        return [1 if data.draw(st.booleans()) else d for d in batch[drop:]]
    ba, bb = side(), side()
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    A = rng.integers(-20, 21, tuple(ba) + (m, k)).astype(np.float64)
    B = rng.integers(-20, 21, tuple(bb) + (k, n)).astype(np.float64)
    if data.draw(st.booleans()) and not ba:
        A = A[0] if m else rng.integers(-20, 21, (k,)).astype(np.float64)
    want = np.matmul(A, B)
    C = ozaki.matmul(A, B, mode=data.draw(st.sampled_from(MODES)))
    assert C.shape == want.shape and np.array_equal(C, want)


def test_matmul_errors(rng):
    with pytest.raises(ValueError, match="inner dimensions differ"):
        ozaki.matmul(np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        ozaki.matmul(np.ones(4), np.ones(5))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        ozaki.matmul(np.ones((2, 3, 4)), np.ones(3))
    with pytest.raises(ValueError, match="do not broadcast"):
        ozaki.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match="do not broadcast"):
        ozaki.matmul(np.ones((2, 1, 3, 4)), np.ones((3, 2, 4, 5)))
    with pytest.raises(ValueError, match="at least 1-D"):
        ozaki.matmul(np.float64(2.0), np.ones(3))


def test_matmul_out(rng):
    A, B = rng.standard_normal((4, 3, 5)), rng.standard_normal((5, 2))
    want = ozaki.matmul(A, B)
    out = np.full((4, 3, 2), np.nan)
    assert ozaki.matmul(A, B, out=out) is out and same_bits(out, want)
    out0 = np.empty(())
    a, b = rng.standard_normal(5), rng.standard_normal(5)
    assert ozaki.matmul(a, b, out=out0) is out0
    assert same_bits(out0, ozaki.matmul(a, b))
    outz = np.empty((4, 3, 2), np.complex128)
    assert ozaki.matmul(A + 1j, B, out=outz) is outz
    assert same_bits(outz, ozaki.matmul(A + 1j, B))
    for bad in (np.empty((4, 2, 3)), np.empty((3, 2)), np.empty((4, 3, 2), np.float32),
                np.empty((4, 3, 2), np.complex128), [[0.0] * 2] * 3):
        with pytest.raises(ValueError, match="out must be a float64 ndarray of shape"):
            ozaki.matmul(A, B, out=bad)
    with pytest.raises(ValueError, match="out must be a complex128"):
        ozaki.matmul(A + 1j, B, out=np.empty((4, 3, 2)))
    with pytest.raises(ValueError, match="out must be a float64 ndarray of shape \\(\\)"):
        ozaki.matmul(a, b, out=np.empty(1))


# -- 2. each slice of a stack is dgemm on that slice -------------------------------

def check_slices(A, B, **kw):
    """matmul(A, B) slice by slice against dgemm/zgemm; returns (C, info, per-slice infos)."""
    C, info = ozaki.matmul(A, B, return_info=True, **kw)
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    Ab = np.broadcast_to(A, batch + A.shape[-2:])
    Bb = np.broadcast_to(B, batch + B.shape[-2:])
    f = ozaki.zgemm if np.iscomplexobj(C) else ozaki.dgemm
    infos = []
    for idx in np.ndindex(*batch):
        Cg, ig = f(Ab[idx], Bb[idx], return_info=True, **kw)
        assert same_bits(C[idx], Cg), idx
        assert info.slice_moduli[idx] == ig.num_moduli, idx
        infos.append(ig)
    assert info.slice_moduli.shape == batch
    assert info.num_moduli == max(i.num_moduli for i in infos)
    assert info.uncertified == sum(i.uncertified for i in infos)
    assert info.fallback_entries == sum(i.fallback_entries for i in infos)
    assert info.exact_entries == sum(i.exact_entries for i in infos)
    return C, info, infos


@pytest.mark.parametrize("scheme,engine", [("fp64", "cpu-blas"), ("int8", "cpu-blas"),
                                           ("int8", "cpu-onednn"), ("int7", "cpu-onednn"),
                                           ("fp64", "k-blocks of 64")])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_products_in_the_results_memory_change_no_bit(scheme, engine, mode, batch, rng,
                                                      monkeypatch):
    """A piece too large to keep its exact products writes each into its own part of the
    result before the store pass reduces it (``host`` of
    :func:`ozaki.core.passes.piece_products`): the bits of the product plane in the
    workspace, for single products and stacks (one piece a slice), where the INT32
    products alternate between the two halves of their part."""
    if engine == "k-blocks of 64":  # each modular product reduced block by block in place
        from ozaki.backends.engines import BlasEngine
        engine = BlasEngine(max_kblock=64)
    elif engine not in ozaki.available_engines():
        pytest.skip(f"{engine} is not available here")
    from ozaki.core import passes
    given, real = [], passes.piece_products

    def hosted(*args):
        given.append(args[7] is not None)
        return real(*args)

    # 8 N m n > 32 MiB: not kept whole; 8 N m k > 8 MiB: one block of columns
    A = rng.standard_normal(batch + (1000, 200)) * np.exp(rng.standard_normal(batch + (1000, 1)))
    B = rng.standard_normal(batch + (200, 1000))
    kw = dict(scheme=scheme, engine=engine, mode=mode, return_info=True)
    monkeypatch.setattr(passes, "piece_products", hosted)
    C, info = ozaki.matmul(A, B, **kw)
    assert given and all(given)  # every piece wrote into the result
    monkeypatch.setattr(passes, "piece_products", lambda *args: real(*args[:7]))
    C_ws, info_ws = ozaki.matmul(A, B, **kw)
    assert np.array_equal(bits(C), bits(C_ws))
    assert info.num_moduli == info_ws.num_moduli and info.uncertified == info_ws.uncertified
    assert np.allclose(C, np.matmul(A, B), rtol=1e-12, atol=1e-12 * np.abs(C).max())


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("count", ["auto", 7])
def test_stack_slices_are_dgemm(scheme, mode, count, rng):
    A, B = mixed_stack(rng, 4, 3, 24, 2, [0.0, 4.0])
    C, info, infos = check_slices(A, B, scheme=scheme, mode=mode, num_moduli=count)
    if count == "auto" and mode == "accurate":
        # phi = 0 slices need fewer moduli than phi = 4 ones: the counts are per slice
        assert len(set(info.slice_moduli.tolist())) > 1
        assert info.slice_moduli[0] < info.slice_moduli[1]
    if count != "auto":
        assert (info.slice_moduli == count).all()


def test_stack_fast_mode_counts_differ_per_slice(rng):
    # fast mode, fp8: one dominant entry per line needs one modulus less than flat lines
    k = 64
    flat_a, flat_b = np.ones((4, k)), np.ones((k, 3))
    spike_a, spike_b = np.full((4, k), 2.0 ** -30), np.full((k, 3), 2.0 ** -30)
    spike_a[:, 0] = spike_b[0] = 1.0
    A, B = np.stack([flat_a, spike_a, flat_a]), np.stack([flat_b, spike_b, flat_b])
    C, info, infos = check_slices(A, B, scheme="fp8", mode="fast")
    assert info.slice_moduli[0] != info.slice_moduli[1]


@pytest.mark.parametrize("count", ["auto", 12])
@pytest.mark.parametrize("fallback", [None, "exact", "none"])
def test_stack_with_a_fallback_slice(count, fallback, rng):
    A = np.stack([test_matrix(3, 3, 1.0, rng), FALLBACK_A, test_matrix(3, 3, 1.0, rng)])
    B = np.stack([test_matrix(3, 2, 1.0, rng), FALLBACK_B, test_matrix(3, 2, 1.0, rng)])
    _, one = ozaki.dgemm(FALLBACK_A, FALLBACK_B, scheme="int8", num_moduli=count,
                         fallback=fallback, return_info=True)
    C, info, infos = check_slices(A, B, scheme="int8", num_moduli=count, fallback=fallback)
    assert infos[1].uncertified > 0 and infos[1].fallback == one.fallback
    if one.fallback == "exact":
        assert info.fallback == "exact" and info.fallback_entries >= one.fallback_entries > 0
        assert C[1, 0, 0] == 1.0
    else:
        assert info.fallback_entries == 0 and C[1, 0, 0] != 1.0
    if count == "auto" and fallback != "none":
        assert one.fallback == "exact"


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("count", ["auto", 8])
def test_stack_shared_operands(scheme, mode, count, rng):
    kw = dict(scheme=scheme, mode=mode, num_moduli=count)
    A2, B2 = test_matrix(3, 20, 2.0, rng), test_matrix(20, 2, 2.0, rng)
    As, Bs = mixed_stack(rng, 3, 3, 20, 2, [0.0, 4.0, 1.0])
    Bs[2] *= 2.0 ** 40  # partners of very different magnitude
    As[2] *= 2.0 ** -40
    check_slices(A2, Bs, **kw)                   # (m, k) @ (b, k, n)
    check_slices(As, B2, **kw)                   # (b, m, k) @ (k, n)
    check_slices(A2[None, None], Bs[:, None], **kw)  # (1, 1, m, k) @ (b, 1, k, n)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("mode", MODES)
def test_stack_fortran_ordered_slices(scheme, mode, rng):
    A, B = mixed_stack(rng, 3, 4, 16, 3, [0.0, 4.0])
    AF = np.ascontiguousarray(A.transpose(0, 2, 1)).transpose(0, 2, 1)  # F-ordered slices
    BF = np.ascontiguousarray(B.transpose(0, 2, 1)).transpose(0, 2, 1)
    assert AF[0].flags.f_contiguous and not AF[0].flags.c_contiguous
    kw = dict(scheme=scheme, mode=mode)
    C = ozaki.matmul(A, B, **kw)
    for X, Y in ((AF, BF), (AF, B), (A, BF)):
        Cf, _, _ = check_slices(X, Y, **kw)
        assert same_bits(Cf, C)
    C2 = ozaki.matmul(np.asfortranarray(A[0]), BF, **kw)  # shared F-ordered operand
    assert same_bits(C2, ozaki.matmul(A[0], B, **kw))


def test_stack_bounds_match_slices(rng):
    A, B = mixed_stack(rng, 3, 3, 12, 2, [0.0, 4.0])
    for mode in MODES:
        C, info = ozaki.matmul(A, B, mode=mode, scheme="int8", num_moduli=9, bounds=True)
        assert info.error_bound.shape == C.shape
        for g in range(3):
            _, ig = ozaki.dgemm(A[g], B[g], mode=mode, scheme="int8", num_moduli=9,
                                bounds=True)
            assert same_bits(info.error_bound[g], ig.error_bound)


# -- 3. zgemm against exact complex products -------------------------------------

def complex_exact(A, B):
    """Exact ``Re AB``, ``Im AB`` and ``|Ar||Br| + |Ai||Bi|``, ``|Ar||Bi| + |Ai||Br|``."""
    A, B = np.asarray(A, np.complex128), np.asarray(B, np.complex128)
    ar, ai, br, bi = A.real, A.imag, B.real, B.imag
    F = fraction_matmul
    rr, ii, ri, ir = F(ar, br), F(ai, bi), F(ar, bi), F(ai, br)
    m, n = A.shape[0], B.shape[1]
    re = [[rr[i][j] - ii[i][j] for j in range(n)] for i in range(m)]
    im = [[ri[i][j] + ir[i][j] for j in range(n)] for i in range(m)]
    arr, aii, brr, bii = (np.abs(x) for x in (ar, ai, br, bi))
    t1, t2, t3, t4 = F(arr, brr), F(aii, bii), F(arr, bii), F(aii, brr)
    absre = [[t1[i][j] + t2[i][j] for j in range(n)] for i in range(m)]
    absim = [[t3[i][j] + t4[i][j] for j in range(n)] for i in range(m)]
    return re, im, absre, absim


def complex_cases(rng):
    cases = {"random": (crandom(rng, 3, 10), crandom(rng, 10, 2)),
             "phi = 4": (crandom(rng, 3, 12, 4.0), crandom(rng, 12, 2, 4.0))}
    X, Y = crandom(rng, 3, 6), crandom(rng, 6, 2)
    tiny = 1e-9 * crandom(rng, 6, 2)
    cases["cancellation"] = (np.concatenate((X, X), axis=1), np.concatenate((Y, -Y + tiny)))
    return cases


def rounded(x: Fraction) -> float:
    """``fl(x)``: correctly rounded, +-inf beyond the overflow threshold."""
    if abs(x) >= 2 ** 1024 - 2 ** 970:
        return np.inf if x > 0 else -np.inf
    return float(x)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("mode", MODES)
def test_zgemm_exact_reference_target_and_bounds(scheme, mode, rng):
    for name, (A, B) in complex_cases(rng).items():
        re, im, absre, absim = complex_exact(A, B)
        for count in ("auto", 5):
            C, info = ozaki.zgemm(A, B, scheme=scheme, mode=mode, num_moduli=count,
                                  bounds=True)
            eb = info.error_bound
            assert C.dtype == np.complex128 and eb.dtype == np.complex128
            assert eb.shape == C.shape
            for i in range(C.shape[0]):
                for j in range(C.shape[1]):
                    er = abs(Fraction(C[i, j].real) - re[i][j])
                    ei = abs(Fraction(C[i, j].imag) - im[i][j])
                    assert er <= Fraction(eb[i, j].real), (name, count, i, j)
                    assert ei <= Fraction(eb[i, j].imag), (name, count, i, j)
                    if mode == "accurate" and info.certified:
                        assert er <= U * abs(re[i][j]) + U * absre[i][j], (name, count, i, j)
                        assert ei <= U * abs(im[i][j]) + U * absim[i][j], (name, count, i, j)
            if count == "auto":
                assert info.certified or info.fallback == "exact", name
                assert info.bound_kind == ("componentwise" if mode == "accurate"
                                           else "normwise")
                if mode == "accurate":  # auto meets the per-part target everywhere
                    for i in range(C.shape[0]):
                        for j in range(C.shape[1]):
                            er = abs(Fraction(C[i, j].real) - re[i][j])
                            ei = abs(Fraction(C[i, j].imag) - im[i][j])
                            assert er <= U * abs(re[i][j]) + U * absre[i][j], (name, i, j)
                            assert ei <= U * abs(im[i][j]) + U * absim[i][j], (name, i, j)
            # without bounds: the same bits
            C2 = ozaki.zgemm(A, B, scheme=scheme, mode=mode, num_moduli=count)
            assert same_bits(C2, C)


@pytest.mark.parametrize("ta", ["N", "T", "C"])
@pytest.mark.parametrize("tb", ["N", "T", "C"])
def test_zgemm_transposes(ta, tb, rng):
    A, B = crandom(rng, 3, 7), crandom(rng, 7, 2)
    op = {"N": lambda X: X, "T": lambda X: X.T, "C": lambda X: X.conj().T}
    X, Y = op[ta](A), op[tb](B)  # each op is an involution: op(X) = A, op(Y) = B
    assert np.array_equal(op[ta](X), A) and np.array_equal(op[tb](Y), B)
    C = ozaki.zgemm(X, Y, trans_a=ta, trans_b=tb)
    assert same_bits(C, ozaki.zgemm(A, B))
    assert np.allclose(C, A @ B, rtol=1e-14, atol=1e-14)
    # against numpy's op(X) op(Y) directly on other operands
    P = crandom(rng, *((5, 4) if ta == "N" else (4, 5)))
    Q = crandom(rng, *((4, 3) if tb == "N" else (3, 4)))
    C = ozaki.zgemm(P, Q, trans_a=ta, trans_b=tb)
    want = op[ta](P) @ op[tb](Q)
    assert np.allclose(C, want, rtol=1e-14, atol=1e-14)
    if ta == tb == "C":  # real operands: 'C' is 'T'
        R = rng.standard_normal((4, 3))
        assert same_bits(ozaki.zgemm(R, R, trans_a="C"), ozaki.zgemm(R.T, R))


def test_zgemm_alpha_beta(rng):
    A, B, C0 = crandom(rng, 3, 6), crandom(rng, 6, 4), crandom(rng, 3, 4)
    for mode in MODES:
        X = ozaki.zgemm(A, B, mode=mode)
        for alpha, beta in ((1.5 - 0.25j, 0.5 + 2j), (1j, -1.0), (1.0, 1j), (2.0, 0.0),
                            (np.complex128(3 - 1j), np.float64(0.75))):
            got = ozaki.zgemm(A, B, C0, alpha=alpha, beta=beta, mode=mode)
            want = X * complex(alpha) if alpha != 1 else X
            if beta != 0:
                want = want + complex(beta) * C0
            assert same_bits(got, want), (alpha, beta)
        assert same_bits(ozaki.zgemm(A, B, C0, alpha=0.0, beta=1j), 1j * C0)
        _, info = ozaki.zgemm(A, B, C0, alpha=0.0, beta=1j, bounds=True)
        assert info.gemms == 0 and info.error_bound.dtype == np.complex128
        assert not info.error_bound.any()
    # beta == 0 never reads C
    assert same_bits(ozaki.zgemm(A, B, np.full((3, 4), np.nan + 0j)), ozaki.zgemm(A, B))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("count", ["auto", 8])
def test_zgemm_near_overflow_is_exactly_rounded(mode, count, rng):
    units = np.array([1.0, -1.0, 1j, -1j, 1 + 1j, 1 - 1j, 0.5])
    for trial in range(6):
        A = rng.choice(units, (3, 4)) * rng.choice([1.5e308, 1e308, 6e307], (3, 1))
        B = rng.choice(units, (4, 3))
        if trial == 0:
            A[0] = [1e308 + 1e308j, 1e308 - 1e308j, 0, 0]  # Re = 3e308 overflows
            B[:, 0] = [1, 1 + 1j, 0, 0]
        C = ozaki.zgemm(A, B, mode=mode, num_moduli=count, scheme="fp64")
        re, im, _, _ = complex_exact(A, B)
        assert not np.isnan(C.real).any() and not np.isnan(C.imag).any()
        for i in range(3):
            for j in range(3):
                assert C[i, j].real == rounded(re[i][j]), (trial, i, j)
                assert C[i, j].imag == rounded(im[i][j]), (trial, i, j)
        if trial == 0:
            assert C[0, 0] == complex(np.inf, 1e308)


@pytest.mark.parametrize("mode", MODES)
def test_zgemm_engines_agree_bitwise(mode, rng):
    A, B = crandom(rng, 4, 40, 2.0), crandom(rng, 40, 3, 2.0)
    for scheme, engines in (("fp8", ("cpu-blas", "cpu-fp8")), ("int8", ("cpu-blas", "cpu-int8"))):
        for count in (9, "auto"):
            got = [ozaki.zgemm(A, B, scheme=scheme, mode=mode, num_moduli=count, engine=e,
                               return_info=True) for e in engines]
            assert got[0][1].num_moduli == got[1][1].num_moduli
            assert same_bits(got[0][0], got[1][0]), (scheme, count)


@pytest.mark.parametrize("mode", MODES)
def test_zgemm_gemm_count(mode, rng):
    A, B = crandom(rng, 4, 30), crandom(rng, 30, 3)
    bound = 1 if mode == "accurate" else 0
    for scheme, engine, per in (("fp64", "cpu-blas", 1), ("int8", "cpu-blas", 1),
                                ("int8", "cpu-int8", 1), ("fp8", "cpu-blas", 1),
                                ("fp8", "cpu-fp8", 3)):
        for N in (4, 9):
            _, info = ozaki.zgemm(A, B, scheme=scheme, engine=engine, mode=mode, num_moduli=N,
                                  return_info=True)
            assert info.refined_block == (0, 0)
            # Gauss: 3 modular products per modulus (not 4), each `per` engine GEMMs
            assert info.gemms == bound + 3 * per * N, (scheme, engine, N)
            _, rinfo = ozaki.dgemm(A.real, B.real, scheme=scheme, engine=engine, mode=mode,
                                   num_moduli=N, return_info=True)
            assert info.gemms - bound == 3 * (rinfo.gemms - bound)


def test_gemm_and_matmul_complex_equal_zgemm(rng):
    A, B, C0 = crandom(rng, 3, 9), crandom(rng, 9, 2), crandom(rng, 3, 2)
    for mode in MODES:
        for scheme in SCHEMES:
            kw = dict(scheme=scheme, mode=mode)
            Z = ozaki.zgemm(A, B, **kw)
            assert same_bits(ozaki.gemm(A, B, **kw), Z)
            assert same_bits(ozaki.gemm(A, B, C0, alpha=2j, beta=-1.0, **kw),
                             ozaki.zgemm(A, B, C0, alpha=2j, beta=-1.0, **kw))
            # a real operand in a complex product: taken as complex
            assert same_bits(ozaki.gemm(A.real, B, **kw), ozaki.zgemm(A.real + 0j, B, **kw))
    # complex stacks, stacks of different counts, shared operands: zgemm per slice
    As = np.stack([crandom(rng, 3, 10, phi) for phi in (0.0, 4.0, 0.0)])
    Bs = np.stack([crandom(rng, 10, 2, phi) for phi in (0.0, 4.0, 0.0)])
    for mode in MODES:
        for count in ("auto", 6):
            for scheme in SCHEMES:
                kw = dict(scheme=scheme, mode=mode, num_moduli=count)
                _, info, _ = check_slices(As, Bs, **kw)
                if mode == "accurate" and count == "auto" and scheme != "fp64":
                    assert len(set(info.slice_moduli.tolist())) > 1
                check_slices(As[0], Bs, **kw)
                check_slices(As, Bs[1], **kw)
                check_slices(As.real, Bs, **kw)  # real stack @ complex stack


@pytest.mark.parametrize("scheme", ["int8", "fp64"])
@pytest.mark.parametrize("count", ["auto", 10])
def test_complex_stack_with_fallback_and_overflow_slices(scheme, count, rng):
    A = np.stack([FALLBACK_A * (1 + 1j), FALLBACK_A + 1j * FALLBACK_A[::-1],
                  crandom(rng, 3, 3), np.full((3, 3), 1e308) * (1 - 1j)])
    B = np.stack([FALLBACK_B * (1 - 2j), FALLBACK_B + 0j, FALLBACK_B * 1j,
                  np.full((3, 2), 1 + 1j)])
    C, info, infos = check_slices(A, B, scheme=scheme, num_moduli=count)
    assert info.exact_entries > 0 and not np.isnan(C.view(np.float64)).any()
    assert C[3, 0, 0] == complex(np.inf, 0.0)  # exact: Re 6e308 overflows, Im 0
    if count == "auto":
        assert info.fallback_entries > 0
    AF = np.ascontiguousarray(A.transpose(0, 2, 1)).transpose(0, 2, 1)
    assert same_bits(ozaki.matmul(AF, B, scheme=scheme, num_moduli=count), C)


# -- 4. prepared operands ----------------------------------------------------------

def partners(rng, k, n, complex_=False):
    """Right operands of very different magnitudes and spreads."""
    make = (lambda r, c, phi: crandom(rng, r, c, phi)) if complex_ else (
        lambda r, c, phi: test_matrix(r, c, phi, rng))
    Bs = [make(k, n, 0.0), make(k, n, 4.0) * 2.0 ** 200, make(k, n, 1.0) * 2.0 ** -300]
    Bs[0][:, 0] *= 2.0 ** 60  # one column far above the others
    return Bs


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_prepared_left_operand(complex_, mode, rng):
    A = crandom(rng, 4, 16, 2.0) if complex_ else test_matrix(4, 16, 2.0, rng)
    f = ozaki.zgemm if complex_ else ozaki.dgemm
    P = ozaki.prepare(A)
    assert isinstance(P, ozaki.PreparedOperand) and P.side == "left" and P.shape == A.shape
    Bs = partners(rng, 16, 3, complex_)
    # the partners' accurate-mode shifts of A differ (they depend on the partner too)
    backend = get_backend()
    kind = kind_of(complex_)
    shifts = [decide(P.stack(kind, backend), _prep(_embed_right(B), 1),
                     _opts("fp64", "accurate"), 1, kind).s for B in Bs]
    assert not all(np.array_equal(shifts[0], x) for x in shifts[1:])
    for rep in range(2):  # the second pass runs with the residue cache filled
        for B in Bs:
            for count in ("auto", 9):
                kw = dict(mode=mode, num_moduli=count)
                want, wi = f(A, B, return_info=True, **kw)
                got, gi = f(P, B, return_info=True, **kw)
                assert same_bits(got, want) and gi.num_moduli == wi.num_moduli
                assert same_bits(f(P, B, **kw), want)  # repeated
                assert same_bits(ozaki.gemm(P, B, **kw), want)
                assert same_bits(ozaki.matmul(P, B, **kw), want)


def _embed_right(B):
    """``B`` as the pipeline holds a right operand (``[Br; Bi]`` when complex)."""
    return np.concatenate((B.real, B.imag)) if np.iscomplexobj(B) else B


@pytest.mark.parametrize("mode", MODES)
def test_prepared_real_operand_in_complex_products(mode, rng):
    A, B = test_matrix(3, 8, 1.0, rng), crandom(rng, 8, 2)
    P, PB = ozaki.prepare(A), ozaki.prepare(B.real, side="right")
    want = ozaki.zgemm(A, B, mode=mode)
    assert same_bits(ozaki.gemm(P, B, mode=mode), want)
    assert same_bits(ozaki.matmul(P, B, mode=mode), want)
    assert same_bits(ozaki.matmul(P, np.stack([B, 2 * B]), mode=mode)[1],
                     ozaki.zgemm(A, 2 * B, mode=mode))
    assert same_bits(ozaki.gemm(A + 1j, PB, mode=mode), ozaki.zgemm(A + 1j, B.real, mode=mode))
    assert same_bits(ozaki.dgemm(P, B.real, mode=mode), ozaki.dgemm(A, B.real, mode=mode))
    v = rng.standard_normal(8)
    assert same_bits(ozaki.matmul(P, v, mode=mode), ozaki.matmul(A, v, mode=mode))
    assert ozaki.matmul(P, v).shape == (3,)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_prepared_right_operand_and_stacks(complex_, mode, rng):
    make = (lambda r, c, phi: crandom(rng, r, c, phi)) if complex_ else (
        lambda r, c, phi: test_matrix(r, c, phi, rng))
    f = ozaki.zgemm if complex_ else ozaki.dgemm
    B = make(12, 3, 2.0)
    P = ozaki.prepare(B, side="right")
    lefts = [make(4, 12, 0.0), make(4, 12, 4.0) * 2.0 ** 300, make(4, 12, 1.0) * 2.0 ** -100]
    for A in lefts + lefts:
        for count in ("auto", 7):
            kw = dict(mode=mode, num_moduli=count)
            assert same_bits(f(A, P, **kw), f(A, B, **kw))
            assert same_bits(ozaki.gemm(A, P, **kw), f(A, B, **kw))
    # a prepared 2-D operand shared by a stack, on either side, and a prepared stack
    As = np.stack(lefts)
    for count in ("auto", 7):
        kw = dict(mode=mode, num_moduli=count)
        want = ozaki.matmul(As, B, **kw)
        assert same_bits(ozaki.matmul(As, P, **kw), want)
        assert same_bits(ozaki.matmul(As, P, **kw), want)
        PA = ozaki.prepare(lefts[1])
        Bs = np.stack([B, B * 2.0 ** -500, make(12, 3, 4.0)])
        assert same_bits(ozaki.matmul(PA, Bs, **kw), ozaki.matmul(lefts[1], Bs, **kw))
        P23 = ozaki.prepare(np.stack([As, 2.0 ** 7 * As]))  # batch (2, 3) @ (3, k, n)
        assert same_bits(ozaki.matmul(P23, Bs, **kw),
                         ozaki.matmul(np.stack([As, 2.0 ** 7 * As]), Bs, **kw))
        PS = ozaki.prepare(As)  # full batch shape
        assert same_bits(ozaki.matmul(PS, Bs, **kw), ozaki.matmul(As, Bs, **kw))
        assert same_bits(ozaki.matmul(PS, P, **kw), want)


@pytest.mark.parametrize("mode", MODES)
def test_prepared_fortran_and_non_float64(mode, rng):
    A = np.asfortranarray(test_matrix(5, 9, 1.0, rng))
    B = test_matrix(9, 4, 1.0, rng)
    for X in (A, rng.integers(-50, 50, (5, 9)).astype(np.int32),
              A.astype(np.float32)):
        P = ozaki.prepare(X)
        want = ozaki.dgemm(X, B, mode=mode)
        for _ in range(2):
            assert same_bits(ozaki.dgemm(P, B, mode=mode), want)
    PB = ozaki.prepare(np.asfortranarray(B), side="right")
    for _ in range(2):
        assert same_bits(ozaki.dgemm(A, PB, mode=mode), ozaki.dgemm(A, B, mode=mode))


def test_prepared_residue_cache_is_used(rng, monkeypatch):
    A, B = test_matrix(4, 16, 1.0, rng), test_matrix(16, 3, 1.0, rng)
    backend = get_backend()
    calls = []
    real = backend.residues

    def counting(op, shift, moduli, *args):
        calls.extend(moduli)  # one entry per modulus plane formed
        return real(op, shift, moduli, *args)

    P = ozaki.prepare(A)
    want = ozaki.dgemm(A, B, mode="fast", num_moduli=8)
    monkeypatch.setattr(backend, "residues", counting)
    first = ozaki.dgemm(P, B, mode="fast", num_moduli=8)
    n_first = len(calls)
    calls.clear()
    second = ozaki.dgemm(P, B, mode="fast", num_moduli=8)
    assert n_first == 16  # 8 moduli, both operands
    assert len(calls) == 8  # only B's planes: A's planes come from the cache
    assert same_bits(first, want) and same_bits(second, want)
    calls.clear()
    unkept = ozaki.prepare(A, keep_residues=False)
    assert same_bits(ozaki.dgemm(unkept, B, mode="fast", num_moduli=8), want)
    assert same_bits(ozaki.dgemm(unkept, B, mode="fast", num_moduli=8), want)
    assert len(calls) == 32


def test_prepared_array_is_a_read_only_copy(rng):
    A, B = test_matrix(4, 6, 1.0, rng), test_matrix(6, 3, 1.0, rng)
    want = ozaki.dgemm(A, B)
    P = ozaki.prepare(A)
    assert not P.array.flags.writeable and not np.may_share_memory(P.array, A)
    with pytest.raises(ValueError, match="read-only"):
        P.array[0, 0] = 1.0
    A[:] = 7.0  # the caller's array changes later
    assert same_bits(ozaki.dgemm(P, B), want)
    assert same_bits(ozaki.matmul(P, B), want)
    Bc = B.copy()
    PB = ozaki.prepare(Bc, side="right")
    Bc *= -3.0
    assert same_bits(ozaki.dgemm(A, PB), ozaki.dgemm(A, B))


def test_prepared_misuse_raises(rng):
    A, B = test_matrix(4, 6, 1.0, rng), test_matrix(6, 3, 1.0, rng)
    PA, PB = ozaki.prepare(A), ozaki.prepare(B, side="right")
    with pytest.raises(ValueError, match="prepared as the left operand"):
        ozaki.dgemm(B.T, PA)
    with pytest.raises(ValueError, match="prepared as the right operand"):
        ozaki.dgemm(PB, A)
    with pytest.raises(ValueError, match="prepared as the right operand"):
        ozaki.matmul(PB, B)
    with pytest.raises(ValueError, match="prepared as the left operand"):
        ozaki.zgemm(A + 0j, ozaki.prepare(B + 0j))
    for kw in (dict(trans_a="T"), dict(trans_a=True), dict(trans_a="C")):
        with pytest.raises(ValueError, match="used as it is"):
            ozaki.gemm(PA, A.T, **kw)
    with pytest.raises(ValueError, match="used as it is"):
        ozaki.zgemm(A + 0j, ozaki.prepare(A + 0j, side="right"), trans_b="C")
    with pytest.raises(ValueError, match="must be 2-D"):
        ozaki.gemm(ozaki.prepare(np.stack([A, A])), B)
    with pytest.raises(TypeError, match="A is complex: use ozaki.zgemm"):
        ozaki.dgemm(ozaki.prepare(A + 1j), B)
    with pytest.raises(ValueError, match="at least 2-D"):
        ozaki.prepare(np.ones(3))
    with pytest.raises(ValueError, match="full batch shape"):
        ozaki.matmul(ozaki.prepare(np.ones((2, 4, 6))), np.ones((3, 1, 6, 3)))


# -- 5. partition semantics ----------------------------------------------------------

@pytest.mark.parametrize("scheme", SCHEMES)
def test_fast_mode_columns_and_rows_do_not_depend_on_the_others(scheme, rng):
    A, B = test_matrix(5, 20, 2.0, rng), test_matrix(20, 3, 2.0, rng)
    Bx = np.concatenate((B, 2.0 ** 100 * test_matrix(20, 4, 4.0, rng)), axis=1)
    Ax = np.concatenate((A, 2.0 ** -80 * test_matrix(3, 20, 4.0, rng)), axis=0)
    for count in (5, 11):
        kw = dict(scheme=scheme, mode="fast", num_moduli=count)
        C = ozaki.dgemm(A, B, **kw)
        assert same_bits(ozaki.dgemm(A, Bx, **kw)[:, :3], C)   # columns appended
        assert same_bits(ozaki.dgemm(Ax, B, **kw)[:5], C)      # rows appended
        assert same_bits(ozaki.dgemm(Ax, Bx, **kw)[:5, :3], C)
        for j in range(3):  # a column's bits from that column alone
            assert same_bits(ozaki.dgemm(A, B[:, j:j + 1], **kw)[:, 0], C[:, j])


def _opts(scheme, mode, count="auto", bounds=False, fallback=None):
    scheme, count, mode, eng = resolve(scheme, count, mode, "auto")
    return Options(scheme, count, mode, eng, policy_for(fallback, count), bounds,
                   get_backend())


def _prep(X, outer):
    return Prepared(Operand(X if X.ndim == 3 else X[None], outer), get_backend())


def _restrict(dec: decisions.Decision, J) -> decisions.Decision:
    """The whole's decision for the columns ``J`` of ``B``."""
    return dec.block(cols=J)


def _same_decision(d1: decisions.Decision, d2: decisions.Decision) -> None:
    for name in ("counts", "s", "t", "max_ratio", "uncertified"):
        assert np.array_equal(getattr(d1, name), getattr(d2, name)), name
    for name in ("mask", "bound"):
        x, y = getattr(d1, name), getattr(d2, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert same_bits(x, y), name
    assert (d1.kind, d1.gemms, d1.refined) == (d2.kind, d2.gemms, d2.refined)


PARTITION_CASES = ["random", "spread", "fallback", "stack"]


def _partition_case(name, rng):
    if name == "random":
        return test_matrix(4, 24, 1.0, rng)[None], test_matrix(24, 6, 1.0, rng)[None]
    if name == "spread":
        A, B = test_matrix(4, 24, 4.0, rng), test_matrix(24, 6, 4.0, rng)
        B[:, 4:] *= 2.0 ** 400
        return A[None], B[None]
    if name == "fallback":
        return FALLBACK_A[None], np.concatenate((FALLBACK_B, FALLBACK_B[:, ::-1]), 1)[None]
    return mixed_stack(rng, 3, 4, 24, 6, [0.0, 4.0, 1.0])


@pytest.mark.parametrize("case", PARTITION_CASES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("count", ["auto", 8])
def test_column_blocks_with_the_whole_decision_give_the_whole_bits(case, mode, count, rng):
    scheme = "int8"
    A, B = _partition_case(case, rng)
    b, m, n = A.shape[0], A.shape[1], B.shape[2]
    opts = _opts(scheme, mode, count, bounds=True, fallback="exact")
    whole, info = ozaki.matmul(A, B, scheme=scheme, mode=mode, num_moduli=count,
                               fallback="exact", bounds=True)
    pa, pb = _prep(A, 0), _prep(B, 1)
    dec = decide(pa, pb, opts, b)
    keep = _restrict(dec, slice(None))  # a copy: emulate may write into its bound
    out = np.empty((b, m, n))
    winfo = emulate(pa, pb, opts, out, decision=_restrict(keep, slice(None)))
    assert same_bits(out, whole)  # the harness reproduces the public call
    assert same_bits(winfo.error_bound, info.error_bound)
    if case == "fallback" and mode == "accurate":
        assert winfo.fallback_entries > 0
    for cut in (n // 2, 1):
        halves = (slice(0, cut), slice(cut, n))
        parts, bounds, fb = [], [], 0
        for J in halves:
            pbh = _prep(np.ascontiguousarray(B[:, :, J]), 1)
            oh = np.empty((b, m, J.stop - J.start))
            ih = emulate(pa, pbh, opts, oh, decision=_restrict(keep, J))
            parts.append(oh)
            bounds.append(ih.error_bound)
            fb += ih.fallback_entries
        assert same_bits(np.concatenate(parts, axis=2), whole)
        assert same_bits(np.concatenate(bounds, axis=2), info.error_bound)
        assert fb == info.fallback_entries


@pytest.mark.parametrize("mode", MODES)
def test_emulate_leaves_a_given_decision_alone(mode, rng):
    # one decision serves several pieces (or repeated calls): emulate must not finish
    # the bound in place in the caller's decision (it did: the second call's bound
    # then counted the final rounding twice)
    A, B = test_matrix(3, 8, 1.0, rng)[None], test_matrix(8, 2, 1.0, rng)[None]
    opts = _opts("int8", mode, 8, bounds=True)
    pa, pb = _prep(A, 0), _prep(B, 1)
    dec = decide(pa, pb, opts, 1)
    before = dec.bound.copy()
    out1, out2 = np.empty((1, 3, 2)), np.empty((1, 3, 2))
    i1 = emulate(pa, pb, opts, out1, decision=dec)
    i2 = emulate(pa, pb, opts, out2, decision=dec)
    assert same_bits(dec.bound, before)
    assert same_bits(out1, out2) and same_bits(i1.error_bound, i2.error_bound)
    _, info = ozaki.dgemm(A[0], B[0], scheme="int8", mode=mode, num_moduli=8, bounds=True)
    assert same_bits(i2.error_bound[0], info.error_bound)


def _column_data(pa, pb_parts, opts, k):
    """Accurate-mode decision data of the whole from column blocks of ``B``: Lines and
    the floor data are per column, so the whole's are the blocks' side by side."""
    lb = decisions.Lines(*(np.concatenate([getattr(p.lines, f) for p in pb_parts], axis=1)
                           for f in ("maxbits", "bad", "nnz")))
    bds, fs = [], []
    for p in pb_parts:
        bd, e, f, _ = decisions.bound_data(opts.backend, opts.engine, pa.op, p.op, pa.lines,
                                           p.lines, opts.scheme, k)
        bds.append(bd)
        fs.append(f)
    bd = decisions.Bound(bds[0].r, np.concatenate([x.G for x in bds], axis=2), bds[0].rF,
                         np.concatenate([x.cF for x in bds], axis=1))
    return lb, bd, e, np.concatenate(fs, axis=1)


@pytest.mark.parametrize("case", PARTITION_CASES)
@pytest.mark.parametrize("count", ["auto", 8])
def test_accurate_decision_from_column_blocks(case, count, rng):
    scheme = "int8"
    A, B = _partition_case(case, rng)
    b, m, k, n = A.shape + (B.shape[2],)
    opts = _opts(scheme, "accurate", count, bounds=True, fallback="exact")
    pa, pb = _prep(A, 0), _prep(B, 1)
    whole = decide(pa, pb, opts, b)
    parts = [_prep(np.ascontiguousarray(B[:, :, J]), 1) for J in (slice(0, 2), slice(2, n))]
    lb, bd, e, f = _column_data(pa, parts, opts, k)
    pw, pbw = _prep(A, 0), _prep(B, 1)
    ref_bd, ref_e, ref_f, _ = decisions.bound_data(opts.backend, opts.engine, pw.op, pbw.op,
                                                   pw.lines, pbw.lines, scheme, k)
    assert np.array_equal(bd.G, ref_bd.G) and np.array_equal(bd.cF, ref_bd.cF)
    assert np.array_equal(f, ref_f) and np.array_equal(e, ref_e)
    from ozaki.core.pipeline import slice_operands
    got = decisions.decide_accurate(replace(opts, want_bound=True), bd, e, f, pa.lines, lb, b,
                                    k, lambda g: slice_operands(pa, pb, g, REAL),
                                    auto_num_moduli(scheme, k))
    _same_decision(got, whole)


def _k_pieces(A, B, cuts):
    """Prepared k-pieces (A's columns, B's rows) at the cut points ``cuts``."""
    edges = [0] + list(cuts) + [A.shape[2]]
    return [(_prep(np.ascontiguousarray(A[:, :, lo:hi]), 0),
             _prep(np.ascontiguousarray(B[:, lo:hi, :]), 1))
            for lo, hi in zip(edges[:-1], edges[1:])]


def _whole_call(case, scheme, mode, count, rng):
    """A partition case, its prepared operands and the whole call's decision."""
    A, B = _partition_case(case, rng)
    opts = _opts(scheme, mode, count, bounds=True, fallback="exact")
    pa, pb = _prep(A, 0), _prep(B, 1)
    return A, B, opts, pa, pb, decide(pa, pb, opts, A.shape[0])


@pytest.mark.parametrize("case", PARTITION_CASES)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("count", ["auto", 8])
def test_k_pieces_combine_to_the_whole_decision(case, scheme, count, rng):
    A, B, opts, pa, pb, whole = _whole_call(case, scheme, "accurate", count, rng)
    b, k = A.shape[0], A.shape[2]
    ref_bd, e0, f0, _ = decisions.bound_data(opts.backend, opts.engine, pa.op, pb.op,
                                             pa.lines, pb.lines, scheme, k)
    for cuts in ([k // 2], [1, k - 5]):
        if k < 6 and len(cuts) > 1:
            cuts = [1, 2]
        pieces = _k_pieces(A, B, cuts)
        # 1. the lines, reduced over k (MAX, OR, SUM)
        la = decisions.Lines.combine([p[0].lines for p in pieces])
        lb = decisions.Lines.combine([p[1].lines for p in pieces])
        for f in ("maxbits", "bad", "nnz"):
            assert np.array_equal(getattr(la, f), getattr(pa.lines, f)), f
            assert np.array_equal(getattr(lb, f), getattr(pb.lines, f)), f
        # 2. each piece's floor data with the whole's quantisers, summed over k
        parts = []
        for qa, qb in pieces:
            bd, e, f, _ = decisions.bound_data(opts.backend, opts.engine, qa.op, qb.op,
                                               la, lb, scheme, k)
            assert np.array_equal(e, e0) and np.array_equal(f, f0)
            assert bd.r == ref_bd.r
            parts.append(bd)
        bd = decisions.Bound.combine(parts)
        for f in ("rF", "cF"):
            assert same_bits(getattr(bd, f), getattr(ref_bd, f)), f
        # the same exact integers: FP32 in the whole call, summed in FP64
        assert bd.G.dtype == np.float64 and ref_bd.G.dtype == np.float32
        assert np.array_equal(bd.G, ref_bd.G)
        # 3. the same decision (the refinement reads the whole slices: see the report)
        from ozaki.core.pipeline import slice_operands
        got = decisions.decide_accurate(replace(opts, want_bound=True), bd, e0, f0, la, lb, b,
                                        k, lambda g: slice_operands(pa, pb, g, REAL),
                                        auto_num_moduli(scheme, k))
        _same_decision(got, whole)


@pytest.mark.parametrize("case", PARTITION_CASES)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("count", ["auto", 8])
def test_k_pieces_combine_to_the_whole_fast_decision(case, scheme, count, rng):
    from ozaki.core import scaling
    A, B, opts, pa, pb, whole = _whole_call(case, scheme, "fast", count, rng)
    b, k = A.shape[0], A.shape[2]
    h = scaling.norm_bits(k)
    backend = get_backend()
    pieces = _k_pieces(A, B, [k // 2])
    la = decisions.Lines.combine([p[0].lines for p in pieces])
    lb = decisions.Lines.combine([p[1].lines for p in pieces])
    norms = []
    for side, lines in ((0, la), (1, lb)):
        E, zero = lines.exponents  # the whole's exponents
        shift = np.where(zero, 0, h - E).astype(np.int64)
        got = decisions.Norms.combine([decisions.Norms(h, *backend.norm_sums(p[side].op, shift))
                                       for p in pieces])
        ref = decisions.Norms(h, *backend.norm_sums((pa, pb)[side].op, shift))
        assert np.array_equal(got.S2, ref.S2) and np.array_equal(got.S1, ref.S1)
        norms.append(got.normwise(lines))
    dec = decisions.decide_fast(replace(opts, want_bound=True), norms[0], norms[1], b,
                                auto_num_moduli(scheme, k))
    _same_decision(dec, whole)


# -- 6. bad input -------------------------------------------------------------------

def test_bad_input(rng):
    A, B = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 2))
    with pytest.raises(TypeError, match="A is a masked array"):
        ozaki.matmul(np.ma.masked_array(A, mask=np.zeros_like(A, bool)), B)
    with pytest.raises(TypeError, match="B is a masked array"):
        ozaki.matmul(A, np.ma.masked_array(B))
    with pytest.raises(TypeError, match="masked array"):
        ozaki.prepare(np.ma.masked_array(B))
    with pytest.raises(TypeError, match="zgemm"):
        ozaki.dgemm(A[0] + 1j, B)
    with pytest.raises(TypeError, match="B is complex: use ozaki.zgemm"):
        ozaki.dgemm(A[0], B * 1j)
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        ozaki.prepare(B, side="middle")
    with pytest.raises(TypeError, match="real or complex numeric"):
        ozaki.matmul(A.astype(str), B)


def test_chunked_stacks_keep_the_bits_of_each_slice(rng, monkeypatch):
    # a stack that goes through the moduli in several chunks gives each slice's bits
    import ozaki.core.pipeline as pipeline
    A = rng.standard_normal((7, 5, 12))
    B = rng.standard_normal((7, 12, 4))
    whole = {mode: ozaki.matmul(A, B, mode=mode) for mode in ("accurate", "fast")}
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 3 * 8 * (5 * 12 + 12 * 4 + 5 * 4))
    for mode in ("accurate", "fast"):
        C = ozaki.matmul(A, B, mode=mode)
        assert same_bits(C, whole[mode])
        for g in range(7):
            assert same_bits(C[g], ozaki.dgemm(A[g], B[g], mode=mode))
        shared = ozaki.matmul(A[0], B, mode=mode)
        for g in range(7):
            assert same_bits(shared[g], ozaki.dgemm(A[0], B[g], mode=mode))


@pytest.mark.parametrize("order", ["C", "F"])
def test_column_blocks_of_a_wide_product_keep_its_bits(rng, monkeypatch, order):
    # a single product with a small A runs through the moduli a block of B's columns
    # at a time (A's planes formed once); the bits are those of one whole pass
    import ozaki.core.pipeline as pipeline
    A = test_matrix(6, 9, 2.0, rng)
    B = np.asarray(test_matrix(9, 2000, 2.0, rng), order=order)
    B[3, 1500] = np.inf  # special values and fallback entries in later blocks
    B[:, 1700] *= 1e-200
    monkeypatch.setattr(pipeline, "column_block", lambda A, m, k, n, N: n)
    whole = {(mode, scheme): ozaki.dgemm(A, B, mode=mode, scheme=scheme, bounds=True,
                                         return_info=True)
             for mode in MODES for scheme in ("fp64", "int8")}
    widths = []
    monkeypatch.setattr(pipeline, "column_block",
                        lambda A, m, k, n, N: widths.append(512) or 512)
    P = ozaki.prepare(B, side="right")
    for (mode, scheme), (C, info) in whole.items():
        got, gi = ozaki.dgemm(A, B, mode=mode, scheme=scheme, bounds=True, return_info=True)
        assert same_bits(got, C) and same_bits(gi.error_bound, info.error_bound)
        assert gi.fallback_entries == info.fallback_entries
        for _ in range(2):  # a prepared B keeps each block's planes
            assert same_bits(ozaki.dgemm(A, P, mode=mode, scheme=scheme), C)
    assert widths


def test_wide_products_are_cut_into_column_blocks_only_when_A_is_small():
    import ozaki.core.pipeline as pipeline
    assert pipeline.column_block(None, 64, 64, 2 ** 20, 6) < 2 ** 20
    assert pipeline.column_block(None, 64, 64, 2 ** 20, 6) % 512 == 0
    assert pipeline.column_block(None, 4096, 4096, 4096, 6) == 4096  # A's planes too big
    assert pipeline.column_block(None, 64, 64, 1000, 6) == 1000      # too narrow to pay


def test_row_and_column_blocks_with_the_whole_decision_give_the_whole_bits(rng):
    # a 2 x 2 grid of blocks, as the MPI layer will hold them
    A, B = test_matrix(6, 40, 2.0, rng)[None], test_matrix(40, 5, 2.0, rng)[None]
    for mode in MODES:
        opts = _opts("int8", mode, "auto", bounds=True, fallback="exact")
        whole, info = ozaki.matmul(A, B, scheme="int8", mode=mode, bounds=True)
        dec = decide(_prep(A, 0), _prep(B, 1), opts, 1)
        for I in (slice(0, 2), slice(2, 6)):
            for J in (slice(0, 3), slice(3, 5)):
                pa = _prep(np.ascontiguousarray(A[:, I]), 0)
                pb = _prep(np.ascontiguousarray(B[:, :, J]), 1)
                out = np.empty((1, I.stop - I.start, J.stop - J.start))
                part = emulate(pa, pb, opts, out, decision=dec.block(I, J))
                assert same_bits(out, whole[:, I, J])
                assert same_bits(part.error_bound, info.error_bound[:, I, J])


def test_gemm_may_write_its_result_into_C(rng):
    A, B = rng.standard_normal((5, 7)), rng.standard_normal((7, 4))
    C0 = rng.standard_normal((5, 4))
    want = ozaki.gemm(A, B, C0, alpha=2.0, beta=-1.0)
    C = C0.copy()
    got = ozaki.gemm(A, B, C, alpha=2.0, beta=-1.0, out=C)
    assert got is C and same_bits(C, want)


def test_prepared_residues_keep_only_the_last_shifts(rng):
    P = ozaki.prepare(test_matrix(6, 30, 1.0, rng))
    partners = [test_matrix(30, 4, phi, rng) * 2.0 ** (40 * j)
                for j, phi in enumerate((0.0, 2.0, 4.0, 1.0))]
    most = 0
    for Bj in partners * 2:
        C, info = ozaki.dgemm(P, Bj, return_info=True)
        assert same_bits(C, ozaki.dgemm(P.array, Bj))
        most = max(most, info.num_moduli)
        kept = P.stack(REAL, get_backend()).residues
        assert len(kept) <= most  # one plane per modulus used, nothing older
    lean = ozaki.prepare(P.array, keep_residues=False)
    ozaki.dgemm(lean, partners[0])
    stack = lean.stack(REAL, get_backend())
    assert not stack.residues and stack.floors  # the floors are kept either way


def test_pieces_on_worker_threads_keep_the_bits(rng, monkeypatch):
    # stack chunks and column blocks run on worker threads with serial passes; the
    # bits are those of the pieces run one after the other
    import threadpoolctl

    import ozaki.core.pieces as pieces
    import ozaki.core.pipeline as pipeline
    for module in (pipeline, pieces):  # 4 slices a chunk; 512-column blocks of the wide case
        monkeypatch.setattr(module, "CHUNK_BYTES", 8 * 3 * 64 * 4)
    cases = [(rng.standard_normal((13, 8, 8)), rng.standard_normal((13, 8, 8))),
             (rng.standard_normal((8, 8)), rng.standard_normal((13, 8, 8)) * 1e-100),
             (test_matrix(4, 8, 2.0, rng), test_matrix(8, 3000, 2.0, rng))]
    used = []
    # small calls run on one thread (CPUBackend.sized): ask for two workers anyway
    monkeypatch.setattr(type(get_backend()), "pass_threads", lambda self: 2)
    real = pipeline.piece_threads
    monkeypatch.setattr(pipeline, "piece_threads",
                        lambda *a: used.append(real(*a)) or used[-1])
    def blas_threads():
        return {d["filepath"]: d["num_threads"] for d in threadpoolctl.threadpool_info()
                if d["user_api"] == "blas"}
    before = blas_threads()
    threaded = [ozaki.matmul(A, B, bounds=True, return_info=True) for A, B in cases]
    after = blas_threads()
    assert all(after[path] == v for path, v in before.items())  # BLAS threads untouched
    monkeypatch.setattr(pipeline, "piece_threads", lambda *a: 1)
    for (A, B), (C, info) in zip(cases, threaded):
        want, wi = ozaki.matmul(A, B, bounds=True, return_info=True)
        assert same_bits(C, want) and same_bits(info.error_bound, wi.error_bound)
    assert used == [2, 2, 2]  # every case went to the workers


def test_calls_leave_the_blas_threads_of_other_threads_alone(rng, monkeypatch):
    # while calls run their pieces on worker threads, the process's BLAS thread count
    # (what another thread's numpy product gets) never changes
    import threading

    import threadpoolctl

    import ozaki.core.pieces as pieces
    import ozaki.core.pipeline as pipeline
    for module in (pipeline, pieces):
        monkeypatch.setattr(module, "CHUNK_BYTES", 8 * 3 * 64 * 4)
    monkeypatch.setattr(type(get_backend()), "pass_threads", lambda self: 2)

    def blas_threads():
        return {d["filepath"]: d["num_threads"] for d in threadpoolctl.threadpool_info()
                if d["user_api"] == "blas"}
    before = blas_threads()
    A, B = rng.standard_normal((64, 8, 8)), rng.standard_normal((64, 8, 8))
    seen, done = [], threading.Event()

    def calls():
        try:
            for _ in range(5):
                ozaki.matmul(A, B)
        finally:
            done.set()
    worker = threading.Thread(target=calls)
    worker.start()
    while not done.is_set():
        seen.append(blas_threads())
    worker.join()
    assert seen and all(s == before for s in seen)


def test_complex_bound_keeps_each_part_when_the_other_is_inf():
    # an inf bound on one part (an entry kept without certificate) leaves the other finite
    from ozaki.api.calls import parts_bound
    from ozaki.core.kind import COMPLEX
    eb = np.array([[[1.0, 2.0, np.inf, 4.0]]])  # [Re | Im] of two entries
    got = parts_bound(eb, 2, COMPLEX)
    assert np.array_equal(got.real, [[[1.0, 2.0]]]) and np.array_equal(got.imag,
                                                                      [[[np.inf, 4.0]]])
    assert parts_bound(eb, 2, REAL) is eb
