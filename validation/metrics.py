"""Errors against the exact product, and exact decisions (bound broken? target missed?).

Every decision is exact: a float comparison settles it when the reference's
uncertainty cannot change the answer, else the entry's exact value decides in
rational arithmetic (:class:`fractions.Fraction` of the entry's exact expansion,
a handful of doubles).

Three kinds of reference:

* ``"exact"`` - every entry as an exact expansion (error-free products summed by
  repeated ``math.fsum``), for inputs within ``[2**-480, 2**480]``;
* ``"double-double"`` - a Dot2 GEMM with an a-priori radius, for larger shapes;
* ``"rational"`` (:class:`RationalReference`) - every entry as a ``Fraction``, for
  small adversarial inputs of any magnitude: exact values beyond the overflow
  threshold (whose correctly rounded value is ``+-inf``), subnormal inputs and
  results, ``(|A||B|)_ij`` near ``2**1024``.

Special values are checked apart (:meth:`Reference.special`): the metrics read
an entry whose exact value overflows and whose result is the right infinity as
error 0, and any other non-finite result as an infinite error.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .reference import (dd_matmul, exact_expansion, fraction_matmul, in_split_range,
                        two_product)

U = 2.0 ** -53
EXACT_LIMIT = 2 ** 23  # m n k up to which every entry gets its exact expansion
FRACTION_LIMIT = 2 ** 14  # ... and is cross-checked with Fractions
RATIONAL_LIMIT = 2 ** 16  # m n k up to which a rational reference is affordable
GUARD = 2 ** 1023  # (|A||B|)_ij from which ozaki's overflow guard must compute exactly
_U = Fraction(1, 2 ** 53)
_TINY = 2.0 ** -1074
_REL = 2.0 ** -50
_NORM_REL = 2.0 ** -48  # relative accuracy of the float normwise target (a few u)


def round_fraction(q: Fraction) -> float:
    """``q`` rounded to the nearest double, ties to even, ``+-inf`` beyond the range.

    ``float(Fraction)`` divides two integers correctly rounded (gradual underflow
    included) and raises ``OverflowError`` exactly when the rounded magnitude is
    ``2**1024`` or more, i.e. ``|q| >= 2**1024 - 2**970``.
    """
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` elementwise for errors: ``0/0 = 0``, ``x/0 = inf``, ``inf/inf = inf``."""
    num = np.asarray(num, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                       np.where(num > 0, np.inf, 0.0))
    return np.where(np.isinf(num), np.inf, out)


