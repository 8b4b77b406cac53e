"""The compiled passes of the refinement (:class:`ozaki.core.certify.Refinement`).

:func:`refined_ratios` lowers the ratio (and bound) of a block of a slice's entries to
the fine bound, :func:`add_nonzeros` forms the upper operands ``F + I`` of the fine
bound GEMMs. Both give the bits of the reference formulation
(:func:`ozaki.backends.numpy.certificate.refined_ratios`, numpy's ufuncs on whole
blocks), checked by ``tests/test_certify_refine_kernel.py``:

* every entry is formed by the same IEEE operations in the same order, one rounding
  each (no ``fastmath``: no FMA contraction, no reassociation; ``error_model="numpy"``:
  divisions by zero and overflows give inf and NaN, as numpy's do);
* ``np.ldexp`` becomes :func:`ldexp`, ``np.minimum`` :func:`minimum`, ``np.where`` a
  branch between the same two values;
* each entry of ``ratio`` and ``bound`` is read and written by one task, so the bits
  do not depend on the thread count.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .kernels import CACHE, POW2
from .parallel import run

__all__ = ["ldexp", "minimum", "refined_ratios", "add_nonzeros"]

_INT_MIN, _INT_MAX = -2 ** 31, 2 ** 31 - 1
_U = 2.0 ** -53
#: Rows of the block per task of :func:`refined_ratios`.
_ROWS = 32
#: Side of the square tiles of :func:`add_nonzeros` (a transposed write stays in cache).
_TILE = 64
_ABS = 0x7FFFFFFFFFFFFFFF


@nb.njit(inline="always")
def ldexp(x, e):
    """``np.ldexp(x, e)`` for a float64 ``x`` and an int64 ``e``, bit for bit.

    numpy's loop for 64-bit exponents calls C ``ldexp(x, (int) e)``, with ``e``
    clamped to the range of ``int`` first; C ``ldexp`` returns ``x 2**e`` rounded
    once (to nearest even, into the subnormals, to inf on overflow; NaN, inf and
    signed zeros kept). For ``-1022 <= e <= 1023``, ``2**e`` is a normal double and
    ``x * 2**e`` is one IEEE multiplication: the same single rounding of the same
    exact value, so the same bits. Other exponents (rare: near the ends of the
    range) call the same C ``ldexp`` (numba's ``math.ldexp``, whose exponent is a C
    ``int``: clamped here as numpy clamps it).
    """
    if e >= -1022 and e <= 1023:
        return x * POW2[e + 1022]
    return math.ldexp(x, np.int32(min(max(e, _INT_MIN), _INT_MAX)))


@nb.njit(inline="always")
def minimum(a, b):
    """``np.minimum(a, b)``: ``a`` if it is NaN, else ``b`` if it is NaN, else the smaller.

    numpy's own rule (``a <= b or isnan(a) ? a : b``, in its SIMD loops too). Its SIMD
    loops may return either zero when ``a`` and ``b`` are zeros of opposite signs; no
    ``-0.0`` reaches the refinement (its ratios and bounds are ``+0.0``, quotients and
    sums of non-negative terms, or inf or NaN), so that case does not arise.
    """
    return a if a <= b or a != a else b


@nb.njit(nogil=True, error_model="numpy", cache=CACHE)
def _refined_rows(t0, t1, G, U, rF, cF, nA, nB, ps0, pt0, de, df, ps, pt, e, f, R, g2x2,
                  safety, rows, cols, ratio, bound, fill_bound):
    """Tasks ``t0:t1`` of :func:`refined_ratios`: :data:`_ROWS` rows of the block each."""
    m, n = G.shape
    for i in range(t0 * _ROWS, min(m, t1 * _ROWS)):
        ri, ni, rFi, ps0i, psi, dei, ei = rows[i], nA[i], rF[i], ps0[i], ps[i], de[i], e[i]
        for j in range(n):
            Uij, Gij, cj = U[i, j], G[i, j], cols[j]
            c = float(min(ni, nB[j]))  # integers below 2**53: exact
            coarse = ps0i * (cF[j] + c) + pt0[j] * (rFi + c)
            T = minimum(ldexp(coarse, dei + df[j]), 2.0 * Uij)
            ef = ei + f[j]
            k = max(ef - 1075, -100)  # 2**k is normal (k >= -100) or overflows
            sub = POW2[k + 1022] if k <= 1023 else np.inf
            num = ((T + (psi * pt[j]) * R) + g2x2 * Uij + sub) * safety
            if Uij == 0.0:
                fine = 0.0
            elif Gij > 0.0:
                fine = num / (_U * Gij)
            else:
                fine = np.inf
            ratio[ri, cj] = minimum(ratio[ri, cj], fine)
            if fill_bound:
                fb = 0.0 if Uij == 0.0 else ldexp(num, -ef) + 5e-324
                bound[ri, cj] = minimum(bound[ri, cj], fb)


def _indices(ix, size: int, name: str) -> np.ndarray:
    """``ix`` as contiguous int64, strictly increasing within ``[0, size)``, else ``ValueError``.

    The pass updates ``ratio`` in place: a repeated index would see its own update,
    where numpy's ``ratio[ix] = minimum(ratio[ix], fine)`` reads every entry first.
    """
    ix = np.ascontiguousarray(ix, dtype=np.int64)
    if ix.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {ix.shape}")
    if ix.size and (ix[0] < 0 or ix[-1] >= size or (np.diff(ix) <= 0).any()):
        raise ValueError(f"{name} must be strictly increasing indices in [0, {size})")
    return ix


def refined_ratios(G, U, rF, cF, nA, nB, sigma, tau, de, df, e, f, R, g2, safety, rows,
                   cols, ratio, bound) -> None:
    """``ratio[ix] = minimum(ratio[ix], fine)`` (and ``bound``) on the block ``ix = (rows, cols)``.

    The arguments and the formula are those of the reference,
    :func:`ozaki.backends.numpy.certificate.refined_ratios`: block data ``G``, ``U``
    (r, c) FP64, row data ``rF``, ``nA``, ``sigma``, ``de``, ``e`` (r,), column data
    ``cF``, ``nB``, ``tau``, ``df``, ``f`` (c,); ``rows``, ``cols`` strictly increasing.
    The powers of two that depend on a row or a column only are formed here by the
    reference's own numpy expressions; every per-entry operation runs in the compiled
    pass, in the reference's order, with no temporary.
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    U = np.ascontiguousarray(U, dtype=np.float64)
    r, c = G.shape
    if U.shape != (r, c):
        raise ValueError(f"U must have G's shape {G.shape}, got {U.shape}")
    rows = _indices(rows, ratio.shape[0], "rows")
    cols = _indices(cols, ratio.shape[1], "cols")
    line = {}
    for name, x, size, dtype in (("rF", rF, r, np.float64), ("cF", cF, c, np.float64),
                                 ("nA", nA, r, np.int64), ("nB", nB, c, np.int64),
                                 ("sigma", sigma, r, np.int64), ("tau", tau, c, np.int64),
                                 ("de", de, r, np.int64), ("df", df, c, np.int64),
                                 ("e", e, r, np.int64), ("f", f, c, np.int64),
                                 ("rows", rows, r, np.int64), ("cols", cols, c, np.int64)):
        x = np.ascontiguousarray(x, dtype=dtype)
        if x.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {x.shape}")
        line[name] = x
    if bound is not None and bound.shape != ratio.shape:
        raise ValueError(f"bound must have ratio's shape {ratio.shape}, got {bound.shape}")
    sigma, tau, de, df = line["sigma"], line["tau"], line["de"], line["df"]
    with np.errstate(over="ignore"):  # the reference's per-line powers (exact or inf)
        ps0, pt0 = np.ldexp(1.0, -sigma), np.ldexp(1.0, -tau)
        ps, pt = np.ldexp(1.0, -(sigma - de)), np.ldexp(1.0, -(tau - df))
    fill_bound = bound is not None
    run(_refined_rows, (r + _ROWS - 1) // _ROWS, G, U, line["rF"], line["cF"], line["nA"],
        line["nB"], ps0, pt0, de, df, ps, pt, line["e"], line["f"], float(R), 2 * g2,
        float(safety), rows, cols, ratio, bound if fill_bound else np.empty((0, 0)),
        fill_bound)


