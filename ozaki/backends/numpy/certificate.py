"""The accurate mode's upper bound ``U`` and certificate, and the fast mode's maxima.

``U_ij = ((G_ij + rF_i) + cF_j) + min(nA_i, nB_j)`` (0 where ``nB_j = 0``, and on rows
with ``nA_i = 0``) bounds ``sum_l alpha_il beta_lj`` (:mod:`ozaki.core.certify`): sums
of integers below ``2**53``, exact. The ratio pass rounds, per entry and per count, in
the order written in :func:`componentwise_ratios`, the compiled pass's.

The maxima follow the compiled passes' conventions. The bound passes keep a running
maximum that starts at ``+0.0`` and takes a value only when it is larger (``v > best``):
NaN never enters and the result is ``+0.0`` unless some value is positive, which is
``where(v > 0, v, 0).max(initial=0)`` (equal positive values have equal bits, so the
order does not matter). The fast mode's maxima propagate NaN (:func:`_running_max`).
"""

from __future__ import annotations

import numpy as np

from .ieee import ldexp, pow2

__all__ = ["upper", "upper_rowmax", "upper_scaled_colmax", "componentwise_ratios",
           "refined_ratios", "add_nonzeros", "normwise_maxima"]

_U = 2.0 ** -53


def _positive_max(v: np.ndarray, axis) -> np.ndarray:
    """Running maximum from ``+0.0`` with ``v > best`` (module docstring), along ``axis``."""
    return np.where(v > 0, v, 0.0).max(axis=axis, initial=0.0)


def upper(G, rF, cF, nA, nB):
    """``(U, ni, nj)``: ``U`` (b, m, n) as above, and the counts as floats (exact below ``2**53``).

    ``G`` is converted to float64 (exact: float32 holds integers below ``2**24``), as
    the compiled pass promotes it before its first addition.
    """
    G = np.asarray(G, np.float64)
    ni = np.asarray(nA, np.float64)[:, :, None]
    nj = np.asarray(nB, np.float64)[:, None, :]
    rF = np.asarray(rF, np.float64)[:, :, None]
    cF = np.asarray(cF, np.float64)[:, None, :]
    U = np.where(nj > 0.0, ((G + rF) + cF) + np.minimum(ni, nj), 0.0)
    return np.where(ni > 0.0, U, 0.0), ni, nj


def upper_rowmax(G, rF, cF, nA, nB) -> np.ndarray:
    """``max_j U_ij`` per row, (b, m): integer maxima, 0 on all-zero rows."""
    return _positive_max(upper(G, rF, cF, nA, nB)[0], 2)


def upper_scaled_colmax(G, rF, cF, nA, nB, sigma) -> np.ndarray:
    """``max_i U_ij 2**sigma[q, i]`` per column, (K, b, n): exact (power-of-two scalings)."""
    U = upper(G, rF, cF, nA, nB)[0]
    sigma = np.asarray(sigma, np.int64)
    return np.stack([_positive_max(U * pow2(sigma[q])[:, :, None], 1)
                     for q in range(sigma.shape[0])]) if sigma.shape[0] else \
        np.zeros((0,) + U.shape[:1] + U.shape[2:])


def componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety, ratio, bound,
                         probe):
    """Per-row maxima and failure counts (K, b, m) of the componentwise ratio, ``K`` counts.

    Per entry ``(g, i, j)`` of a row with ``nA_i > 0`` and count ``q``, in this order
    (``ps = 2**-sigma_qi``, ``pt = 2**-tau_qj``, ``c = min(nA_i, nB_j)``; every line
    written as the compiled pass evaluates it)::

        sub   = ldexp(1, e_i + f_j - 1075) if e_i + f_j - 1075 > -100 else 2**-100
        trunc = min(ps * (cF_j + c) + pt * (rF_i + c), 2 * U_ij)
        num   = (fl(1 + 2**-53) * (trunc + (ps * pt) * R_q) + (2 * g2_q) * U_ij + sub) * safety
        r     = num / (2**-53 * G_ij) if G_ij > 0 else inf;   r = 0 where nB_j = 0

    (the compiled pass uses ``2**-100`` directly on rows where no column can raise
    ``e_i + f_j - 1075`` above -100: the same value). A row with ``nA_i = 0`` has ratio
    0. For ``q = 0``, ``ratio`` (when it has entries) receives ``r``, and ``bound`` (when
    it has entries) ``ldexp(num, -(e_i + f_j)) + 5e-324`` (0 where ``nB_j = 0`` or
    ``nA_i = 0``). Returns the row maxima of ``r`` (:func:`_positive_max`) and the counts
    of ``r > 1``.

    ``probe[q]`` asks only whether each slice has a failing entry: the compiled pass
    may stop early then, so its counts are exact only in being nonzero. Here every
    count is computed in full, which meets that contract (and gives the exact values
    where a probed slice certifies, the only case where the caller reads them).

    Parameters
    ----------
    G : ndarray, shape (b, m, n)
        The exact floor GEMM (float32 or float64).
    rF, nA, e : ndarray, shape (b, m)
        Row sums of the floors, nonzero counts, quantisation exponents of ``A``.
    cF, nB, f : ndarray, shape (b, n)
        The same for the columns of ``B``.
    sigma, tau : ndarray of int, shapes (K, b, m) and (K, b, n)
        The extra shifts of each count.
    R, g2 : ndarray, shape (K, b)
        The plan terms of each count (:func:`ozaki.core.moduli.plan_terms`).
    safety : float
        The relative safety factor.
    ratio, bound : ndarray, shape (b, m, n), or empty
        Receive the first count's ratios and absolute bounds when they have entries.
    probe : ndarray of bool, shape (K,)
        The counts for which only a failure matters.

    Returns
    -------
    maxima : ndarray, shape (K, b, m)
    fails : ndarray of int64, shape (K, b, m)
    """
    sigma = np.asarray(sigma, np.int64)
    tau = np.asarray(tau, np.int64)
    K = sigma.shape[0]
    U, ni, nj = upper(G, rF, cF, nA, nB)
    G = np.asarray(G, np.float64)
    live = ni > 0.0
    c = np.minimum(ni, nj)
    cFj = np.asarray(cF, np.float64)[:, None, :]
    rFi = np.asarray(rF, np.float64)[:, :, None]
    ef = np.asarray(e, np.int64)[:, :, None] + np.asarray(f, np.int64)[:, None, :]
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        sub = np.where(ef - 1075 > -100, ldexp(1.0, np.maximum(ef - 1075, -100)), 2.0 ** -100)
        low = np.where(G > 0.0, _U * G, 1.0)
        maxima = np.zeros((K,) + U.shape[:2])
        fails = np.zeros((K,) + U.shape[:2], np.int64)
        for q in range(K):
            ps = pow2(-sigma[q])[:, :, None]
            pt = pow2(-tau[q])[:, None, :]
            Rq = np.asarray(R, np.float64)[q][:, None, None]
            gq = np.asarray(g2, np.float64)[q][:, None, None]
            trunc = np.minimum(ps * (cFj + c) + pt * (rFi + c), 2.0 * U)
            num = ((trunc + (ps * pt) * Rq) + (2.0 * gq) * U + sub) * safety
            r = np.where(G > 0.0, num / low, np.inf)
            r = np.where(live & (nj > 0.0), r, 0.0)
            maxima[q] = _positive_max(r, 2)
            fails[q] = (r > 1.0).sum(axis=2)
            if q == 0 and np.size(ratio):
                ratio[...] = r
            if q == 0 and np.size(bound):
                bound[...] = np.where(live & (nj > 0.0), ldexp(num, -ef) + 5e-324, 0.0)
    return maxima, fails


