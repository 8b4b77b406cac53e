"""The numpy reference backend (ozaki.backends.numpy): bitwise equal to ``cpu``.

(a) Every method of :class:`ozaki.core.backend.Backend`, on random and adversarial data
(spread exponents, subnormals, signed zeros, Inf/NaN lines, Fortran-ordered and shared
operands, several schemes and counts), against :class:`CPUBackend`; (b) the public calls
with ``backend="numpy"`` against the default, on both paths (emulated, and compensated
under ``@pytest.mark.compensated``); (c) the numpy backend imports no numba. Floats are
compared on their bits, NaN-aware (any NaN equals any NaN: their payloads are not part
of the contract).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki.backends import get_backend
from ozaki.core.backend import Backend
from ozaki.core.certify import CertificationError, accurate_shifts
from ozaki.core.moduli import MODULI, crt_plan, plan_terms
from ozaki.core.moduli import residue_dtype
from ozaki.core.scaling import exponents, norm_bits
from ozaki.backends.numpy.compensated import product_error
from ozaki.backends.numpy.exact import fma

CPU = get_backend("cpu")
NP = get_backend("numpy")
SCHEMES = ("fp8", "int8", "fp64", "int7")
FEW = settings(max_examples=25, deadline=None)


def same(x, y, where="result"):
    """``x`` and ``y`` equal: nested tuples, arrays (dtype, shape, bits; NaN-aware), scalars."""
    if isinstance(x, (tuple, list)):
        assert isinstance(y, (tuple, list)) and len(x) == len(y), where
        for i, (u, v) in enumerate(zip(x, y)):
            same(u, v, f"{where}[{i}]")
        return
    if x is None or y is None:
        assert x is None and y is None, where
        return
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape, (where, x.dtype, y.dtype, x.shape, y.shape)
    if x.dtype.kind == "c":
        x, y = x.view(np.float64), y.view(np.float64)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        assert np.array_equal(nan, np.isnan(y)), f"{where}: NaNs differ"
        ints = f"i{x.dtype.itemsize}"
        bad = np.flatnonzero((x.view(ints) != y.view(ints)) & ~nan)
        assert not bad.size, (f"{where}: bits differ at {bad[:5]}: "
                              f"{x.flat[bad[:5]]} {y.flat[bad[:5]]}")
    else:
        assert np.array_equal(x, y), where


def data(rng, shape, kind):
    """Test values: ``normal`` (per-line exponents), ``wide`` (every exponent),
    ``special`` (wide, with signed zeros, subnormals, Inf and NaN)."""
    x = rng.standard_normal(shape)
    if kind == "normal":
        return x * np.exp2(rng.integers(-40, 40, shape[:-1] + (1,)))
    x = np.ldexp(rng.uniform(1, 2, shape) * rng.choice([-1.0, 1.0], shape),
                 rng.integers(-1074, 1020, shape))
    if kind == "special":
        pick = rng.random(shape)
        x[pick < 0.1] = 0.0
        x[(pick >= 0.1) & (pick < 0.15)] = -0.0
        sub = (pick >= 0.15) & (pick < 0.25)
        x[sub] = rng.integers(-2 ** 52, 2 ** 52, sub.sum()) * 2.0 ** -1074
        bad = (pick >= 0.25) & (pick < 0.28)
        x[bad] = rng.choice([np.inf, -np.inf, np.nan, -np.nan], bad.sum())
    return x


def stack(rng, b, r, c, kind, fortran=False):
    X = data(rng, (b, r, c), kind)
    return np.ascontiguousarray(X.transpose(0, 2, 1)).transpose(0, 2, 1) if fortran else X


def both(method, *args, **kw):
    """``method`` on both backends (arrays copied for each), and the results compared."""
    got = []
    for be in (CPU, NP):
        a = [np.array(x) if isinstance(x, np.ndarray) else x for x in args]
        got.append((getattr(be, method)(*a, **kw), a))
    same(got[0][0], got[1][0], method)
    for i, (u, v) in enumerate(zip(got[0][1], got[1][1])):
        if isinstance(u, np.ndarray):
            same(u, v, f"{method} argument {i}")  # outputs written in place
    return got[1][0]


# -- (a) scheduling and engines ------------------------------------------------

def test_protocol_scheduling_and_engines():
    assert isinstance(NP, Backend) and NP.name == "numpy"
    with NP.sized(1 << 30):
        assert NP.pass_threads() == 1
    assert NP.run_pieces(lambda p: p * p, [3, 1, 2], 4) == [9, 1, 4]
    assert NP.engine_names() == CPU.engine_names()
    for name in NP.engine_names():
        assert type(NP.engine(name, None)) is type(CPU.engine(name, None))
    assert type(NP.exact_engine()) is type(CPU.exact_engine())
    rng = np.random.default_rng(0)
    X, Y = rng.integers(-100, 100, (2, 5, 7)).astype(float), rng.integers(-100, 100, (7, 3)) * 1.0
    eng = NP.engine("cpu-int8", "int8")
    both("matmul", eng, X, Y, 128, 128, np.empty((2, 5, 3)))


# -- (a) passes over operands ----------------------------------------------------

@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), b=st.integers(1, 3), r=st.integers(1, 7),
       c=st.integers(0, 9), outer=st.integers(0, 1), fortran=st.booleans(),
       kind=st.sampled_from(["normal", "wide", "special"]), shared=st.booleans())
def test_line_passes(seed, b, r, c, outer, fortran, kind, shared):
    rng = np.random.default_rng(seed)
    X = stack(rng, b, r, c, kind, fortran)
    oc, on = CPU.operand(X, outer), NP.operand(X, outer)
    assert (on.axis, on.T) == (oc.axis, oc.T)
    same(CPU.line_stats(oc), NP.line_stats(on), "line_stats")
    h = norm_bits(oc.inner)
    for hh in (0, h):
        same(CPU.line_norms(oc, hh), NP.line_norms(on, hh), f"line_norms {hh}")
    stats = NP.line_stats(on)
    E, zero = exponents(stats[0])
    shift = np.where(zero, 0, h - E)
    same(CPU.norm_sums(oc, shift), NP.norm_sums(on, shift), "norm_sums")
    for bits in (4, 6, 20):
        outs = [np.full(oc.layout(b), np.nan, np.float32) for _ in range(2)]
        got = [be.line_floors(op, bits, o) for be, op, o in ((CPU, oc, outs[0]), (NP, on, outs[1]))]
        same(got[0], got[1], "line_floors")
        same(outs[0], outs[1], "line_floors out")
    # quantize at the accurate shifts lowered per slice (floors stay below 2**20),
    # a shared operand read by several slices, float32 and float64 planes
    bq = b + 2 if shared else b
    opx = [oc, on] if not shared else [CPU.operand(X[:1], outer), NP.operand(X[:1], outer)]
    E, zero = exponents(NP.line_stats(opx[1])[0])
    q = np.where(zero, 0, 20 - E) - rng.integers(0, 30, (bq, E.shape[1]))
    for dtype in (np.float32, np.float64):
        for sums in (False, True):
            outs = [np.full((bq,) + opx[0].layout(1)[1:], np.nan, dtype) for _ in range(2)]
            got = [be.quantize(op, q, o, sums=sums)
                   for be, op, o in ((CPU, opx[0], outs[0]), (NP, opx[1], outs[1]))]
            same(got[0], got[1], "quantize")
            same(outs[0], outs[1], "quantize out")


@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), b=st.integers(1, 3), r=st.integers(1, 6),
       c=st.integers(1, 8), outer=st.integers(0, 1), fortran=st.booleans(),
       kind=st.sampled_from(["normal", "wide", "special"]), shared=st.booleans(),
       scheme=st.sampled_from(SCHEMES), count=st.integers(2, 20), top=st.integers(-4, 130),
       block=st.booleans())
def test_residues(seed, b, r, c, outer, fortran, kind, shared, scheme, count, top, block):
    """Both compiled passes (general and split, when it applies) against the reference."""
    rng = np.random.default_rng(seed)
    X = stack(rng, 1 if shared else b, r, c, kind, fortran)
    oc, on = CPU.operand(X, outer), NP.operand(X, outer)
    E, zero = exponents(NP.line_stats(on)[0])
    E, zero = np.broadcast_to(E, (b, E.shape[1])), np.broadcast_to(zero, (b, E.shape[1]))
    shift = np.where(zero, 0, top - rng.integers(0, 40, E.shape) - E)
    moduli = MODULI[scheme][:count]
    cols = None
    if block and outer == 1:
        j0 = int(rng.integers(0, c))
        cols = (j0, int(rng.integers(j0 + 1, c + 1)))
    Eb, zb, sb = E, zero, shift
    if cols:
        Eb, zb, sb = E[:, cols[0]:cols[1]], zero[:, cols[0]:cols[1]], shift[:, cols[0]:cols[1]]
    fit = CPU.residue_pass(Eb, zb, sb)
    assert NP.residue_pass(Eb, zb, sb) == fit
    lay = list(oc.layout(b))
    if cols:
        lay[1 if oc.T else 2] = cols[1] - cols[0]
    for split in sorted({0, fit} | ({4} if fit == 3 else set())):
        outs = [np.full((len(moduli),) + tuple(lay), np.nan) for _ in range(2)]
        got = [be.residues(op, shift, moduli, o, split, cols)
               for be, op, o in ((CPU, oc, outs[0]), (NP, on, outs[1]))]
        same(got[0], got[1], f"residues split={split}")
        same(outs[0], outs[1], "residues out")


# -- (a) passes over products -----------------------------------------------------

@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), scheme=st.sampled_from(SCHEMES),
       q=st.integers(0, 19), bound=st.sampled_from([2 ** 24, 2 ** 40, 2 ** 52, 2 ** 53]),
       first=st.booleans())
def test_product_passes(seed, scheme, q, bound, first):
    rng = np.random.default_rng(seed)
    p = MODULI[scheme][q]
    shape = (2, 3, 5)

    def prods(dtype=np.float64):
        y = rng.integers(-bound, bound + 1, shape, dtype=np.int64).astype(dtype)
        y.flat[:3] = [bound, -bound, 0]
        return y
    dtype = np.float32 if bound <= 2 ** 24 else np.float64
    acc = rng.integers(-p, p, shape).astype(np.float64)
    both("reduce_into", acc, prods(dtype), p, first, bound)
    both("store", prods(dtype), p, np.zeros(shape, residue_dtype([p])), bound)
    n = shape[-1]
    both("complex_store", prods(), prods(), prods(), p, np.zeros(shape[:-1] + (2 * n,),
                                                                 residue_dtype([p])), n, bound)
    h = p // 2
    x = rng.integers(-h, (p - 1) // 2 + 1, (2, 4, 6)).astype(np.float64)
    both("add_halves", x, -1, p, np.full((2, 4, 3), np.nan))
    both("add_halves", x, -2, p, np.full((2, 2, 6), np.nan))
    for be in (CPU, NP):
        with pytest.raises(ValueError):
            be.store(prods(), p, np.zeros(shape, np.int32), 2 ** 53 + 1)


@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), scheme=st.sampled_from(SCHEMES),
       N=st.integers(2, 20), b=st.integers(1, 2), m=st.integers(1, 4), w=st.integers(1, 6),
       extra=st.integers(0, 3), products=st.booleans(), short=st.booleans(),
       spread=st.sampled_from([60, 1100, 2200]))
def test_reconstruct(seed, scheme, N, b, m, w, extra, products, short, spread):
    rng = np.random.default_rng(seed)
    plan = crt_plan(scheme, N)
    n = w + extra
    c0 = int(rng.integers(0, extra + 1))
    if products:
        bound = 2 ** 52 if short else 2 ** 53
        store = rng.integers(-bound, bound + 1, (N, b, m, w), dtype=np.int64).astype(float)
    else:
        bound = 2 ** 53
        lo = np.array([-(p // 2) for p in plan.moduli])[:, None, None, None]
        hi = np.array([(p - 1) // 2 for p in plan.moduli])[:, None, None, None]
        store = (lo + rng.integers(0, 2 ** 40, (N, b, m, w)) % (hi - lo + 1)).astype(
            residue_dtype(plan.moduli))
        store.flat[:N] = 0  # C' = 0
    s = rng.integers(-spread, spread + 1, (b, m))
    t = rng.integers(-spread, spread + 1, (b, n))
    out = rng.standard_normal((b, m, n))
    kw = dict(c0=c0, products=products, bound=bound)
    both("reconstruct", store, plan, s, t, out, **kw)
    if N in (2, 7) and products and short:  # the cpu's serial kernels (pieces on workers)
        got = out.copy()
        with CPU.serial_passes():
            CPU.reconstruct(store, plan, s, t, got, **kw)
        ref = out.copy()
        NP.reconstruct(store, plan, s, t, ref, **kw)
        same(got, ref, "serial reconstruct")
    for be in (CPU, NP):
        with pytest.raises(ValueError):
            be.reconstruct(store, plan, s, t, out, c0=n - w + 1, products=products, bound=bound)


# -- (a) the certificate ------------------------------------------------------------

@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), b=st.integers(1, 3), m=st.integers(1, 6),
       n=st.integers(1, 7), K=st.integers(1, 3), fill=st.booleans(),
       scheme=st.sampled_from(SCHEMES), g32=st.booleans(), probe=st.booleans(),
       realistic=st.booleans())
def test_certificate_passes(seed, b, m, n, K, fill, scheme, g32, probe, realistic):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 3000))
    G = rng.integers(0, 2 ** 24, (b, m, n)).astype(np.float32 if g32 else np.float64)
    G[rng.random(G.shape) < 0.2] = 0
    nA = rng.integers(0, k + 1, (b, m))
    nA[rng.random(nA.shape) < 0.2] = 0
    nB = rng.integers(0, k + 1, (b, n))
    nB[rng.random(nB.shape) < 0.2] = 0
    rF = rng.integers(0, 2 ** 30, (b, m)).astype(float)
    cF = rng.integers(0, 2 ** 30, (b, n)).astype(float)
    e = rng.integers(-1100, 1100, (b, m))
    f = rng.integers(-1100, 1100, (b, n))
    counts = rng.integers(2, len(MODULI[scheme]) + 1, (K, b))
    H, R, g2 = (np.stack(x) for x in zip(*(plan_terms(scheme, c) for c in counts)))
    both("upper_rowmax", G, rF, cF, nA, nB)
    if realistic:
        sigma, tau = accurate_shifts(CPU, G, rF, cF, nA, nB, H)
        sigma, tau = sigma.reshape(K, b, m), tau.reshape(K, b, n)
        ns, nt = accurate_shifts(NP, G, rF, cF, nA, nB, H)
        same((sigma, tau), (ns.reshape(K, b, m), nt.reshape(K, b, n)), "accurate_shifts")
    else:
        sigma = rng.integers(-60, 60, (K, b, m))
        tau = rng.integers(-60, 60, (K, b, n))
    both("upper_scaled_colmax", G, rF, cF, nA, nB, sigma)
    probes = np.zeros(K, bool)
    probes[1:] = probe
    if not fill:
        probes[0] = probe
    got = []
    for be in (CPU, NP):
        ratio = np.full((b, m, n), np.nan) if fill else np.zeros((0, 0, 0))
        bound = np.full((b, m, n), np.nan) if fill else np.zeros((0, 0, 0))
        got.append(be.componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f,
                                           1.0 + 2.0 ** -40, ratio, bound, probes) + (ratio, bound))
    (mc, fc, rc, bc), (mn, fn, rn, bn) = got
    same((rc, bc), (rn, bn), "ratio, bound")
    for q in range(K):
        if probes[q]:  # only whether a slice fails is defined; exact where none does
            fail = fc[q].sum(axis=1) > 0
            assert np.array_equal(fail, fn[q].sum(axis=1) > 0)
            same(mc[q][~fail], mn[q][~fail], "probe maxima")
        else:
            same((mc[q], fc[q]), (mn[q], fn[q]), f"count {q}")


@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), b=st.integers(1, 3), n=st.integers(0, 9))
def test_normwise_maxima(seed, b, n):
    rng = np.random.default_rng(seed)
    E = rng.integers(-1100, 1100, (b, n))
    zero = rng.random((b, n)) < 0.2
    lo2 = np.ldexp(rng.uniform(0.5, 2, (b, n)), rng.integers(-1070, 1020, (b, n)))
    hi1 = rng.choice([0.0, -0.0, 1.0, 3.5, 1e300, np.inf, np.nan], (b, n),
                     p=[0.15, 0.15, 0.2, 0.2, 0.1, 0.1, 0.1])
    shift = rng.integers(-1200, 1200, (b, n))
    both("normwise_maxima", E, zero, lo2, hi1, shift)
    if n:
        lo2[0, 0], zero[0, 0] = 0.0, False
        for be in (CPU, NP):
            with pytest.raises(ZeroDivisionError):
                be.normwise_maxima(E, zero, lo2, hi1, shift)


# -- (a) exact arithmetic ---------------------------------------------------------------

def _edge_rows():
    """Pairs of rows whose exact dot products sit on rounding boundaries."""
    t = 2.0 ** -1074
    big = 2.0 ** 1023
    return [([big, big * (1 - 2.0 ** -53)], [1.0, 1.0]),  # 2**1024 - 2**970: the tie -> inf
            ([big, big * (1 - 2.0 ** -52)], [1.0, 1.0]),  # 2**1024 - 2**971: above the largest
            ([big, big * (1 - 2.0 ** -53), -t], [1.0, 1.0, 1.0]),  # just below the tie
            ([-big, -big], [1.0, 1.0]), ([1.0, -2.0, 1e308], [0.0, 1e308, 3.5]),
            ([t, t], [0.5, 0.0]), ([t, t], [1.5, 0.0]), ([-t, t], [0.5, 0.0]),
            ([t, -t], [0.25, 0.5]), ([t, 2.0 ** -600], [2.5, 2.0 ** -600]),
            ([1.0, 1.0, -1.0], [1.0, 2.0 ** -60, 1.0]), ([0.0, -0.0], [-1.0, 1.0]),
            ([np.inf, np.nan, 2.0], [1.0, 1.0, 3.0]), ([1e-300, -1e-300], [1e-300, 1e-300])]


@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), k=st.integers(0, 12),
       kind=st.sampled_from(["normal", "wide", "special"]))
def test_exact_dot(seed, k, kind):
    rng = np.random.default_rng(seed)
    X, Y = data(rng, (4, k), kind), data(rng, (3, k), kind)
    ri, ci = rng.integers(0, 4, 7), rng.integers(0, 3, 7)
    both("exact_dot", X, Y, ri, ci)
    with np.errstate(over="ignore", invalid="ignore"):
        X32, Xint = X.astype(np.float32), np.nan_to_num(X).astype(np.int64)
    both("exact_dot", X32, Y[:, ::-1], ri, ci)
    for bad in ((X, Y, ri, ci[:-1]), (X, Y, ri + 4, ci), (X[0], Y, ri, ci), (Xint, Y, ri, ci)):
        errors = []
        for be in (CPU, NP):
            with pytest.raises((ValueError, IndexError, TypeError)) as err:
                be.exact_dot(*bad)
            errors.append((err.type, str(err.value)))
        assert errors[0] == errors[1]


def test_exact_dot_rounding_boundaries():
    for x, y in _edge_rows():
        X, Y = np.array([x]), np.array([y])
        got = both("exact_dot", X, Y, [0], [0])
        assert not np.isnan(got).any()


def _fma_pairs(rng):
    """Factors whose products underflow, overflow, or sit near either threshold."""
    a = np.ldexp(rng.uniform(1, 2, 400) * rng.choice([-1, 1], 400),
                 rng.integers(-1074, 1023, 400))
    b = np.ldexp(rng.uniform(1, 2, 400) * rng.choice([-1, 1], 400),
                 rng.integers(-1074, 1023, 400))
    near = rng.random(400) < 0.5  # exponent sums near -1022, -970 or 1024
    target = rng.choice([-1075, -1022, -1000, -969, -958, 995, 1020, 1023], 400)
    with np.errstate(over="ignore"):
        b[near] = np.ldexp(rng.uniform(1, 2, near.sum()), target[near] - np.frexp(a[near])[1])
    sub = rng.random(400) < 0.15
    a[sub] = rng.integers(1, 2 ** 52, sub.sum()) * 2.0 ** -1074
    return a, b


def test_product_error_is_the_fma():
    """``fma(a, b, -fl(ab))`` of the reference against the exact rational, and against the
    compiled kernel's FMA (``[a, -1] . [b, fl(ab)]`` by Dot2 is exactly that FMA)."""
    a, b = _fma_pairs(np.random.default_rng(7))
    with np.errstate(all="ignore"):
        p = a * b
    e = product_error(a, b, p)
    for i in np.flatnonzero(np.isfinite(p)):
        same(e[i], fma(float(a[i]), float(b[i]), -float(p[i])), f"pair {i}")
    fin = np.isfinite(p)
    A = np.stack([a[fin], -np.ones(fin.sum())], axis=1)[:, None, :]
    B = np.stack([b[fin], p[fin]], axis=0).T[:, :, None]
    out = both("dot2", A, B, np.empty((fin.sum(), 1, 1)), True)
    for be in (CPU, NP):
        got = np.empty((fin.sum(), 1, 1))
        be.dot2(A, B, got, False)
        same(got[:, 0, 0], 0.0 + e[fin], f"{be.name}: Dot2 gives the FMA")  # (+0 + -0 = +0)
    assert out[1] is not None


