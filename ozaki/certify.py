"""The accuracy contract: per-call, per-entry error bounds and the moduli count they choose.

Target (what native DGEMM achieves in practice), for every entry::

    |C_ij - (AB)_ij| <= u |(AB)_ij| + u (|A||B|)_ij,        u = 2**-53.

The bound
---------
With ``A' = trunc(diag(2**s) A)``, ``B' = trunc(B diag(2**t))`` and
``C~ = diag(2**-s) A'B' diag(2**-t)`` (recovered exactly by the CRT), the
truncation error is at most (DESIGN.md, "Error bound")::

    T_ij = sum_l min(2**-s_i, |a_il|) |b_lj| + sum_l |a_il| min(2**-t_j, |b_lj|).

Accurate mode has the exact floor GEMM ``G = F_A F_B`` of the quantised
magnitudes ``alpha = |A| 2**e``, ``beta = |B| 2**f`` (:mod:`ozaki.scaling`). As
``min(2**-s_i, |a_il|) <= 2**-s_i [a_il != 0]`` and
``sum_l [a_il != 0] beta_lj <= cF_j + min(nA_i, nB_j)`` (column sums of the
floors, nonzero counts), and symmetrically,
``T_ij <= 2**-(e_i + f_j) (2**-sigma_i (cF_j + c_ij) + 2**-tau_j (rF_i + c_ij))``
with ``s = e + sigma``, ``t = f + tau``, ``c_ij = min(nA_i, nB_j)``; and
``T_ij <= 2 (|A||B|)_ij`` always. ``G`` itself is a **lower** bound:
``(|A||B|)_ij >= 2**-(e_i + f_j) G_ij``.

The reconstruction is exact up to the compensated sum of its ``L`` level terms
(Ogita-Rump-Oishi Sum2): ``|fl(C') - C'| <= (u + g) |C'| + R`` with ``g`` and
``R`` from :class:`ozaki.moduli.CRTPlan` (``gamma2`` and ``rounding``), and the
scale-back rounds once more (by at most ``2**-1075``) only for subnormal results.
Altogether, with ``|C~| <= |AB| + T <= 2 |A||B|``::

    |C_ij - (AB)_ij| <= u |(AB)_ij| + (1 + u)(T_ij + 2**-(s_i + t_j) R)
                        + 2 g (|A||B|)_ij + 2**-1075,

so an entry is **certified** when ``(1 + u)(T_ij + 2**-(s_i+t_j) R) +
2 g (|A||B|)_ij + 2**-1075 <= u (|A||B|)_ij``, checked against the lower bound
above (and the upper bound for the ``g`` term). Every quantity is
scaled by ``2**(e_i + f_j)`` first, so nothing over- or underflows; the float
evaluation carries a relative safety factor of ``2**-40``.

Fast mode has no componentwise information; it certifies the weaker normwise
target ``|C_ij - (AB)_ij| <= u |(AB)_ij| + u ||a_i||_2 ||b_j||_2``: the same
bound with ``T_ij <= 2**-s_i ||b_j||_1 + 2**-t_j ||a_i||_1`` and
``|A||B| <= ||a_i||_2 ||b_j||_2`` must stay below ``u ||a_i||_2 ||b_j||_2`` (see
:func:`normwise_ratio`; the final rounding ``u |(AB)_ij|`` is part of the target,
as in accurate mode, since no bound below it can hold).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from . import kernels, scaling
from .moduli import MIN_MODULI, crt_plan, max_moduli

__all__ = ["CertificationError", "Certificate", "Refinement", "componentwise",
           "Normwise", "normwise_ratio", "normwise_entries", "choose_count", "explain"]

U = 2.0 ** -53
_SAFETY = 1.0 + 2.0 ** -40


class CertificationError(ArithmeticError):
    """Raised with ``fallback="raise"`` when some entries cannot be certified."""


@nb.njit(parallel=True, cache=True)
def _componentwise(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety, ratio, bound):
    """Per-entry ratio of the certified bound to the target (see module docstring).

    Returns per-row maxima of the ratio and per-row counts of entries above 1;
    writes ``ratio`` (per entry) and ``bound`` (the absolute term
    ``(1+u)(T + 2**-(s+t) R) + 2**-1075``, unscaled) when they have entries.
    Entries whose upper bound vanishes are exact zeros: ratio 0.
    """
    m, n = G.shape
    rowmax = np.zeros(m)
    rowfail = np.zeros(m, np.int64)
    fill_ratio = ratio.shape[0] > 0
    fill_bound = bound.shape[0] > 0
    for i in nb.prange(m):
        ps = kernels.POW2[-sigma[i] + 1022]
        worst = 0.0
        fails = 0
        for j in range(n):
            up = kernels.upper(G, rF, cF, nA, nB, i, j)
            if up == 0.0:
                r = 0.0
                if fill_bound:
                    bound[i, j] = 0.0
            else:
                pt = kernels.POW2[-tau[j] + 1022]
                c = float(min(nA[i], nB[j]))
                trunc = min(ps * (cF[j] + c) + pt * (rF[i] + c), 2.0 * up)
                # 2**-1075 (the subnormal scale-back) in the units 2**-(e_i + f_j);
                # below 2**-100 of a unit it is far under u * G_ij >= 2**-53 (kept
                # rigorous by rounding it up to 2**-100)
                ef = e[i] + f[j] - 1075
                sub = kernels.ldexp(1.0, ef) if ef > -100 else 2.0 ** -100
                num = ((1.0 + 2.0 ** -53) * (trunc + (ps * pt) * R) + 2.0 * g2 * up
                       + sub) * safety
                low = G[i, j]
                r = num / (2.0 ** -53 * low) if low > 0.0 else np.inf
                if fill_bound:
                    # + the smallest subnormal covers a rounding of ldexp there
                    bound[i, j] = kernels.ldexp(num, -(e[i] + f[j])) + 5e-324
            if r > worst:
                worst = r
            if r > 1.0:
                fails += 1
            if fill_ratio:
                ratio[i, j] = r
        rowmax[i] = worst
        rowfail[i] = fails
    return rowmax, rowfail


@dataclass
class Certificate:
    """Outcome of the bound for one moduli count.

    Attributes
    ----------
    num_moduli : int
    sigma, tau : ndarray of int64
        Extra shifts on top of the quantisation exponents (``s = e + sigma``).
    max_ratio : float
        Largest ``bound / target`` over the entries (``<= 1``: all certified).
    uncertified : int
        Entries whose bound misses the target.
    kind : str
        ``"componentwise"`` (accurate mode) or ``"normwise"`` (fast mode).
    """

    num_moduli: int
    sigma: np.ndarray
    tau: np.ndarray
    max_ratio: float
    uncertified: int
    kind: str


def componentwise(G, rF, cF, nA, nB, e, f, scheme: str, num_moduli: int, *, ratio=None,
                  bound=None, sigma=None, tau=None) -> Certificate:
    """Shifts for ``num_moduli`` and their componentwise certificate (accurate mode).

    ``G`` is the floor GEMM, ``rF``/``cF`` the row/column sums of the floors,
    ``nA``/``nB`` the nonzero counts, ``e``/``f`` the quantisation exponents.
    ``sigma``/``tau`` impose the extra shifts (else they are chosen from ``G``);
    ``ratio`` and ``bound`` (m, n) receive the per-entry ratio and absolute bound.
    """
    plan = crt_plan(scheme, num_moduli)
    if sigma is None:
        sigma, tau = scaling.accurate_extra_shifts(G, rF, cF, nA, nB, plan.H)
    empty2 = np.zeros((0, 0))
    with kernels.LOCK:
        rowmax, rowfail = _componentwise(
            G, rF, cF, nA, nB, sigma, tau, plan.rounding, plan.gamma2, e, f, _SAFETY,
            empty2 if ratio is None else ratio, empty2 if bound is None else bound)
    return Certificate(num_moduli, sigma, tau, float(rowmax.max(initial=0.0)),
                       int(rowfail.sum()), "componentwise")


@dataclass
class Refinement:
    """Exact FP64 bound GEMMs at a finer quantisation, for a block of entries.

    The coarse bound quantises to the scheme unit's range (16 on FP8): small
    entries floor to 0 and the lower bound of ``|A||B|`` can vanish; its upper
    bound also cannot see structural zeros (``A = B = I``). For the rows and
    columns holding uncertified entries, two exact FP64 GEMMs at ``r'`` bits
    (``r' = min(20, (53 - log2 k) / 2 - 1)``, quantisation exponents ``e'``,
    ``f'``) give the lower bound ``G' = F_A F_B`` and the upper bound
    ``U' = (F_A + I_A)(F_B + I_B)`` (``I`` the nonzero indicators), which is 0
    exactly for structural zeros. The truncation term keeps the coarse bound
    (the fine one would over-count by the quantisation range), capped by
    ``T <= 2 |A||B| <= 2 U'``. Everything is exact integer data, so the outcome
    is the same on every engine. Fields are per block row (``rows``) and column
    (``cols``); ``rF``, ``cF``, ``c`` are the coarse sums and nonzero minima.
    """

    rows: np.ndarray
    cols: np.ndarray
    G: np.ndarray
    U: np.ndarray
    e: np.ndarray
    f: np.ndarray
    rF: np.ndarray
    cF: np.ndarray
    c: np.ndarray

    def certify(self, cert: Certificate, e, f, plan, ratio, bound=None) -> Certificate:
        """Combine ``cert`` (coarse, whose per-entry ``ratio`` is given) with this block."""
        ix = np.ix_(self.rows, self.cols)
        sig, tau = cert.sigma[self.rows], cert.tau[self.cols]
        de = (self.e - e[self.rows])[:, None]  # fine units are 2**-(e' + f')
        df = (self.f - f[self.cols])[None, :]
        coarse_T = (np.ldexp(1.0, -sig)[:, None] * (self.cF[None, :] + self.c)
                    + np.ldexp(1.0, -tau)[None, :] * (self.rF[:, None] + self.c))
        T = np.minimum(np.ldexp(coarse_T, de + df), 2.0 * self.U)
        ps = np.ldexp(1.0, -(sig[:, None] - de))  # 2**-(s - e')
        pt = np.ldexp(1.0, -(tau[None, :] - df))
        ef = self.e[:, None] + self.f[None, :]
        sub = np.ldexp(1.0, np.maximum(ef - 1075, -100))
        num = ((1 + U) * (T + (ps * pt) * plan.rounding) + 2 * plan.gamma2 * self.U
               + sub) * _SAFETY
        with np.errstate(divide="ignore", invalid="ignore"):
            fine = np.where(self.U == 0, 0.0,
                            np.where(self.G > 0, num / (U * self.G), np.inf))
        ratio[ix] = np.minimum(ratio[ix], fine)
        if bound is not None:
            with np.errstate(over="ignore"):  # inf is a valid (useless) bound
                fine_bound = np.where(self.U == 0, 0.0, np.ldexp(num, -ef) + 5e-324)
            bound[ix] = np.minimum(bound[ix], fine_bound)
        return Certificate(cert.num_moduli, cert.sigma, cert.tau,
                           float(ratio.max(initial=0.0)), int((ratio > 1).sum()), cert.kind)


@dataclass
class Normwise:
    """Per-line data of the fast-mode (normwise) bound, normalised so nothing overflows.

    The kernels give ``n2 = ||a 2**-E||_2**2`` and ``n1 = ||a 2**-E||_1`` per line
    (fixed-order FP64 sums of at most ``k`` terms, relative error below
    ``(k + 2) u``; terms below ``2**-500`` are dropped). With ``slack = 1 + (k + 8)
    2**-52``: ``lo2 = sqrt(n2 / slack)`` is a lower bound of the normalised 2-norm,
    ``hi2 = sqrt(n2 slack + k 2**-1000)`` an upper one, ``hi1 = n1 slack + k 2**-500``
    an upper bound of the normalised 1-norm.
    """

    E: np.ndarray
    zero: np.ndarray
    lo2: np.ndarray
    hi2: np.ndarray
    hi1: np.ndarray

    @classmethod
    def from_sums(cls, E, zero, n2, n1, k) -> "Normwise":
        slack = 1.0 + (k + 8) * 2.0 ** -52
        lo2 = np.sqrt(n2 / slack)
        hi2 = np.sqrt(n2 * slack + k * 2.0 ** -1000)
        return cls(E, zero, lo2, hi2, n1 * slack + k * 2.0 ** -500)

    def terms(self, shift):
        """``x = 2**-(shift + E) / lo2`` and ``alpha = hi1 / lo2`` over the nonzero lines."""
        nz = ~self.zero
        lo = self.lo2[nz]
        x = np.ldexp(1.0, -(shift[nz] + self.E[nz]).astype(np.int64)) / lo
        return x, self.hi1[nz] / lo, self.E[nz], lo


def _sub_ratio(Ea, lo_a, Eb, lo_b):
    """``2**-1075 / (u ||a_i|| ||b_j||) = 2**(-1022 - E_a - E_b) / (lo_a lo_b)`` (may be inf)."""
    with np.errstate(over="ignore"):
        return np.ldexp(1.0, np.clip(-1022 - Ea - Eb, -1100, 1100)) / (lo_a * lo_b)


def normwise_ratio(na: Normwise, nb: Normwise, s, t, R, g2) -> float:
    """Largest ``bound / (u ||a_i||_2 ||b_j||_2)`` of the fast-mode bound, in O(m + n).

    With ``x_i = 2**-s_i / ||a_i||_2`` and ``alpha_i = ||a_i||_1 / ||a_i||_2`` (and
    ``y``, ``beta`` for ``B``), ``T_ij / (||a_i|| ||b_j||) <= x_i beta_j + y_j alpha_i``;
    the reconstruction adds ``R x_i y_j`` and ``2 g``, the subnormal scale-back
    ``2**-1075`` (:func:`_sub_ratio`). The maximum over ``(i, j)`` is bounded by the
    products of the maxima. ``R`` and ``g2`` come from :class:`ozaki.moduli.CRTPlan`.
    """
    if na.zero.all() or nb.zero.all():
        return 0.0
    x, alpha, Ea, lo_a = na.terms(s)
    y, beta, Eb, lo_b = nb.terms(t)
    ratio = x.max() * beta.max() + y.max() * alpha.max() + R * x.max() * y.max()
    sub = _sub_ratio(Ea.min(), lo_a.min(), Eb.min(), lo_b.min())
    # |A||B| <= ||a_i||_2 ||b_j||_2 (Cauchy-Schwarz) bounds the 2 g |A||B| term
    return float(((1 + U) * ratio + 2 * g2 + sub) * _SAFETY / U)


def normwise_entries(na: Normwise, nb: Normwise, s, t, R, g2, ratio, bound=None) -> int:
    """Per entry: ``ratio`` (m, n) of the fast-mode bound to ``u ||a_i|| ||b_j||``.

    ``bound`` (m, n), when given, receives the absolute error bound without the
    final rounding ``u |(AB)_ij|`` (added by the caller once ``C`` is known):
    ``(1 + u)(T_ij + 2**-(s_i+t_j) R) + 2 g ||a_i|| ||b_j|| + 2**-1075``, each term
    an upper bound computed with ``ldexp`` on the normalised sums, the whole
    multiplied by the safety factor and raised by four smallest subnormals (the
    underflow of each term's ``ldexp``). Returns the number of entries above 1.
    """
    ratio[...] = 0.0
    if bound is not None:
        bound[...] = 0.0
    if na.zero.all() or nb.zero.all():
        return 0
    ia, jb = np.flatnonzero(~na.zero), np.flatnonzero(~nb.zero)
    x, alpha, Ea, lo_a = na.terms(s)
    y, beta, Eb, lo_b = nb.terms(t)
    with np.errstate(over="ignore", invalid="ignore"):
        r = (x[:, None] * beta[None, :] + alpha[:, None] * y[None, :]
             + R * (x[:, None] * y[None, :]))
        sub = _sub_ratio(Ea[:, None], lo_a[:, None], Eb[None, :], lo_b[None, :])
        ratio[np.ix_(ia, jb)] = ((1 + U) * r + 2 * g2 + sub) * _SAFETY / U
        if bound is not None:
            sa, tb = s[ia].astype(np.int64), t[jb].astype(np.int64)
            T = (np.ldexp(nb.hi1[jb][None, :], Eb[None, :] - sa[:, None])
                 + np.ldexp(na.hi1[ia][:, None], Ea[:, None] - tb[None, :]))
            rec = np.ldexp(R, -(sa[:, None] + tb[None, :]))
            # 0 when g2 == 0 (one CRT level), even where ||a|| ||b|| overflows
            big = 0.0 if g2 == 0 else 2 * g2 * np.ldexp(
                na.hi2[ia][:, None] * nb.hi2[jb][None, :], Ea[:, None] + Eb[None, :])
            bound[np.ix_(ia, jb)] = (((1 + U) * (T + rec) + big + 2.0 ** -1075) * _SAFETY
                                     + 4 * 5e-324)
    return int((ratio > 1).sum())


def choose_count(evaluate, scheme: str, start: int, down: bool = True) -> Certificate:
    """Smallest count whose certificate holds, searching from ``start``.

    ``evaluate(n) -> Certificate``; the bound decreases with the count (the
    shifts only grow with ``P``), so the search walks down while certified and
    up while not. Returns the certificate of the largest count when none holds.
    """
    top = max_moduli(scheme)
    n = min(max(start, MIN_MODULI), top)
    cert = evaluate(n)
    if cert.uncertified == 0:
        while down and n > MIN_MODULI:
            lower = evaluate(n - 1)
            if lower.uncertified:
                break
            n, cert = n - 1, lower
        return cert
    while cert.uncertified and n < top:
        n += 1
        cert = evaluate(n)
    return cert


def explain(cert, mask, scheme, mode):
    """Message for ``fallback="raise"``: how many bits were missing, and where."""
    plan = crt_plan(scheme, cert.num_moduli)
    where = ""
    if mask is not None:
        i, j = np.argwhere(mask)[0]
        where = f"; the first is C[{i}, {j}]"
    if np.isfinite(cert.max_ratio):
        # each extra bit of both shifts halves the bound: 2 bits of P per bit
        need = f"about {2 * np.log2(cert.max_ratio):.0f} more bits of P"
    else:
        need = "a nonzero lower bound of |A||B| (structural cancellation or a wide exponent spread)"
    return (f"{cert.uncertified} entries cannot be certified ({cert.kind} bound, {mode} mode) "
            f"with {cert.num_moduli} {scheme} moduli ({plan.log2_P:.0f} bits of P); the worst "
            f"bound is {cert.max_ratio:.3g} times the target, needing {need}{where}. "
            "Use fallback='exact' or 'none', or another scheme.")
