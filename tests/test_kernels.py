"""Exactness of the compiled passes, checked against Python integers."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ozaki.backends.cpu import kernels, lines, reconstruct
from ozaki.core.moduli import modular_constants
from ozaki.backends import get_backend
from ozaki.core.moduli import MODULI, crt_plan, half_range
from ozaki.core.products import karatsuba_digits, square_digits

ALL_MODULI = sorted({p for ms in MODULI.values() for p in ms})
finite = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)


def sym(x, p):
    lo, hi = half_range(p)
    r = x % p
    return r - p if r > hi else r


def trunc_scaled(x, shift):
    return math.trunc(Fraction(x) * Fraction(2) ** shift)


@given(st.integers(-2 ** 53, 2 ** 53), st.sampled_from(ALL_MODULI))
def test_smod_exact_on_full_range(y, p):
    """Two-stage reduction of GEMM outputs up to 2**53 (every integer there is a float)."""
    pf, pinv, c26 = modular_constants(p)
    out = np.empty((1, 1), np.int32)
    reconstruct.store_residues(np.array([[float(y)]]), pf, pinv, c26, out, False)
    assert out[0, 0] == sym(y, p)
    if abs(y) <= 2 ** 52:  # the one-step reduction that a bound of 2**52 allows
        reconstruct.store_residues(np.array([[float(y)]]), pf, pinv, c26, out, True)
        assert out[0, 0] == sym(y, p)


@given(st.integers(-2 ** 52, 2 ** 52), st.sampled_from(ALL_MODULI))
def test_smod_short_exact(y, p):
    assert kernels.smod_short(float(y), float(p), 1.0 / p) == sym(y, p)


@given(st.lists(finite, min_size=1, max_size=16), st.integers(0, 20))
def test_quantize_down_is_the_exact_floor(xs, r):
    X = np.array([[xs]])
    top = max((math.frexp(abs(x))[1] for x in xs if x), default=0)
    shift = r - top
    out = np.empty_like(X)
    bits, zeros = X.view(np.int64), np.zeros((1, len(xs)), np.int64)
    lines.quantize_down(bits, np.array([[shift]]), zeros, out, np.zeros((0, 0), np.int64), 0)
    for x, q in zip(xs, out[0, 0]):
        exact = abs(Fraction(x)) * Fraction(2) ** shift
        assert q == math.floor(exact) and q < 2 ** r
    # the line sums formed in the same pass: rows, and columns (the transposed stack)
    rows, cols = np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64)
    again = np.empty_like(out)
    lines.quantize_down(bits, np.array([[shift]]), zeros, again, rows, 0)
    T = np.ascontiguousarray(X.transpose(0, 2, 1))
    outT = np.empty_like(T)
    lines.quantize_down(T.view(np.int64), zeros.T.copy(), np.array([[shift]]), outT, cols, 1)
    assert np.array_equal(again, out) and np.array_equal(outT[0, :, 0], out[0, 0])
    assert rows[0, 0] == cols[0, 0] == out.sum()


@given(st.lists(finite.filter(lambda v: v != 0), min_size=1, max_size=8))
def test_absmax_bits_and_exponents(xs):
    from ozaki.core.scaling import exponents
    X = np.array([[xs + [np.inf, 0.0]]])
    best, bad, nnz = (a[0] for a in lines.absmax_bits(X.view(np.int64), 0))
    assert bad[0] and nnz[0] == len(xs)
    E, zero = exponents(best)
    m = max(abs(x) for x in xs)
    assert not zero[0] and m < 2.0 ** E[0] if E[0] < 1024 else True
    assert Fraction(m) < Fraction(2) ** int(E[0]) <= 2 * Fraction(m)
    XT = X.transpose(0, 2, 1).copy()
    best_c, bad_c, nnz_c = (a[0] for a in lines.absmax_bits(XT.view(np.int64), 1))
    assert best_c[0] == best[0] and bad_c[0] and nnz_c[0] == len(xs)


@given(st.lists(finite, min_size=1, max_size=24), st.integers(1, 20))
def test_norm_sums_are_exact_integer_sums_of_floors(xs, h):
    X = np.array([[xs]])
    top = max((math.frexp(abs(x))[1] for x in xs if x), default=0)
    shift = h - top
    s2, s1 = (a[0, 0] for a in lines.norm_sums(X.view(np.int64), np.array([[shift]]), 0))
    floors = [math.floor(abs(Fraction(x)) * Fraction(2) ** shift) for x in xs]
    assert s2 == sum(f * f for f in floors) and s1 == sum(floors)
    XT = X.transpose(0, 2, 1).copy()
    c2, c1 = (a[0, 0] for a in lines.norm_sums(XT.view(np.int64), np.array([[shift]]), 1))
    assert (c2, c1) == (s2, s1)


@given(st.integers(1, 5), st.integers(1, 9), st.integers(1, 700), st.integers(1, 20),
       st.integers(0, 2 ** 32))
def test_line_norms_are_the_line_stats_and_norm_sums_in_one_pass(b, r, c, h, seed):
    """One read of each line gives the bits of :func:`absmax_bits` and of
    :func:`norm_sums` at ``h - E`` (0 on all-zero lines), rows and columns,
    with zero lines, non-finite and subnormal entries, and several column chunks."""
    from ozaki.core.scaling import exponents
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((b, r, c)) * np.exp2(rng.integers(-1070, 1000, (b, r, c)))
    X[rng.random((b, r, c)) < 0.2] = 0.0
    X[:, 0] = 0.0  # an all-zero row
    X[..., -1] = 0.0  # an all-zero column
    X[rng.random((b, r, c)) < 0.01] = np.inf
    X[rng.random((b, r, c)) < 0.01] = 5e-324
    bits = X.view(np.int64)
    for axis in (0, 1):
        stats = lines.absmax_bits(bits, axis)
        E, zero = exponents(stats[0])
        sums = lines.norm_sums(bits, np.where(zero, 0, h - E).astype(np.int64), axis)
        got = lines.line_norms(bits, axis, h)
        for x, y in zip(stats + sums, got):
            assert x.dtype == y.dtype and np.array_equal(x, y)


@given(st.integers(1, 4), st.integers(1, 9), st.integers(1, 700), st.integers(1, 20),
       st.integers(0, 2 ** 32))
def test_line_floors_are_the_line_stats_and_floors_in_one_pass(b, r, c, q, seed):
    """One read of each line gives the bits of :func:`absmax_bits` and the floors
    and sums of :func:`quantize_down` at the accurate quantisers ``q - E``, rows
    and columns, with zero lines, non-finite and subnormal entries."""
    from ozaki.core.scaling import accurate_quantizers, exponents
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((b, r, c)) * np.exp2(rng.integers(-1070, 1000, (b, r, c)))
    X[rng.random((b, r, c)) < 0.2] = 0.0
    X[:, 0] = 0.0  # an all-zero row
    X[..., -1] = 0.0  # an all-zero column
    X[rng.random((b, r, c)) < 0.01] = -np.inf
    X[rng.random((b, r, c)) < 0.01] = 5e-324
    bits = X.view(np.int64)
    for axis in (0, 1):
        stats = lines.absmax_bits(bits, axis)
        e = accurate_quantizers(*exponents(stats[0]), q)
        zeros = np.zeros((b, c if axis == 0 else r), np.int64)
        srow, scol = (e, zeros) if axis == 0 else (zeros, e)
        want, want_sums = np.empty((b, r, c), np.float32), np.zeros(e.shape, np.int64)
        lines.quantize_down(bits, srow, scol, want, want_sums, axis)
        got, got_sums = np.full((b, r, c), np.nan, np.float32), np.zeros(e.shape, np.int64)
        got_stats = lines.line_floors(bits, axis, q, got, got_sums)
        for x, y in zip(stats, got_stats):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert np.array_equal(got, want) and np.array_equal(got_sums, want_sums)
        assert (got < 2.0 ** q).all()


@given(st.integers(-2 ** 60, 2 ** 60), st.integers(-2300, 2300))
def test_ldexp_rounds_once(y, e):
    """Against Python's correctly rounded ldexp, subnormal results included."""
    y = float(y)
    try:
        want = math.ldexp(y, e)
    except OverflowError:
        want = math.copysign(math.inf, y)
    assert reconstruct.ldexp(y, e) == want


