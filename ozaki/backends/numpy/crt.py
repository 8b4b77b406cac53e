"""Steps 3 and 4: the exact modular products reduced to residues, and the Chinese
Remainder reconstruction with its power-of-two scaling.

Every entry goes through the same IEEE operations in the same order as in the compiled
passes; the reductions (:func:`~ozaki.backends.numpy.ieee.smod`) and the level sums are
exact (integers below ``2**53``), the quotient estimate and the TwoSum chain round in
the order written in :func:`reconstruct`.
"""

from __future__ import annotations

import numpy as np

from ...core.moduli import modular_constants, short_bound
from .ieee import ldexp, rint, smod_product, smod_short

__all__ = ["reduce_into", "store", "complex_store", "add_halves", "reconstruct"]


def reduce_into(acc, prod, p: int, first: bool, bound: int) -> None:
    """``acc = smod(prod, p)`` (``first``) or ``acc += smod(prod, p)`` (k-blocks).

    ``|prod| <= bound <= 2**53``; the residues and their running sums are integers far
    below ``2**53`` (``p / 2`` per block), so every addition is exact.
    """
    r = smod_product(prod, *modular_constants(p), short_bound(bound))
    if first:
        acc[...] = r
    else:
        acc += r


def store(prod, p: int, out, bound: int) -> None:
    """``out = smod(prod, p)`` in ``out``'s integer type (an integer below ``2**21``: exact)."""
    r = smod_product(prod, *modular_constants(p), short_bound(bound))
    np.copyto(out, r, casting="unsafe")


def complex_store(p1, p2, p3, p: int, out, n: int, bound: int) -> None:
    """Gauss: ``out[..., :n] = smod(r1 - r2)``, ``out[..., n:] = smod((r3 - r1) - r2)``.

    ``r_i = smod(P_i, p)`` first; the differences of residues (``|.| <= 3p/2``) are exact
    and take one short reduction each.
    """
    pf, pinv, c26 = modular_constants(p)
    short = short_bound(bound)
    r1, r2, r3 = (smod_product(x, pf, pinv, c26, short) for x in (p1, p2, p3))
    np.copyto(out[..., :n], smod_short(r1 - r2, pf, pinv), casting="unsafe")
    np.copyto(out[..., n:2 * n], smod_short((r3 - r1) - r2, pf, pinv), casting="unsafe")


def add_halves(x, axis: int, p: int, out) -> np.ndarray:
    """``out = smod(x_1 + x_2, p)`` for the halves of the residue planes ``x`` (b, r, c)
    along ``axis`` (-1: columns, -2: rows); ``|x_1 + x_2| <= p - 1``, exact."""
    x = np.ascontiguousarray(x)
    half = x.shape[axis] // 2
    r, c = out.shape[-2], out.shape[-1]
    if axis == -2:
        x1, x2 = x[..., :r, :c], x[..., half:half + r, :c]
    else:
        x1, x2 = x[..., :r, :c], x[..., :r, half:half + c]
    np.copyto(out, smod_short(np.asarray(x1, np.float64) + x2, float(p), 1.0 / p),
              casting="unsafe")
    return out


def _level_sums(F: list, W: np.ndarray) -> list:
    """``S_l = sum_t W[t, l] F_t`` per level, from ``0.0``, the terms grouped as the
    compiled pass groups them: fours ``(w0 F0 + w1 F1) + (w2 F2 + w3 F3)``, then a pair,
    then one.

    Exact in any order (every partial sum is an integer multiple of the level's grid
    below ``2**53`` of it, :mod:`ozaki.core.moduli`); starting from ``+0.0`` makes a zero
    sum ``+0.0`` whatever the signs of zero terms. The grouping is kept all the same.
    """
    N, L = W.shape
    sums = []
    for lv in range(L):
        w = [float(W[t, lv]) for t in range(N)]
        S = np.zeros(F[0].shape)
        t = 0
        while t + 4 <= N:
            S = S + ((w[t] * F[t] + w[t + 1] * F[t + 1]) + (w[t + 2] * F[t + 2]
                                                            + w[t + 3] * F[t + 3]))
            t += 4
        if t + 2 <= N:
            S = S + (w[t] * F[t] + w[t + 1] * F[t + 1])
            t += 2
        if t < N:
            S = S + w[t] * F[t]
        sums.append(S)
    return sums