@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), b=st.integers(1, 3), m=st.integers(1, 5),
       k=st.integers(1, 9), n=st.integers(1, 5), ba=st.booleans(), bb=st.booleans(),
       kind=st.sampled_from(["normal", "wide", "special", "tiny", "huge"]))
def test_dot2_passes(seed, b, m, k, n, ba, bb, kind):
    rng = np.random.default_rng(seed)
    base = "normal" if kind in ("tiny", "huge") else kind
    A = data(rng, (b if ba else 1, m, k), base)
    B = data(rng, (b if bb else 1, k, n), base)
    if kind in ("tiny", "huge"):  # products near the underflow / overflow thresholds
        A = np.ldexp(A, (-520 if kind == "tiny" else 500) - np.frexp(np.abs(A).max())[1])
        B = np.ldexp(B, (-520 if kind == "tiny" else 500) - np.frexp(np.abs(B).max())[1])
    out = np.full((b, m, n), np.nan)
    both("small_lines", A, B, b)
    both("dot2", A, B, out, True)
    got = [np.full((b, m, n), np.nan) for _ in range(2)]
    rare = [be.dot2(A, B, o, False)[0] for be, o in zip((CPU, NP), got)]
    assert rare[0] == rare[1]
    same(got[0], got[1], "dot2")
    both("abs_product", np.where(np.isfinite(A), A, 1.0), np.where(np.isfinite(B), B, 2.0), out)


