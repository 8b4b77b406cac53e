"""Entries the emulation does not deliver: the fallback and the overflow guard.

Both are computed by the backend's exactly rounded dot product
(:meth:`~ozaki.core.backend.Backend.exact_dot`; the ``cpu`` backend's is a long
fixed-point accumulator): the exact sum of the products, rounded once.
So a fallback entry is correctly rounded, finite whenever the exact result fits
in FP64, ``+-inf`` with the right sign when it does not, and the same bits on
every engine and for every thread count. Native BLAS is never used: its result
depends on its thread count and it overflows on finite data whose exact product
fits (``[1, -2, 1e308] . [0, 1e308, 3.5]`` is ``1.5e308``, not ``-inf``).

**Fallback** (``fallback="exact"``): the entries whose error bound misses the
target at the count used.

**Overflow guard** (always): an entry with ``(|A||B|)_ij < 2**1023`` has an exact
value below ``2**1023`` and an emulated value within ``2 u (|A||B|)_ij`` of it
(or less), so both are far from the overflow threshold ``2**1024 (1 - 2**-54)``
and the emulated value is finite exactly when it should be. Entries where the
bound ``(|A||B|)_ij < k 2**(E_i + F_j)`` (line exponents, :mod:`ozaki.core.scaling`)
cannot exclude ``2**1023`` are checked on a normalised FP64 product of
magnitudes (rounded up); those that still may reach it are recomputed exactly,
whatever the fallback policy, as the special-value semantics demand.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .kind import COMPLEX, Kind
from .special import apply_nonfinite

__all__ = ["exact_entries", "overflow_risk", "exact_bound", "Needs", "needs_operands", "finish"]

#: ``(|A||B|)_ij`` below ``2**OVERFLOW_EXPONENT`` cannot over- or mis-flow.
OVERFLOW_EXPONENT = 1023


def exact_entries(backend, A: np.ndarray, B: np.ndarray, mask: np.ndarray,
                  out: np.ndarray) -> None:
    """``out[mask] = fl((A @ B)[mask])``, exactly rounded (non-finite factors read as 0).

    Only the rows of ``A`` and columns of ``B`` that hold a masked entry are read.
    """
    ti, tj = np.nonzero(mask)
    if not ti.size:
        return
    ur, ri = np.unique(ti, return_inverse=True)
    uc, ci = np.unique(tj, return_inverse=True)
    out[ti, tj] = backend.exact_dot(A[ur], B[:, uc].T, ri.reshape(-1), ci.reshape(-1))


def exact_bound(C: np.ndarray) -> np.ndarray:
    """Error bound of exactly rounded values ``C``: ``u |C| (1 + 2**-50) + 2**-1074``.

    Correct rounding errs by at most ``u |x|`` for normal ``x`` (hence at most
    ``u |C| / (1 - u)``) and by at most ``2**-1075`` in the subnormal range; an
    overflowed entry gets ``inf``.
    """
    with np.errstate(over="ignore"):
        return np.abs(C) * (2.0 ** -53 * (1 + 2.0 ** -50)) + 5e-324


def overflow_risk(A: np.ndarray, B: np.ndarray, Ea: np.ndarray, zero_a: np.ndarray,
                  Eb: np.ndarray, zero_b: np.ndarray) -> np.ndarray | None:
    """Mask (m, n) of the entries whose ``(|A||B|)_ij`` may reach ``2**1023``, or ``None``.

    ``Ea``/``Eb`` are the line exponents (``|a_il| < 2**Ea_i`` over finite
    entries), ``zero_a``/``zero_b`` the all-zero flags. O(1) when no entry can
    come near (the common case); otherwise one FP64 product of the normalised
    magnitudes ``|a_il| 2**-Ea_i < 1`` of the candidate rows and columns, whose
    entries ``M`` (at most ``k``) err by at most ``k u M`` and lose at most
    ``k 2**-1074`` to underflow: ``M (1 + (k + 2) u) + k 2**-1074`` is an upper
    bound of ``(|A||B|)_ij 2**-(Ea_i + Eb_j)``.
    """
    m, k = A.shape
    n = B.shape[1]
    if zero_a.all() or zero_b.all():
        return None
    lk = math.ceil(math.log2(max(k, 1))) if k else 0
    ea = np.where(zero_a, -10 ** 6, Ea)
    eb = np.where(zero_b, -10 ** 6, Eb)
    top_a, top_b = int(ea.max()), int(eb.max())
    if top_a + top_b + lk < OVERFLOW_EXPONENT:
        return None
    rows = np.flatnonzero(ea + top_b + lk >= OVERFLOW_EXPONENT)
    cols = np.flatnonzero(eb + top_a + lk >= OVERFLOW_EXPONENT)
    with np.errstate(invalid="ignore", over="ignore"):
        Ar = np.where(np.isfinite(A[rows]), np.abs(A[rows]), 0.0)
        Bc = np.where(np.isfinite(B[:, cols]), np.abs(B[:, cols]), 0.0)
        M = np.ldexp(Ar, -ea[rows][:, None]) @ np.ldexp(Bc, -eb[cols][None, :])
        M = M * (1 + (k + 2) * 2.0 ** -53) + k * 5e-324
        limit = np.ldexp(1.0, np.minimum(np.maximum(
            OVERFLOW_EXPONENT - ea[rows][:, None] - eb[cols][None, :], -1100), 1100))
    mask = np.zeros((m, n), bool)
    mask[np.ix_(rows, cols)] = M >= limit
    return mask if mask.any() else None


class Needs(NamedTuple):
    """Per slice (b,), what :func:`finish` must do: read the operands at all (``busy``),
    guard against overflow (``near``), apply non-finite values of ``A`` or ``B``."""

    busy: np.ndarray
    near: np.ndarray
    bad_a: np.ndarray
    bad_b: np.ndarray


def needs_operands(la, lb, k: int, b: int, mask=None) -> Needs:
    """Per slice, whether :func:`finish` reads the operands (a :class:`Needs`).

    ``near``: some ``(|A||B|)_ij`` may reach ``2**1023`` (line exponents); ``bad_a``,
    ``bad_b``: non-finite entries; ``busy`` any of them or a fallback entry in ``mask``.
    """
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    lk = int(np.ceil(np.log2(max(k, 1))))
    top_a = np.where(za, -10 ** 6, Ea).max(axis=1, initial=-10 ** 6)
    top_b = np.where(zb, -10 ** 6, Eb).max(axis=1, initial=-10 ** 6)
    near = np.broadcast_to(top_a + top_b + lk >= OVERFLOW_EXPONENT, (b,))
    bad_a = np.broadcast_to(la.bad.any(axis=1), (b,))
    bad_b = np.broadcast_to(lb.bad.any(axis=1), (b,))
    busy = near | bad_a | bad_b
    if mask is not None:
        busy = busy | mask.any(axis=(1, 2))
    return Needs(busy, near, bad_a, bad_b)


def finish(backend, info, dec, policy: str, out: np.ndarray, la, lb, k: int, b: int,
           kind: Kind, operands) -> None:
    """After the reconstruction: bounds, exact fallback, overflow guard, non-finite values.

    ``out`` (b, m, n) holds the emulated stack (for a complex ``kind``, complex128 or
    the real embedding's ``[Re | Im]`` (b, m, 2n), which the decision and
    ``operands`` describe either way), ``dec``
    its decision, ``la``/``lb`` the operands' line data
    (:class:`ozaki.core.decisions.Lines`), ``k`` the inner dimension of the (real)
    products, ``operands(g) -> (A_g, B_g)`` slice ``g``'s real matrices. Works
    slice by slice, only on slices that need it.
    """
    mask = dec.mask if info.uncertified and policy == "exact" else None
    busy, near, bad_a, bad_b = needs_operands(la, lb, k, b, mask)
    idle = info.error_bound is None and mask is None and not busy.any()
    if not np.iscomplexobj(out) or idle:  # (nothing reads or writes ``out`` when idle)
        _finish_real(backend, info, mask, out, la, lb, busy, near, bad_a, bad_b, operands,
                     kind)
        return
    C, out = out, np.concatenate((out.real, out.imag), axis=-1)  # [Re | Im]
    _finish_real(backend, info, mask, out, la, lb, busy, near, bad_a, bad_b, operands, COMPLEX)
    n = C.shape[-1]
    C.real, C.imag = out[..., :n], out[..., n:]


def _finish_real(backend, info, mask, out, la, lb, busy, near, bad_a, bad_b, operands,
                     kind):
    """:func:`finish` on the real ``out`` (b, m, n) (for complex products ``[Re | Im]``)."""
    if info.error_bound is not None:
        # |C - AB| <= u |AB| + X and |AB| <= |C| + |C - AB| give
        # |C - AB| <= (u |C| + X) / (1 - u); the factor (1 + 2**-50) rounds up.
        eb = info.error_bound
        with np.errstate(over="ignore"):
            eb += 2.0 ** -53 * np.abs(out)
            eb *= 1.0 + 2.0 ** -50
    if mask is not None:
        info.fallback = "exact"
        info.fallback_entries = int(mask.sum())
        info.fallback_block = (int(mask.any(axis=2).sum()), int(mask.any(axis=1).sum()))
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    exact = 0
    for g in np.flatnonzero(busy):
        Ag, Bg = operands(g)
        ga, gb = min(g, la.bad.shape[0] - 1), min(g, lb.bad.shape[0] - 1)
        Ebg = np.concatenate((Eb[gb], Eb[gb])) if kind.complex else Eb[gb]
        zbg = np.concatenate((zb[gb], zb[gb])) if kind.complex else zb[gb]
        sel = None if mask is None else mask[g]
        risk = overflow_risk(Ag, Bg, Ea[ga], za[ga], Ebg, zbg) if near[g] else None
        if risk is not None:
            sel = risk if sel is None else sel | risk
        if sel is not None and sel.any():
            exact_entries(backend, Ag, Bg, sel, out[g])
            exact += int(sel.sum())
            if info.error_bound is not None:
                info.error_bound[g][sel] = exact_bound(out[g][sel])
        if bad_a[g] or bad_b[g]:
            bad_rows = la.bad[ga]
            bad_cols = lb.bad[gb]
            if kind.complex:
                bad_cols = np.concatenate((bad_cols, bad_cols))
            apply_nonfinite(Ag, Bg, bad_rows, bad_cols, out[g])
            if info.error_bound is not None:
                info.error_bound[g][bad_rows, :] = 0.0  # exact-arithmetic values
                info.error_bound[g][:, bad_cols] = 0.0
    info.exact_entries = exact
