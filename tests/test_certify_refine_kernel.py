"""The refinement's compiled passes (ozaki.backends.cpu.refinement) against the reference.

:class:`ozaki.core.certify.Refinement` lowers a block of a slice's ratios (and bounds)
to the fine bound through ``Backend.refined_ratios``, and forms the upper operands
``F + I`` through ``Backend.add_nonzeros``. The numpy formulation
(:mod:`ozaki.backends.numpy.certificate`) is the reference; the compiled passes must
give the same bits: every float is compared on its int64 view (NaN payloads and signs
included, not merely NaN-aware), on random blocks whose exponents reach the ends of the
range (``ldexp`` overflowing to inf and underflowing to subnormals and zero), with zero
upper bounds ``U``, zero lower bounds ``G``, NaN and inf already in ``ratio`` and
``bound``, with and without ``bound``; then through :meth:`Refinement.certify` (its
maximum ratio and failure count) and the whole product.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ozaki
from ozaki.backends import get_backend
from ozaki.backends.cpu import refinement as kernel
from ozaki.backends.cpu.backend import CPUBackend
from ozaki.backends.numpy import certificate as reference
from ozaki.core.certify import Refinement
from ozaki.core.moduli import crt_plan

CPU, NP = get_backend("cpu"), get_backend("numpy")
MANY = settings(max_examples=150, deadline=None)


def bits(x) -> np.ndarray:
    return np.asarray(x, np.float64).view(np.int64)


def assert_same_bits(x, y, what):
    bad = np.flatnonzero(bits(x) != bits(y))
    assert not bad.size, f"{what}: bits differ at {bad[:5]}: {x.flat[bad[:5]]} {y.flat[bad[:5]]}"


def _integers(rng, size, kind):
    """Exponent-like integers: ``small`` (|x| <= 60), ``wide`` (the double range and
    beyond), ``huge`` (beyond a C ``int``: numpy's clamp), a mix of the three, or
    ``balanced`` (|x| <= 3: every term of the bound of a similar size, so that each
    rounding matters)."""
    if kind == "balanced":
        return rng.integers(-3, 4, size)
    small = rng.integers(-60, 61, size)
    wide = rng.integers(-2300, 2300, size)
    huge = rng.choice([-1, 1], size) * rng.integers(2 ** 31 - 5, 2 ** 40, size)
    if kind == "mixed":
        pick = rng.random(size)
        return np.where(pick < 0.5, small, np.where(pick < 0.9, wide, huge))
    return {"small": small, "wide": wide, "huge": huge}[kind]


def _counts(rng, size, top):
    """Integer-valued FP64 data, zero in about a quarter of the entries."""
    x = np.floor(rng.uniform(0, top, size))
    x[rng.random(size) < 0.25] = 0.0
    return x


def block(seed: int, kinds=("mixed",) * 3, bound=True):
    """A random slice (m, n) with a block ``(rows, cols)`` and the refinement's data.

    ``kinds``: :func:`_integers` kinds of the coarse shifts, of the coarse exponents and
    of the fine exponents (or ``near``: the coarse ones plus 0 to 15). ``ratio`` and
    ``bound`` hold zeros, inf and NaN (never ``-0.0``, which the refinement never sees:
    :func:`ozaki.backends.cpu.refinement.minimum`)."""
    rng = np.random.default_rng(seed)
    m, n = rng.integers(1, 33, 2)
    rows = np.flatnonzero(rng.random(m) < 0.7)
    cols = np.flatnonzero(rng.random(n) < 0.7)
    rows = rows if rows.size else np.array([m - 1])
    cols = cols if cols.size else np.array([0])
    r, c = rows.size, cols.size
    balanced = "balanced" in kinds
    top = 2.0 ** rng.integers(1, 12 if balanced else 50)
    G = _counts(rng, (r, c), top)
    U = G + _counts(rng, (r, c), top)
    U[rng.random((r, c)) < 0.15] = 0.0  # structural zeros (and, with G > 0, anything)
    k = int(rng.integers(1, 2 ** (12 if balanced else 20)))
    nA, nB = rng.integers(0, k + 1, r), rng.integers(0, k + 1, c)
    rF, cF = _counts(rng, r, top), _counts(rng, c, top)
    sk, ek, fk = kinds
    sigma, tau = _integers(rng, m, sk), _integers(rng, n, sk)
    e, f = _integers(rng, m, ek), _integers(rng, n, ek)
    if balanced and rng.random() < 0.5:  # the subnormal term 2**(e' + f' - 1075) as large
        e, f = e + 535, f + 535
    if fk in ("near", "balanced"):  # as in a product: the fine exponents a few bits above
        hi = 4 if balanced else 16
        e1, f1 = e[rows] + rng.integers(0, hi, r), f[cols] + rng.integers(0, hi, c)
    else:
        e1, f1 = _integers(rng, r, fk), _integers(rng, c, fk)
    if balanced:
        R = float(np.ldexp(rng.uniform(1, 2), rng.integers(-4, 5)))
        g2 = float(np.ldexp(rng.uniform(1, 2), rng.integers(-8, 1)))
    elif rng.random() < 0.5:  # a real plan's terms, else any
        plan = crt_plan(str(rng.choice(["int8", "fp8", "fp64"])), int(rng.integers(2, 21)))
        R, g2 = plan.rounding, plan.gamma2
    else:
        R, g2 = float(np.ldexp(rng.uniform(0, 2), rng.integers(-60, 60))), \
            float(rng.choice([0.0, np.ldexp(rng.uniform(1, 2), rng.integers(-110, 0))]))
    ratio = np.ldexp(rng.uniform(0.5, 1, (m, n)), rng.integers(-60, 60, (m, n)))
    pick = rng.random((m, n))
    ratio[pick < 0.1] = np.nan
    ratio[(pick >= 0.1) & (pick < 0.15)] = np.inf
    ratio[(pick >= 0.15) & (pick < 0.2)] = 0.0
    bnd = None
    if bound:
        bnd = np.ldexp(rng.uniform(0.5, 1, (m, n)), rng.integers(-1080, 1000, (m, n)))
        pick = rng.random((m, n))
        bnd[pick < 0.1] = np.nan
        bnd[(pick >= 0.1) & (pick < 0.15)] = np.inf
        bnd[(pick >= 0.15) & (pick < 0.2)] = 0.0
    args = dict(G=G, U=U, rF=rF, cF=cF, nA=nA, nB=nB, sigma=sigma[rows], tau=tau[cols],
                de=e1 - e[rows], df=f1 - f[cols], e=e1, f=f1, R=R, g2=g2,
                safety=1.0 + 2.0 ** -40, rows=rows, cols=cols)
    return args, ratio, bnd, (sigma, tau, e, f)


def both(args, ratio, bnd):
    """The compiled pass and the reference on copies: ``((ratio, bound), (ratio, bound))``."""
    out = []
    for fn in (kernel.refined_ratios, reference.refined_ratios):
        r, b = ratio.copy(), None if bnd is None else bnd.copy()
        with np.errstate(all="ignore"):  # the reference's inf * 0 (NaN) warns; not a result
            fn(**args, ratio=r, bound=b)
        out.append((r, b))
    return out


KINDS = st.one_of(st.just(("balanced",) * 3), st.tuples(
    *[st.sampled_from(["small", "wide", "huge", "mixed"])] * 2,
    st.sampled_from(["near", "small", "wide", "huge", "mixed"])))


@MANY
@given(st.integers(0, 2 ** 32), KINDS, st.booleans())
def test_refined_ratios_are_the_references_bits(seed, kinds, with_bound):
    args, ratio, bnd, _ = block(seed, kinds, with_bound)
    (r1, b1), (r2, b2) = both(args, ratio, bnd)
    assert_same_bits(r1, r2, "ratio")
    if with_bound:
        assert_same_bits(b1, b2, "bound")
    else:
        assert b1 is None and b2 is None
    outside = np.ones(ratio.shape, bool)
    outside[np.ix_(args["rows"], args["cols"])] = False
    assert_same_bits(r1[outside], ratio[outside], "ratio outside the block")


def test_the_random_blocks_reach_every_case():
    """The property above is not vacuous: over its kinds of data, the fine values (seen
    through an all-inf ``ratio`` and ``bound``) and the updates hold every case the pass
    must reproduce, and the pass reproduces them."""
    seen = dict.fromkeys(["U == 0", "G == 0 < U", "fine inf (G == 0)", "fine inf (overflow)",
                          "fine NaN", "subnormal bound", "bound 2 * 5e-324", "bound inf",
                          "NaN kept", "lowered", "kept"], False)
    for seed in range(400):
        kinds = [("small",) * 3, ("wide",) * 3, ("huge", "wide", "wide"),
                 ("mixed",) * 3, ("small", "small", "near"), ("balanced",) * 3][seed % 6]
        args, ratio, bnd, _ = block(seed, kinds)
        ix = np.ix_(args["rows"], args["cols"])
        for start in (ratio, np.full(ratio.shape, np.inf)):
            (r1, b1), (r2, b2) = both(args, start, bnd if start is ratio else start)
            assert_same_bits(r1, r2, "ratio")
            assert_same_bits(b1, b2, "bound")
        fine, fine_bound, G, U = r2[ix], b2[ix], args["G"], args["U"]
        old, new = ratio[ix], both(args, ratio, bnd)[1][0][ix]
        seen["U == 0"] |= bool((U == 0).any())
        seen["G == 0 < U"] |= bool(((G == 0) & (U > 0)).any())
        seen["fine inf (G == 0)"] |= bool((np.isinf(fine) & (G == 0) & (U > 0)).any())
        seen["fine inf (overflow)"] |= bool((np.isinf(fine) & (G > 0)).any())
        seen["fine NaN"] |= bool(np.isnan(fine).any())
        seen["subnormal bound"] |= bool(((fine_bound > 5e-324)
                                         & (fine_bound < 2.0 ** -1022)).any())
        # ldexp rounding to the smallest subnormal (num 2**-ef > 2**-1075 by the sub term)
        seen["bound 2 * 5e-324"] |= bool((fine_bound == 2 * 5e-324).any())
        seen["bound inf"] |= bool(np.isinf(fine_bound).any())
        seen["NaN kept"] |= bool(np.isnan(old).any() and np.isnan(new[np.isnan(old)]).all())
        seen["lowered"] |= bool((new < old).any())
        seen["kept"] |= bool((new == old).any())
    assert all(seen.values()), seen


@pytest.mark.parametrize("seed", range(6))
def test_certify_returns_the_same_maximum_and_failures(seed):
    """Through :meth:`Refinement.certify` on both backends: ratio, bound, the maximum
    ratio (bits, NaN included) and the failure count."""
    args, ratio, bnd, (sigma, tau, e, f) = block(seed, ("mixed",) * 3)
    got = []
    for be in (CPU, NP):
        ref = Refinement(args["rows"], args["cols"], args["G"], args["U"], args["e"],
                         args["f"], args["rF"], args["cF"], args["nA"], args["nB"], be)
        plan = crt_plan("int8", 9)
        r, b = ratio.copy(), bnd.copy()
        with np.errstate(all="ignore"):
            top, fails = ref.certify(sigma, tau, e, f, plan, r, b)
        got.append((r, b, top, fails))
    (r1, b1, t1, f1), (r2, b2, t2, f2) = got
    assert_same_bits(r1, r2, "ratio")
    assert_same_bits(b1, b2, "bound")
    assert bits(t1) == bits(t2) and f1 == f2 and isinstance(f1, int)


def test_minimum_and_ldexp_are_numpys():
    """The pass's primitives on the values where numpy's rules matter."""
    vals = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, 5e-324, 1.0, 3.0, 2.0 ** 1023,
                     1.5 * 2.0 ** -1030])
    a, b = np.meshgrid(vals, vals)
    got = np.array([kernel.minimum(x, y) for x, y in zip(a.ravel(), b.ravel())])
    assert_same_bits(got, np.minimum(a.ravel(), b.ravel()), "minimum")
    x = np.repeat(vals, 13)
    ex = np.tile(np.array([0, 1, -1, 1023, 1024, -1022, -1023, -1074, -1075, 2100, -2100,
                           2 ** 31 + 7, -(2 ** 40)], np.int64), vals.size)
    got = np.array([kernel.ldexp(v, k) for v, k in zip(x, ex)])
    with np.errstate(over="ignore"):
        assert_same_bits(got, np.ldexp(x, ex), "ldexp")


def test_repeated_or_unordered_indices_are_refused():
    args, ratio, bnd, _ = block(3, ("small",) * 3)
    if args["rows"].size < 2:
        args, ratio, bnd, _ = block(5, ("small",) * 3)
    rows = args["rows"].copy()
    rows[1] = rows[0]
    with pytest.raises(ValueError, match="rows must be strictly increasing"):
        kernel.refined_ratios(**{**args, "rows": rows}, ratio=ratio, bound=bnd)
    with pytest.raises(ValueError, match="cols must be strictly increasing"):
        kernel.refined_ratios(**{**args, "cols": args["cols"] + ratio.shape[1]}, ratio=ratio,
                              bound=bnd)
    with pytest.raises(ValueError, match="nA must have shape"):
        kernel.refined_ratios(**{**args, "nA": args["nA"][:-1]}, ratio=ratio, bound=bnd)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from(["C", "F", "strided"]), st.integers(0, 1))
def test_add_nonzeros_is_the_references(seed, layout, outer):
    """``F + I`` on every layout of an operand with zeros of both signs, subnormals, Inf
    and NaN; the planes hold ``-0.0``, which numpy's ``+ 0.0`` turns into ``+0.0``."""
    rng = np.random.default_rng(seed)
    b, r, c = rng.integers(1, 3), rng.integers(1, 150), rng.integers(1, 150)
    X = np.ldexp(rng.standard_normal((b, r, c)), rng.integers(-1080, 1000, (b, r, c)))
    pick = rng.random((b, r, c))
    X[pick < 0.2] = 0.0
    X[(pick >= 0.2) & (pick < 0.3)] = -0.0
    bad = (pick >= 0.3) & (pick < 0.35)
    X[bad] = rng.choice([np.inf, -np.inf, np.nan], bad.sum())
    if layout == "F":
        X = np.ascontiguousarray(X.transpose(0, 2, 1)).transpose(0, 2, 1)
    elif layout == "strided":
        X = np.repeat(X, 2, axis=2)[:, :, ::2]
    planes = np.floor(rng.uniform(0, 2 ** 20, (b, r, c)))
    planes[rng.random((b, r, c)) < 0.1] = -0.0
    got = []
    for be in (CPU, NP):
        P = planes.copy()
        be.add_nonzeros(be.operand(X, outer), P)
        got.append(P)
    assert_same_bits(got[0], got[1], "F + I")
    assert_same_bits(got[1], planes + ((X != 0) & np.isfinite(X)), "the reference")


class _ReferenceRefinement(CPUBackend):
    """``cpu`` with the refinement's passes of the reference: the product as before."""

    def refined_ratios(self, *args) -> None:
        reference.refined_ratios(*args)

    def add_nonzeros(self, op, planes) -> None:
        reference.add_nonzeros(op.X, planes)


@pytest.mark.parametrize("n, seed, fortran, scheme, count", [
    (257, 2, False, "int8", "auto"), (300, 1, True, "int8", 16),
    (180, 5, False, "int8", 9), (200, 7, True, "fp8", "auto")])
def test_products_with_a_refined_block_keep_their_bits(n, seed, fortran, scheme, count):
    """``ozaki.dgemm`` on spread inputs (``N(0,1) exp(N(0,1))``) whose certificate refines
    a block: result, info and error bound identical with the reference passes."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) * np.exp(rng.standard_normal((n, n)))
    B = rng.standard_normal((n, n)) * np.exp(rng.standard_normal((n, n)))
    A[::7, 3] = 0.0
    if fortran:
        B = np.asfortranarray(B)
    got = []
    for be in (CPU, _ReferenceRefinement()):
        C, info = ozaki.dgemm(A, B, scheme=scheme, num_moduli=count, bounds=True,
                              backend=be)
        got.append((C, info))
    (C1, i1), (C2, i2) = got
    assert i1.refined_block != (0, 0)  # the case under test
    assert_same_bits(C1, C2, "C")
    assert_same_bits(i1.error_bound, i2.error_bound, "error bound")
    skip = {"seconds", "error_bound", "backend"}
    assert {k: v for k, v in vars(i1).items() if k not in skip} == \
        {k: v for k, v in vars(i2).items() if k not in skip}