# -- (b) public calls ---------------------------------------------------------------------

def _info_fields(info):
    # engine="auto" is the fastest engine on cpu, FP64 BLAS in the reference (the same
    # scheme: the same bits), and workspace_bytes counts the backend's own types (int8
    # planes and INT32 products on cpu's integer engines): test_onednn checks both
    return {f.name: getattr(info, f.name) for f in dataclasses.fields(info)
            if f.name not in ("seconds", "traffic", "backend", "workspace_bytes", "engine",
                              "gemms")}


def agree(fn, *args, **kw):
    """``fn(*args, **kw)`` on the default backend and on ``numpy``: the same bits, the same
    info (timings aside), or the same ``CertificationError``. Returns the numpy result."""
    got = []
    for backend in (None, "numpy"):
        try:
            got.append(fn(*args, backend=backend, **kw))
        except CertificationError as err:
            got.append(("raised", str(err)))
    a, b = ((got[0],), (got[1],)) if not isinstance(got[0], tuple) else got
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, ozaki.OzakiInfo):
            fx, fy = _info_fields(x), _info_fields(y)
            assert fx.keys() == fy.keys()
            for name in fx:
                u, v = fx[name], fy[name]
                if isinstance(u, (np.ndarray, float)) or isinstance(v, (np.ndarray, float)):
                    same(u, v, f"info.{name}")  # on the bits
                else:
                    assert u == v, (name, u, v)
        elif isinstance(x, str):
            assert x == y
        else:
            same(x, y, "C")
    return got[1]