@nb.njit(nogil=True, cache=CACHE)
def _nonzero_tiles(t0, t1, X, P):
    """Tiles ``t0:t1`` of :func:`add_nonzeros`: ``P += 1.0 if x is finite and nonzero else 0.0``."""
    b, R, C = X.shape
    tr, tc = (R + _TILE - 1) // _TILE, (C + _TILE - 1) // _TILE
    for t in range(t0, t1):
        g = t // (tr * tc)
        r0 = (t // tc) % tr * _TILE
        c0 = t % tc * _TILE
        for i in range(r0, min(R, r0 + _TILE)):
            for j in range(c0, min(C, c0 + _TILE)):
                a = X[g, i, j] & _ABS  # |x|: 0 for zeros; exponent field 2047 for Inf, NaN
                P[g, i, j] += 1.0 if a != 0 and (a >> 52) != 2047 else 0.0


def add_nonzeros(bits, transposed: bool, planes) -> None:
    """``planes += (x != 0) & isfinite(x)`` in place, entry by entry, as numpy's ``+=`` of a bool.

    ``bits`` (b, r, c): the operand's C-ordered int64 view (:class:`ozaki.core.backend.Operand`);
    ``planes`` (FP64) has the product's shape, the transpose of the bits' last two axes
    when ``transposed``. Every entry gets ``+ 1.0`` or ``+ 0.0``, the values numpy's
    cast of the bool adds (so even a ``-0.0`` becomes ``+0.0`` as there). Tiles of
    :data:`_TILE` squared entries keep a transposed walk in cache.
    """
    P = planes.swapaxes(-1, -2) if transposed else planes
    if P.shape != bits.shape or P.dtype != np.float64:
        raise ValueError(f"planes must be FP64 of the operand's shape, got {planes.dtype} "
                         f"{planes.shape} for {bits.shape}")
    b, R, C = bits.shape
    tiles = b * ((R + _TILE - 1) // _TILE) * ((C + _TILE - 1) // _TILE)
    run(_nonzero_tiles, tiles, bits, P)