def reconstruct(store_, plan, s, t, out, c0: int, products: bool, bound: int) -> None:
    """CRT of ``store_`` (N, b, m, w) into the columns ``c0:c0 + w`` of ``out`` (b, m, n).

    Per entry, in this order (the compiled pass's):

    1. ``F_t``: the stored residue as a float, or, with ``products``, ``smod`` of the
       exact product (:func:`~ozaki.backends.numpy.ieee.smod_product`);
    2. the level sums ``S_l`` (:func:`_level_sums`, exact);
    3. ``q = rint(((0 + S_0 pinv) + S_1 pinv) + ...)``, the quotient estimate, summed over
       the levels in order (rounded; exact after ``rint`` thanks to the range margin);
    4. ``hi = S_0 - q P_0`` and ``lo = 0``, then for each further level ``d = S_l - q P_l``
       (exact) and the TwoSum ``s = hi + d``, ``bb = s - hi``,
       ``lo = lo + ((hi - (s - bb)) + (d - bb))``, ``hi = s``;
    5. ``(hi + lo) 2**-(s_i + t_j)`` (:func:`~ozaki.backends.numpy.ieee.ldexp`).

    Parameters
    ----------
    store_ : ndarray, shape (N, b, m, w)
        Residues (any integer or float type), or with ``products`` the exact modular
        products (integers up to ``bound`` in magnitude).
    plan : CRTPlan
        The constants of the N moduli (:func:`ozaki.core.moduli.crt_plan`).
    s, t : ndarray of int, shapes (b, m) and (b, n)
        The shifts of the rows of ``A`` and of the columns of ``B``.
    out : ndarray, shape (b, m, n)
        Receives the columns ``c0:c0 + w`` (a strided view is fine).
    c0 : int
        First column of ``out`` written.
    products : bool
        Whether ``store_`` holds exact products (reduced here) rather than residues.
    bound : int
        Bound of the products' magnitudes: ``<= 2**52`` takes the one-step reduction.

    Raises
    ------
    ValueError
        When the columns are not in ``out``, or ``bound`` exceeds ``2**53``.
    """
    if not 0 <= c0 <= out.shape[-1] - store_.shape[-1]:
        raise ValueError("columns c0 .. c0 + w - 1 are not in out")
    W = np.asarray(plan.weights)
    N, L = W.shape
    w = store_.shape[-1]
    short = short_bound(bound)
    F = []
    for q in range(N):
        if products:
            F.append(smod_product(store_[q], *modular_constants(plan.moduli[q]), short))
        else:
            F.append(np.asarray(store_[q], np.float64))
    S = _level_sums(F, W)
    p_inv = float(plan.p_inv)
    P = [float(x) for x in plan.p_levels]
    with np.errstate(invalid="ignore", over="ignore"):
        acc = np.zeros(S[0].shape)
        for lv in range(L):
            acc = acc + S[lv] * p_inv
        q = rint(acc)
        hi = S[0] - q * P[0]
        lo = np.zeros(hi.shape)
        for lv in range(1, L):
            d = S[lv] - q * P[lv]
            sm = hi + d
            bb = sm - hi
            lo = lo + ((hi - (sm - bb)) + (d - bb))
            hi = sm
        e = -(np.asarray(s, np.int64)[:, :, None]
              + np.asarray(t, np.int64)[:, None, c0:c0 + w])
        out[:, :, c0:c0 + w] = ldexp(hi + lo, e)