class Reference:
    """Exact ``AB`` and ``|A||B|`` of one case (exact expansions, or double-double).

    Attributes
    ----------
    S, T : ndarray
        ``fl(AB)`` and ``fl(|A||B|)`` (the double-double ``hi`` for that kind).
    zero : ndarray of bool
        Entries whose exact value is zero.
    overflow : ndarray of bool
        Entries whose exact value rounds to ``+-inf`` (none within this class's range).
    guard : ndarray of bool
        Entries with ``(|A||B|)_ij >= 2**1023``: ozaki must compute them exactly
        (none within this class's range: ``|A||B| <= k 2**960``).
    """

    _screen = True  # float screening first (False: decide every entry exactly)

    def __init__(self, A: np.ndarray, B: np.ndarray, force_dd: bool = False):
        self.A, self.B = A, B
        m, k = A.shape
        n = B.shape[1]
        self.hi, self.lo, self.rad, dd_abs = dd_matmul(A, B)
        self.exact = not force_dd and m * n * k <= EXACT_LIMIT
        self.kind = "exact" if self.exact else "double-double"
        self._S: dict = {}
        self._T: dict = {}
        self._norm2: dict = {}
        self._normwise: np.ndarray | None = None
        self.checks: dict = {"dd_vs_exact_max_over_rad": None, "fraction_checked": False}
        if self.exact:
            self._S = exact_expansion(A, B)
            self._T = exact_expansion(A, B, absolute=True)
            self.S = self._rounded(self._S, (m, n))
            self.T = self._rounded(self._T, (m, n))
            self.zero = np.array([[not self._S[i, j] for j in range(n)] for i in range(m)],
                                 dtype=bool).reshape(m, n)
            self._cross_check(m, n, k)
        else:
            self.S, self.T = self.hi.copy(), dd_abs
            self.zero = (self.T == 0)  # all terms zero
            for i, j in np.argwhere((self.hi == 0) & (self.lo == 0) & (self.T > 0)):
                self.zero[i, j] = not self.parts(i, j)
        self.overflow = np.zeros((m, n), bool)
        self.guard = np.zeros((m, n), bool)

    @staticmethod
    def _rounded(parts: dict, shape) -> np.ndarray:
        out = np.zeros(shape)
        for (i, j), p in parts.items():
            out[i, j] = p[0] if p else 0.0
        return out

    def _cross_check(self, m, n, k):
        """The double-double GEMM within its radius; Fractions equal (small shapes)."""
        worst = 0.0
        for (i, j), p in self._S.items():
            d = abs(math.fsum([self.hi[i, j], self.lo[i, j]] + [-x for x in p]))
            if not d <= self.rad[i, j]:
                raise AssertionError(f"double-double reference off at ({i}, {j}): "
                                     f"{d:.3g} > radius {self.rad[i, j]:.3g}")
            worst = max(worst, d / self.rad[i, j])
        self.checks["dd_vs_exact_max_over_rad"] = worst
        if m * n * k <= FRACTION_LIMIT:
            F = fraction_matmul(self.A, self.B)
            for (i, j), p in self._S.items():
                if sum(map(Fraction, p), Fraction(0)) != F[i][j]:
                    raise AssertionError(f"exact expansion differs from Fractions at ({i}, {j})")
            self.checks["fraction_checked"] = True

    def parts(self, i, j) -> list[float]:
        if (i, j) not in self._S:
            self._S.update(exact_expansion(self.A, self.B, [(i, j)]))
        return self._S[i, j]

    def tparts(self, i, j) -> list[float]:
        if (i, j) not in self._T:
            self._T.update(exact_expansion(self.A, self.B, [(i, j)], absolute=True))
        return self._T[i, j]

    # -- exact values ---------------------------------------------------------

    def exact_value(self, i, j) -> Fraction:
        """``(AB)_ij`` exactly."""
        return sum(map(Fraction, self.parts(i, j)), Fraction(0))

    def exact_abs(self, i, j) -> Fraction:
        """``(|A||B|)_ij`` exactly."""
        return sum(map(Fraction, self.tparts(i, j)), Fraction(0))

    def exact_norm2(self, side: str, index: int) -> Fraction:
        """``||a_i||_2**2`` (``side="a"``) or ``||b_j||_2**2`` (``side="b"``), exactly."""
        key = (side, index)
        if key not in self._norm2:
            line = self.A[index] if side == "a" else self.B[:, index]
            self._norm2[key] = sum((Fraction(x) ** 2 for x in line.tolist()), Fraction(0))
        return self._norm2[key]

    def _norms2(self) -> tuple[np.ndarray, np.ndarray]:
        """Squared row norms of ``A`` and column norms of ``B``, correctly rounded."""
        def sq(X):
            out = np.empty(X.shape[0])
            for i, x in enumerate(X):
                p, e = two_product(x, x)
                out[i] = math.fsum(np.concatenate((p, e)))
            return out
        return sq(self.A), sq(self.B.T)

    def _exact_error(self, i, j, c: float) -> Fraction | None:
        """``|c - (AB)_ij|`` exactly; 0 for the right infinity, ``None`` for an infinite error."""
        if not math.isfinite(c):
            return Fraction(0) if self.overflow[i, j] and c == self.S[i, j] else None
        return abs(Fraction(c) - self.exact_value(i, j))

    # -- errors ---------------------------------------------------------------

    def _float_error(self, i, j, c: float) -> float:
        """``|c - (AB)_ij|`` for finite ``c``: correctly rounded, or within ``rad``."""
        if self.exact:
            return abs(math.fsum(self._S[i, j] + [-c]))
        return abs(math.fsum([self.hi[i, j], self.lo[i, j], -c]))

    def errors(self, C: np.ndarray):
        """``(err, lo, hi)``: ``|C - AB|`` rounded, and an interval holding it exactly.

        A non-finite result has an infinite error, except the right infinity where
        the exact value overflows (error 0: :meth:`special` checks those apart).
        """
        m, n = C.shape
        err = np.empty((m, n))
        for i in range(m):
            for j in range(n):
                c = C[i, j]
                if math.isfinite(c):
                    err[i, j] = self._float_error(i, j, c)
                else:
                    err[i, j] = 0.0 if self.overflow[i, j] and c == self.S[i, j] else math.inf
        slack = 0.0 if self.exact else self.rad
        lo = np.maximum(err * (1 - _REL) - slack - _TINY, 0.0)
        hi = err * (1 + _REL) + slack + _TINY
        return err, lo, hi

    def _decide(self, C, out, amb, mask, beyond) -> np.ndarray:
        """Settle the ambiguous entries exactly with ``beyond(i, j, exact_error)``.

        ``beyond`` receives ``None`` for an infinite error (a wrong non-finite result).
        """
        if not self._screen:
            out[...] = False
            amb = np.ones(out.shape, bool)
        if mask is not None:
            out &= mask
            amb &= mask
        for i, j in np.argwhere(amb):
            out[i, j] = beyond(i, j, self._exact_error(i, j, C[i, j]))
        return out

    def exceeds(self, C, X, err=None, mask=None) -> np.ndarray:
        """Exactly: where ``|C - AB| > X`` (``X`` a float array), within ``mask``."""
        _, lo, hi = err if err is not None else self.errors(C)
        out = lo > X
        amb = ~out & (hi > X)
        def beyond(i, j, e):
            x = X[i, j]
            return x < math.inf if e is None else math.isfinite(x) and e > Fraction(x)
        return self._decide(C, out, amb, mask, beyond)

    def target(self) -> np.ndarray:
        """``u |AB| + u (|A||B|)`` (accurate mode's target), rounded."""
        with np.errstate(over="ignore"):
            return U * (np.abs(self.S) + self.T)

    def misses_target(self, C, err=None, mask=None) -> np.ndarray:
        """Exactly: where ``|C - AB| > u |AB| + u (|A||B|)``, within ``mask``."""
        _, lo, hi = err if err is not None else self.errors(C)
        slack = 0.0 if self.exact else U * self.rad * 4
        t = self.target()
        out = lo > t * (1 + _REL) + slack + _TINY
        amb = ~out & (hi > t * (1 - _REL) - slack - _TINY)
        return self._decide(C, out, amb, mask, lambda i, j, e: e is None or e > _U * (
            abs(self.exact_value(i, j)) + self.exact_abs(i, j)))

    def normwise_target(self) -> np.ndarray:
        """``u |AB| + u ||a_i||_2 ||b_j||_2`` (fast mode's target), within a few u."""
        if self._normwise is None:
            na, nb = self._norms2()
            with np.errstate(over="ignore", invalid="ignore"):
                self._normwise = U * (np.abs(self.S) + np.sqrt(na)[:, None] * np.sqrt(nb)[None, :])
        return self._normwise

    def misses_normwise(self, C, err=None, mask=None) -> np.ndarray:
        """Exactly: where ``|C - AB| > u |AB| + u ||a_i||_2 ||b_j||_2``, within ``mask``.

        Decided exactly as ``d = |C - AB| - u |AB| > 0`` and
        ``d**2 > u**2 ||a_i||**2 ||b_j||**2`` (squared norms as Fractions).
        """
        _, lo, hi = err if err is not None else self.errors(C)
        slack = 0.0 if self.exact else U * self.rad * 4
        t = self.normwise_target()
        out = lo > t * (1 + _NORM_REL) + slack + _TINY
        amb = ~out & (hi > t * (1 - _NORM_REL) - slack - _TINY)

        def beyond(i, j, e):
            if e is None:
                return True
            d = e - _U * abs(self.exact_value(i, j))
            return d > 0 and d * d > _U * _U * self.exact_norm2("a", i) * self.exact_norm2("b", j)
        return self._decide(C, out, amb, mask, beyond)

    def not_rounded(self, C, mask) -> np.ndarray:
        """Exactly: where ``C`` is not ``fl(AB)`` (the correctly rounded value), within ``mask``.

        The double-double kind screens with its radius (a result farther than half
        an ulp plus the radius is not correctly rounded; one nearer than half the
        smaller ulp minus the radius is) and settles the rest with the exact
        expansion, whose leading part is ``fl(AB)``.
        """
        mask = np.asarray(mask, bool)
        if self.exact:
            return mask & ~(C == self.S)
        out = np.zeros(C.shape, bool)
        for i, j in np.argwhere(mask):
            c = C[i, j]
            if not math.isfinite(c):
                out[i, j] = True
                continue
            d = abs(math.fsum([self.hi[i, j], self.lo[i, j], -c]))
            a = abs(c)
            if d > np.spacing(a) / 2 + self.rad[i, j]:
                out[i, j] = True
            elif d + self.rad[i, j] >= np.spacing(np.nextafter(a, 0.0)) / 2:
                p = self.parts(i, j)
                out[i, j] = c != (p[0] if p else 0.0)
        return out

    def special(self, C) -> dict[str, np.ndarray]:
        """The special-value semantics of exact arithmetic then one rounding, violated.

        ``nan``: NaN (the inputs are finite); ``inf_where_finite``: an infinity
        where the exact value rounds to a finite double; ``overflow_wrong``: a
        finite value, or the wrong infinity, where it rounds to ``+-inf``.
        """
        fin = np.isfinite(self.S)
        nan = np.isnan(C)
        return {"nan": nan, "inf_where_finite": np.isinf(C) & fin,
                "overflow_wrong": ~fin & ~nan & (C != self.S)}