def refined_ratios(G, U, rF, cF, nA, nB, sigma, tau, de, df, e, f, R, g2, safety, rows, cols,
                   ratio, bound) -> None:
    """The refinement's ratio on the block ``ix = np.ix_(rows, cols)``
    (:class:`ozaki.core.certify.Refinement`): the reference formulation.

    ``ratio[ix] = minimum(ratio[ix], fine)``, and likewise ``bound`` unless it is ``None``,
    with per entry ``(i, j)`` of the block, in this order (``c = min(nA_i, nB_j)``, the
    coarse shifts ``sigma_i``, ``tau_j``, ``de_i + df_j`` the fine units' offset,
    ``ef = e_i + f_j`` the fine quantisation exponents, ``u = 2**-53``)::

        coarse_T = ldexp(1, -sigma_i) (cF_j + c) + ldexp(1, -tau_j) (rF_i + c)
        T        = minimum(ldexp(coarse_T, de_i + df_j), 2 U_ij)
        sub      = ldexp(1, max(ef - 1075, -100))
        num      = ((T + (ldexp(1, de_i - sigma_i) ldexp(1, df_j - tau_j)) R)
                    + (2 g2) U_ij + sub) * safety
        fine     = 0 if U_ij == 0 else num / (u G_ij) if G_ij > 0 else inf
        bound    : 0 if U_ij == 0 else ldexp(num, -ef) + 5e-324

    (``np.minimum`` propagates NaN; a term that overflows is inf and the entry fails,
    the conservative outcome). ``u`` is the unit roundoff, not ``U``: the ratio is the
    bound over the target ``u |A||B|``, bounded below by ``u 2**-ef G``.

    Parameters
    ----------
    G, U : ndarray, shape (r, c)
        The fine lower and upper bound GEMMs of the block (exact integers, FP64).
    rF, nA, sigma, de, e : ndarray, shape (r,)
        The block rows' coarse floor sums and nonzero counts, the coarse extra shifts,
        ``e' - e`` and the fine quantisation exponents ``e'`` (integers).
    cF, nB, tau, df, f : ndarray, shape (c,)
        The same for the block's columns.
    R, g2, safety : float
        The plan's ``rounding`` and ``gamma2``, the relative safety factor.
    rows, cols : ndarray of int, shapes (r,), (c,)
        The block's rows and columns in ``ratio``, strictly increasing.
    ratio, bound : ndarray, shape (m, n)
        The slice's ratios (and absolute bounds, or ``None``), lowered in place.
    """
    ix = np.ix_(rows, cols)
    G, U = np.asarray(G, np.float64), np.asarray(U, np.float64)
    rF, cF = np.asarray(rF, np.float64), np.asarray(cF, np.float64)
    sig, ta = np.asarray(sigma, np.int64), np.asarray(tau, np.int64)
    de, df = np.asarray(de, np.int64)[:, None], np.asarray(df, np.int64)[None, :]
    e, f = np.asarray(e, np.int64), np.asarray(f, np.int64)
    c = np.minimum(np.asarray(nA, np.int64)[:, None],
                   np.asarray(nB, np.int64)[None, :]).astype(np.float64)
    with np.errstate(over="ignore"):
        coarse_T = (np.ldexp(1.0, -sig)[:, None] * (cF[None, :] + c)
                    + np.ldexp(1.0, -ta)[None, :] * (rF[:, None] + c))
        T = np.minimum(np.ldexp(coarse_T, de + df), 2.0 * U)
        ps = np.ldexp(1.0, -(sig[:, None] - de))  # 2**-(s - e')
        pt = np.ldexp(1.0, -(ta[None, :] - df))
        ef = e[:, None] + f[None, :]
        sub = np.ldexp(1.0, np.maximum(ef - 1075, -100))
        num = ((T + (ps * pt) * R) + 2 * g2 * U + sub) * safety
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf: fails
        fine = np.where(U == 0, 0.0, np.where(G > 0, num / (_U * G), np.inf))
    ratio[ix] = np.minimum(ratio[ix], fine)
    if bound is not None:
        with np.errstate(over="ignore"):  # inf is a valid (useless) bound
            fine_bound = np.where(U == 0, 0.0, np.ldexp(num, -ef) + 5e-324)
        bound[ix] = np.minimum(bound[ix], fine_bound)


def add_nonzeros(X, planes) -> None:
    """``planes += (X != 0) & isfinite(X)``: the upper bound operands ``F + I`` from the
    floors ``F`` (FP64 integers, in place; ``X`` the operand, of the planes' shape)."""
    with np.errstate(invalid="ignore"):
        planes += (X != 0) & np.isfinite(X)


def _running_max(v: np.ndarray) -> np.ndarray:
    """Per row of ``v`` (b, n): the compiled pass's ``best = x if x > best or x != x else best``
    from ``-inf`` (``0.0`` for an empty row).

    Without NaN, that is the first entry equal to the maximum (``+0.0`` and ``-0.0``
    compare equal, so the first zero's sign is kept); with NaN, every NaN is taken and
    no number replaces it afterwards: the last NaN of the row.
    """
    b, n = v.shape
    if n == 0:
        return np.zeros(b)
    rows = np.arange(b)
    nan = np.isnan(v)
    top = np.where(nan, -np.inf, v).max(axis=1)
    first = np.argmax(v == top[:, None], axis=1)
    last_nan = n - 1 - np.argmax(nan[:, ::-1], axis=1)
    return np.where(nan.any(axis=1), v[rows, last_nan], v[rows, first])


def normwise_maxima(E, zero, lo2, hi1, shift):
    """Per slice ``(max x, max alpha)``, ``x = ldexp(1, -(shift + E)) / lo2`` and
    ``alpha = hi1 / lo2`` on nonzero lines, 0 on zero lines (:func:`_running_max`).

    A division by zero raises ``ZeroDivisionError``, as in the compiled pass (numba's
    Python error model).
    """
    zero = np.asarray(zero, bool)
    lo = np.asarray(lo2, np.float64)
    if (~zero & (lo == 0.0)).any():
        raise ZeroDivisionError("division by zero")
    lo = np.where(zero, 1.0, lo)
    ex = -(np.asarray(shift, np.int64) + np.asarray(E, np.int64))
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        x = np.where(zero, 0.0, ldexp(1.0, ex) / lo)
        a = np.where(zero, 0.0, np.asarray(hi1, np.float64) / lo)
    return _running_max(x), _running_max(a)