@pytest.mark.parametrize("scheme,n", [("int8", 16), ("fp8", 13), ("fp64", 6), ("fp64", 20),
                                      ("int8", 2), ("fp8", 20)])
def test_reconstruct_recovers_the_symmetric_integer(scheme, n, rng):
    plan = crt_plan(scheme, n)
    P = plan.P
    bound = int(plan.H)
    vals = [int(v) for v in rng.integers(-min(bound, 2 ** 62), min(bound, 2 ** 62), 40)]
    vals += [bound, -bound, 0, 1, -1, bound // 3, min(bound, 2 ** 53 + 1)]
    vals += [int(Fraction(bound) * Fraction(float(f))) for f in rng.random(20) * 2 - 1]
    dtype = np.int8 if max(plan.moduli) <= 256 else np.int16 if max(plan.moduli) <= 65536 else np.int32
    R = np.array([[[[sym(v, p) for v in vals]]] for p in plan.moduli], dtype=dtype)
    out = np.empty((1, 1, len(vals)))
    shifts = np.array([[5]]), np.zeros((1, len(vals)), np.int64)
    reconstruct.reconstruct(R, plan.weights, plan.p_levels, plan.p_inv, *shifts, out, 0,
                            np.empty((0, 3)), False)
    for v, c in zip(vals, out[0, 0]):
        exact = Fraction(v, 32)
        # within half an ulp plus the documented tail
        err = abs(Fraction(c) - exact)
        ulp = Fraction(2) ** (math.frexp(float(exact))[1] - 53) if v else 0
        assert err <= ulp / 2 + Fraction(plan.tail) / 32 + ulp * Fraction(1, 2 ** 50)
        if plan.levels == 2 and v:
            assert c == float(exact) or err <= Fraction(plan.tail) / 32 + ulp / 2


@pytest.mark.parametrize("num_moduli", [2, 6, 8])
def test_reconstruct_column_blocks_with_c0_give_the_whole_bits(num_moduli, rng):
    """Column blocks (narrow, wide, wider than a tile) written with ``c0`` == one whole call."""
    plan = crt_plan("fp64", num_moduli)
    b, m, n = 3, 5, 700
    R = np.array([rng.integers(*half_range(p), (b, m, n), endpoint=True) for p in plan.moduli],
                 np.int32)
    s, t = rng.integers(-60, 61, (b, m)), rng.integers(-60, 61, (b, n))
    backend = get_backend()
    whole = np.empty((b, m, n))
    backend.reconstruct(R, plan, s, t, whole)
    blocks = np.full((b, m, n), np.nan)
    cuts = [0, 1, 9, 40, 600, 700]
    for c0, c1 in zip(cuts[:-1], cuts[1:]):
        backend.reconstruct(np.ascontiguousarray(R[..., c0:c1]), plan, s, t, blocks, c0=c0)
    assert whole.tobytes() == blocks.tobytes()
    with pytest.raises(ValueError):
        backend.reconstruct(R[..., :9], plan, s, t, blocks, c0=n - 8)
    # from the exact products (any integers up to 2**53 with these residues): the same bits
    P = np.array([R[q] + p * rng.integers(-2 ** 53 // p, 2 ** 53 // p - 1, R.shape[1:])
                  for q, p in enumerate(plan.moduli)], np.float64)
    assert (np.abs(P) <= 2 ** 53).all()
    raw = np.full((b, m, n), np.nan)
    for c0, c1 in zip(cuts[:-1], cuts[1:]):
        backend.reconstruct(np.ascontiguousarray(P[..., c0:c1]), plan, s, t, raw, c0=c0,
                            products=True)
    assert whole.tobytes() == raw.tobytes()
    # products bounded by 2**52 take the one-step reduction: the same bits again
    P = np.where(np.abs(P) <= 2 ** 52, P, np.asarray(R, np.float64))
    short = np.full((b, m, n), np.nan)
    backend.reconstruct(P, plan, s, t, short, products=True, bound=2 ** 52)
    assert whole.tobytes() == short.tobytes()
    with pytest.raises(ValueError, match="2\\*\\*53"):
        backend.reconstruct(P, plan, s, t, short, products=True, bound=2 ** 53 + 1)


@pytest.mark.slow
@pytest.mark.parametrize("scheme,num_moduli", [("fp64", n) for n in (1, 2, 4, 6, 8, 9)]
                         + [("int8", 5), ("fp8", 7)])
def test_serial_crt_kernels_give_the_bits_of_the_parallel_pass(scheme, num_moduli, rng):
    """The serial kernels (:func:`ozaki.backends.cpu.reconstruct.serial_kernel`: specialised for
    short exact products up to ``FUSED_MAX`` moduli, generic otherwise) == the
    parallel pass, bit for bit: residues and exact products (both reductions), column
    blocks, shifts that make results subnormal, zero, huge or infinite, zero entries
    (+0.0), and a row of small ``C'`` (whose every level's terms show in the result)."""
    plan = crt_plan(scheme, num_moduli)
    b, m, n = 2, 5, 300
    dtype = np.int8 if max(plan.moduli) <= 256 else np.int16 if max(plan.moduli) <= 65536 \
        else np.int32
    R = np.array([rng.integers(*half_range(p), (b, m, n), endpoint=True) for p in plan.moduli],
                 dtype)
    R[:, 0, 0, :7] = 0
    small = rng.integers(-1000, 1001, n)  # C' itself
    R[:, 0, 4] = [(small + p // 2) % p - p // 2 for p in plan.moduli]
    s, t = rng.integers(-60, 61, (b, m)), rng.integers(-60, 61, (b, n))
    top = int(plan.H).bit_length()  # results about 2**(top - s - t)
    s[1, 1], s[1, 2], s[1, 3] = top + 1050, top - 1000, top + 2200  # subnormal / huge / zero
    t[0, 5] = -1100  # inf where the entry is large
    backend = get_backend()
    P = np.array([R[q] + p * rng.integers(-2 ** 53 // p, 2 ** 53 // p - 1, R.shape[1:])
                  for q, p in enumerate(plan.moduli)], np.float64)
    P52 = np.where(np.abs(P) <= 2 ** 52, P, np.asarray(R, np.float64))
    for store, kw in ((R, {}), (P, dict(products=True)),
                      (P52, dict(products=True, bound=2 ** 52))):
        want = np.empty((b, m, n))
        backend.reconstruct(store, plan, s, t, want, **kw)
        got = np.full((b, m, n), np.nan)
        with backend.serial_passes():
            for c0, c1 in ((0, 1), (1, 40), (40, n)):
                backend.reconstruct(np.ascontiguousarray(store[..., c0:c1]), plan, s, t, got,
                                    c0=c0, **kw)
        assert got.tobytes() == want.tobytes()
    assert np.isinf(want).any() and (want == 0).any()
    assert ((want != 0) & (np.abs(want) < 2.0 ** -1022)).any()  # subnormal results
    assert not np.signbit(want[0, 0, :7]).any()
    fused = reconstruct.serial_kernel(*plan.weights.shape, True, True)
    assert (fused is reconstruct.reconstruct_serial) == (num_moduli > reconstruct.FUSED_MAX)
    assert reconstruct.serial_kernel(*plan.weights.shape, True, False) \
        is reconstruct.reconstruct_serial


@pytest.mark.parametrize("scheme,num_moduli", [("int8", 3), ("int8", 17), ("fp8", 7),
                                                ("fp64", 6)])
def test_residue_kernel_gives_the_bits_of_the_generic_tasks(scheme, num_moduli, rng,
                                                            monkeypatch):
    """:func:`ozaki.backends.cpu.reconstruct.residue_kernel` (each entry in registers, the
    count padded to a multiple of ``RESIDUE_STEP`` with zero weights) == the generic
    tasks (:func:`~ozaki.backends.cpu.reconstruct._crt_chunks`, residues gathered as
    floats), bit for bit: on both threads and on one, in column blocks, on a store that
    is a strided view, over rows wider than a tile, with shifts that make results
    subnormal, zero, huge or infinite, zero entries (+0.0), and a row of small ``C'``
    (whose every level's terms show in the result). The stores here are below
    ``RESIDUE_MIN``, which large products reach: lowered to 0, every store takes it."""
    monkeypatch.setattr(reconstruct, "RESIDUE_MIN", 0)
    plan = crt_plan(scheme, num_moduli)
    b, m, n = 2, 5, reconstruct.RESIDUE_TILE + 300
    dtype = np.int8 if max(plan.moduli) <= 256 else np.int16 if max(plan.moduli) <= 65536 \
        else np.int32
    R = np.array([rng.integers(*half_range(p), (b, m, 2 * n), endpoint=True)
                  for p in plan.moduli], dtype)
    R[:, :, 0, n:n + 7] = 0
    R[:, 1, 2, n:] = np.array([half_range(p)[1] for p in plan.moduli], dtype)[:, None]
    R[:, 1, 3, n:] = np.array([half_range(p)[0] for p in plan.moduli], dtype)[:, None]
    small = rng.integers(-1000, 1001, n)  # C' itself: every level's terms count
    R[:, 0, 4, n:] = [(small + p // 2) % p - p // 2 for p in plan.moduli]
    s, t = rng.integers(-60, 61, (b, m)), rng.integers(-60, 61, (b, n))
    top = int(plan.H).bit_length()  # results about 2**(top - s - t)
    s[1, 1], s[1, 2], s[1, 3] = top + 1050, top - 1000, top + 2200  # subnormal / huge / zero
    t[0, 5] = -1100  # inf where the entry is large
    store = R[..., n:]  # a strided view (as the complex products' halves are), once
    store = store if num_moduli == 3 else np.ascontiguousarray(store)  # (each compiles)
    args = (plan.weights, plan.p_levels, plan.p_inv, s, t)
    want = np.empty((b, m, n))
    reconstruct._crt_chunks(0, reconstruct.row_tiles(b * m, n, reconstruct.TASK)[3], store,
                            *args, want, 0, np.empty((0, 3)), True)
    got = np.full((b, m, n), np.nan)
    reconstruct.reconstruct(store, *args, got, 0, np.empty((0, 3)), True)
    assert got.tobytes() == want.tobytes()
    got = np.full((b, m, n), np.nan)
    for c0, c1 in ((0, 1), (1, 700), (700, n)):
        reconstruct.reconstruct_serial(np.ascontiguousarray(store[..., c0:c1]), *args, got,
                                       c0, np.empty((0, 3)), True)
    assert got.tobytes() == want.tobytes()
    e = -(s[0, 4] + t[0])
    normal = np.abs(e) < 1000  # C' 2**e, exact where it is a normal double
    assert np.array_equal(want[0, 4][normal], np.ldexp(small[normal].astype(float), e[normal]))
    assert np.isinf(want).any() and (want == 0).any()
    assert ((want != 0) & (np.abs(want) < 2.0 ** -1022)).any()  # subnormal results
    assert not np.signbit(want[:, 0, :7]).any()
    padded = -(-num_moduli // reconstruct.RESIDUE_STEP) * reconstruct.RESIDUE_STEP
    assert reconstruct.padded_count(num_moduli) == padded
    assert reconstruct.residue_kernel(*plan.weights.shape) \
        is reconstruct.residue_kernel(padded, plan.weights.shape[1])


@pytest.mark.parametrize("w", [1, 3, 15, 16, 33, 512, 513])
def test_reconstruct_is_entrywise_for_any_row_width(w, rng):
    """Tasks gather rows of any width (several narrow rows, or tiles of wide ones):
    each entry's bits are those of the entry reconstructed on its own."""
    plan = crt_plan("fp64", 7)
    b, m = 2, 9
    R = np.array([rng.integers(*half_range(p), (b, m, w), endpoint=True) for p in plan.moduli],
                 np.int32)
    R[:, 0, 0] = 0  # a zero entry stays +0.0
    s, t = rng.integers(-40, 41, (b, m)), rng.integers(-40, 41, (b, w))
    backend = get_backend()
    whole = np.empty((b, m, w))
    backend.reconstruct(R, plan, s, t, whole)
    assert np.signbit(whole[0, 0]).sum() == 0 and (whole[0, 0] == 0).all()
    for g, i, j in [(0, 0, 0), (1, m - 1, w - 1), (1, m // 2, w // 2)]:
        one = np.empty((1, 1, 1))
        backend.reconstruct(np.ascontiguousarray(R[:, g:g + 1, i:i + 1, j:j + 1]), plan,
                            s[g:g + 1, i:i + 1], t[g:g + 1, j:j + 1], one)
        assert one.tobytes() == whole[g, i, j].tobytes()


def test_fp8_digits_are_e4m3_integers():
    for p in MODULI["fp8"]:
        lo, hi = half_range(p)
        r = np.arange(lo, hi + 1, dtype=np.float64)
        s = math.isqrt(p)
        if s * s == p:
            x, y = square_digits(r, s)
            assert np.array_equal(s * x + y, r)
            parts = (x, y)
        else:
            x, y, z = karatsuba_digits(r)
            assert np.array_equal(16 * x + y, r) and np.array_equal(z, x + y)
            parts = (x, y, z)
        for d in parts:
            assert np.all(np.abs(d) <= 16) and np.array_equal(d, np.round(d))