class RationalReference(Reference):
    """Exact ``AB`` and ``|A||B|`` as Fractions: small shapes, any finite magnitudes.

    ``S = fl(AB)`` is correctly rounded with overflow to ``+-inf``
    (:func:`round_fraction`), ``T = fl(|A||B|)`` likewise; every decision is
    taken in rational arithmetic, entry by entry (no float screening).
    """

    _screen = False

    def __init__(self, A: np.ndarray, B: np.ndarray):
        self.A, self.B = A, B
        m, k = A.shape
        n = B.shape[1]
        if m * n * k > RATIONAL_LIMIT:
            raise ValueError(f"a rational reference for m n k = {m * n * k} is too slow")
        self.kind, self.exact = "rational", True
        self.Q = fraction_matmul(A, B)
        self.Qabs = fraction_matmul(np.abs(A), np.abs(B))
        self.S = np.array([[round_fraction(q) for q in row] for row in self.Q]).reshape(m, n)
        self.T = np.array([[round_fraction(q) for q in row] for row in self.Qabs]).reshape(m, n)
        self.zero = np.array([[q == 0 for q in row] for row in self.Q], bool).reshape(m, n)
        self.overflow = ~np.isfinite(self.S)
        self.guard = np.array([[q >= GUARD for q in row] for row in self.Qabs],
                              bool).reshape(m, n)
        self.hi, self.lo, self.rad = self.S.copy(), np.zeros((m, n)), np.zeros((m, n))
        self._norm2, self._normwise = {}, None
        self.checks = {"dd_vs_exact_max_over_rad": None, "fraction_checked": True}

    def exact_value(self, i, j) -> Fraction:
        return self.Q[i][j]

    def exact_abs(self, i, j) -> Fraction:
        return self.Qabs[i][j]

    def _float_error(self, i, j, c: float) -> float:
        return round_fraction(abs(Fraction(c) - self.Q[i][j]))

    def _norms2(self) -> tuple[np.ndarray, np.ndarray]:
        m, n = self.A.shape[0], self.B.shape[1]
        return (np.array([round_fraction(self.exact_norm2("a", i)) for i in range(m)]),
                np.array([round_fraction(self.exact_norm2("b", j)) for j in range(n)]))