def operands(seed, m, k, n, special=True):
    """Spread exponents per line; with ``special`` an Inf, an entry for the overflow guard,
    a subnormal, a NaN column, a zero row and a signed zero."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-40, 40, (m, 1)))
    B = rng.standard_normal((k, n)) * np.exp2(rng.integers(-40, 40, (1, n)))
    if special:
        A[0, :3] = [np.inf, 1e300, -1e-310]
        A[-1] = 0.0
        B[:, -1] = np.nan if n > 2 else B[:, -1]
        B[1, 0] = -0.0
    return A, B


ENGINE_SCHEMES = [(s, e) for s in SCHEMES for e in ozaki.available_engines()
                  if s in get_backend("numpy").engine(e, None).schemes]


@pytest.mark.parametrize("scheme,engine", ENGINE_SCHEMES)
@pytest.mark.parametrize("mode", ozaki.MODES)
@pytest.mark.parametrize("count", ["auto", 6])
def test_dgemm_emulated(scheme, engine, mode, count):
    A, B = operands(1, 11, 17, 8)
    agree(ozaki.dgemm, A, B, scheme=scheme, mode=mode, engine=engine, num_moduli=count,
          bounds=True)


@pytest.mark.parametrize("fallback", ["exact", "none", "raise"])
@pytest.mark.parametrize("mode", ozaki.MODES)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_fallback_policies(fallback, mode, scheme):
    rng = np.random.default_rng(2)
    A = rng.standard_normal((9, 30)) * np.exp2(rng.integers(-60, 60, (9, 30)))
    B = rng.standard_normal((30, 7)) * np.exp2(rng.integers(-60, 60, (30, 7)))
    for count in (2, 3):
        agree(ozaki.dgemm, A, B, scheme=scheme, mode=mode, num_moduli=count,
              fallback=fallback, return_info=True, bounds=fallback != "raise")


@pytest.mark.parametrize("mode", ozaki.MODES)
def test_gemm_layouts_and_special_values(mode):
    A, B = operands(3, 10, 13, 6)
    C = np.random.default_rng(4).standard_normal((10, 6))
    agree(ozaki.gemm, A, np.asfortranarray(B), C, alpha=-1.5, beta=0.25, mode=mode,
          return_info=True, bounds=True)
    agree(ozaki.gemm, np.asfortranarray(A.T), B, trans_a="T", mode=mode, return_info=True)
    agree(ozaki.gemm, A, np.ascontiguousarray(B.T), trans_b=True, mode=mode, bounds=True)
    agree(ozaki.dgemm, B.T.copy(), A.T.copy(), mode=mode, bounds=True)  # the other order
    huge = np.full((4, 5), 1e308)
    huge[1] *= -1
    agree(ozaki.dgemm, huge, np.abs(huge.T), mode=mode, bounds=True)  # the overflow guard
    tiny = np.ldexp(operands(5, 6, 8, 4, False)[0], -1030)
    agree(ozaki.dgemm, tiny, np.ldexp(operands(6, 6, 8, 4, False)[1], 900), mode=mode,
          bounds=True)


@pytest.mark.parametrize("mode", ozaki.MODES)
def test_zgemm_and_matmul_stacks(mode):
    A, B = operands(7, 8, 11, 5)
    Z = A.astype(np.complex128)
    Z.imag = A[::-1]  # (1j * inf would make a NaN)
    agree(ozaki.zgemm, Z, B - 2j * B, mode=mode, return_info=True, bounds=True)
    agree(ozaki.zgemm, Z, B - 2j * B, mode=mode, num_moduli=5, scheme="fp8")
    rng = np.random.default_rng(8)
    S = rng.standard_normal((3, 7, 9)) * np.exp2(rng.integers(-20, 20, (3, 7, 1)))
    T = rng.standard_normal((9, 6))
    agree(ozaki.matmul, S, T, mode=mode, bounds=True)  # a shared right operand
    agree(ozaki.matmul, T.T, S.transpose(0, 2, 1), mode=mode, return_info=True)  # shared left
    agree(ozaki.matmul, S, S.transpose(0, 2, 1) + 0j, mode=mode, num_moduli=4)
    agree(ozaki.matmul, S[:, 0], T, mode=mode)  # 1-D rows of a stack


def test_prepared_operands():
    # each backend keeps its own prepared data: the same bits as unprepared calls on cpu
    A, B = operands(9, 9, 14, 6, special=False)
    for mode in ozaki.MODES:
        want = ozaki.dgemm(A, B, mode=mode, bounds=True)
        want5 = ozaki.dgemm(A, B, mode=mode, num_moduli=5, scheme="int8")
        for name in ("cpu", "numpy"):
            PA = ozaki.prepare(A, backend=name)
            PB = ozaki.prepare(B, side="right", backend=name)
            for _ in range(2):  # the second call reads the kept data (and residues)
                C, info = ozaki.dgemm(PA, B, mode=mode, bounds=True, backend=name)
                same(C, want[0], "C")
                same(info.error_bound, want[1].error_bound, "bound")
                same(ozaki.dgemm(A, PB, mode=mode, num_moduli=5, scheme="int8", backend=name),
                     want5, "C5")
    want = ozaki.zgemm(A + 1j * A, B + 0j)
    PZ = ozaki.prepare(A + 1j * A, backend="numpy")
    same(ozaki.zgemm(PZ, B + 0j, backend="numpy"), want, "Z")


def test_blocks_pieces_and_counts_per_slice():
    """The passes that small products skip: k-blocks (``reduce_into``), products too large
    to keep for the CRT (``store``), column blocks of a wide ``B`` (residues of ``cols``),
    chunks of a stack, and slices at different counts."""
    from ozaki.backends.engines import BlasEngine, FP8Engine, Int8Engine
    rng = np.random.default_rng(12)
    A, B = operands(13, 6, 23, 5)
    for engine, scheme in ((BlasEngine(max_kblock=5), "fp64"), (Int8Engine(max_kblock=5), "int8"),
                           (FP8Engine(max_kblock=5), "fp8"), (BlasEngine(max_kblock=7), "fp8")):
        agree(ozaki.dgemm, A, B, engine=engine, scheme=scheme, bounds=True)
        agree(ozaki.zgemm, A + 1j, B - 1j, engine=engine, scheme=scheme, mode="fast")
    agree(ozaki.dgemm, rng.standard_normal((740, 2)), rng.standard_normal((2, 740)),
          mode="fast", scheme="fp64", num_moduli=8)  # 8 N m n > GROUP_BYTES: the store pass
    agree(ozaki.dgemm, rng.standard_normal((8, 8)), rng.standard_normal((8, 70000)),
          mode="fast", return_info=True)  # column blocks of B
    S = rng.standard_normal((96, 32, 32))
    S[5] *= np.exp2(rng.integers(-300, 300, (32, 32)))  # a slice that needs more moduli
    C, info = agree(ozaki.matmul, S, S[::-1], return_info=True)  # chunks of the stack
    assert len(set(info.slice_moduli.tolist())) > 1


@FEW
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(1, 7), k=st.integers(1, 12),
       n=st.integers(1, 6), scheme=st.sampled_from(SCHEMES), mode=st.sampled_from(ozaki.MODES),
       count=st.sampled_from(["auto", 2, 5, 9]),
       kind=st.sampled_from(["normal", "wide", "special"]),
       fallback=st.sampled_from([None, "exact", "none"]))
def test_public_calls_random(seed, m, k, n, scheme, mode, count, kind, fallback):
    rng = np.random.default_rng(seed)
    A, B = data(rng, (m, k), kind), data(rng, (k, n), kind)
    agree(ozaki.dgemm, A, B, scheme=scheme, mode=mode, num_moduli=count, fallback=fallback,
          bounds=True)


@pytest.mark.compensated
# ozaki/api/calls.py's parts_bound multiplies an inf bound (an uncertified entry kept)
# by 1j, which warns and makes the real part's bound NaN; both backends alike
@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply:RuntimeWarning")
@pytest.mark.parametrize("fallback", [None, "none", "raise"])
@pytest.mark.parametrize("kind", ["normal", "special", "tiny", "huge"])
def test_compensated_path(kind, fallback):
    rng = np.random.default_rng(10)
    A, B = operands(11, 7, 9, 5, special=kind == "special")
    if kind == "tiny":  # products below 2**-900: uncertified entries (the fallback decides)
        A[:3] *= 2.0 ** -1000
        B[:, :2] *= 2.0 ** 40
        A[1, 2] = 3e-320
    if kind == "huge":  # sums that may overflow: the exactly rounded dot product
        A[1:3] *= 2.0 ** 900
        B[:, 1] *= 2.0 ** 110
    for mode in ozaki.MODES:
        C, info = agree(ozaki.dgemm, A, B, mode=mode, fallback=fallback, bounds=True) \
            if fallback != "raise" or kind != "tiny" else (None, None)
        assert info is None or info.path == "compensated"
    agree(ozaki.dgemm, A, B, fallback=fallback, return_info=True)
    agree(ozaki.zgemm, A + 1j * rng.standard_normal(A.shape), B - 1j * B, fallback=fallback,
          return_info=True, bounds=fallback != "raise")
    S = np.stack([A, A[::-1]])
    agree(ozaki.matmul, S, B, fallback=fallback, return_info=True)


# -- (c) no numba -----------------------------------------------------------------------

def test_numpy_backend_imports_no_numba():
    """``import ozaki`` and products on ``backend="numpy"`` (emulated, complex, bounds,
    the compensated path) load neither numba nor llvmlite, nor the cpu backend's passes."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import ozaki
        from ozaki.core import compensated
        rng = np.random.default_rng(0)
        A, B = rng.standard_normal((20, 30)), rng.standard_normal((30, 10))
        A[0, :3] = [np.inf, 1e300, -1e-310]
        ozaki.dgemm(A, B, backend="numpy")                       # compensated (small)
        ozaki.dgemm(A * 2.0 ** -1000, B, backend="numpy", bounds=True)
        compensated.SMALL_WORK = 0                               # the emulation
        for mode in ozaki.MODES:
            ozaki.dgemm(A, B, backend="numpy", mode=mode, bounds=True)
            ozaki.zgemm(A + 1j * A, B - 1j * B, backend="numpy", mode=mode, bounds=True)
        ozaki.matmul(np.stack([A, A]), B, backend="numpy", scheme="fp8", num_moduli=5)
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite")
                     or m.startswith("ozaki.backends.cpu.") and m != "ozaki.backends.cpu.parallel")
        assert "ozaki.backends.numpy.backend" in sys.modules
        print("LOADED", bad)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout, done.stdout