def make_reference(A: np.ndarray, B: np.ndarray, kind: str | None = None) -> Reference:
    """The reference for ``A @ B``: ``kind`` ``"dd"``, ``"rational"``, or chosen by size.

    Inputs outside the error-free split's range get the rational reference.
    """
    if kind == "rational" or kind is None and not in_split_range(A, B):
        return RationalReference(A, B)
    return Reference(A, B, force_dd=kind == "dd")


def summarize(ref: Reference, err: np.ndarray) -> dict:
    """Max/median componentwise relative error (exact zeros apart) and normalised error."""
    nz = ~ref.zero
    rel = ratio(err[nz], np.abs(ref.S[nz]))
    pos = ref.T > 0
    nrm = ratio(err[pos], ref.T[pos])
    tr = ratio(err, ref.target())
    return {
        "max_rel": float(rel.max()) if rel.size else 0.0,
        "median_rel": float(np.median(rel)) if rel.size else 0.0,
        "max_nrm": float(nrm.max()) if nrm.size else 0.0,
        "median_nrm": float(np.median(nrm)) if nrm.size else 0.0,
        "max_err_over_target": float(tr.max()) if tr.size else 0.0,
        "zero_entries": int((~nz).sum()),
        "max_abs_at_zero": float(err[~nz].max()) if (~nz).any() else 0.0,
    }


def bound_stats(ref: Reference, err: np.ndarray, bound: np.ndarray) -> dict:
    """The per-entry bound against |A||B| and against the measured error.

    A NaN bound is no bound: such entries are counted (``nan_bounds``) and left out
    of the ratios (the suite fails them apart).
    """
    valid = ~np.isnan(bound)
    pos = (ref.T > 0) & valid
    e = (err > 0) & valid
    tight = ratio(bound[e], err[e])
    return {
        "max_bound_nrm": float(ratio(bound[pos], ref.T[pos]).max()) if pos.any() else 0.0,
        "max_err_over_bound": float(ratio(err[valid], bound[valid]).max()) if valid.any()
        else 0.0,
        "median_bound_over_err": float(np.median(tight)) if tight.size else None,
        "nan_bounds": int((~valid).sum()),
    }
