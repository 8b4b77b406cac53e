"""Errors against the exact product, and exact decisions (bound broken? target missed?).

Every decision is exact: a float comparison settles it when the reference's
uncertainty cannot change the answer, else the entry's exact expansion decides by
the sign of a correctly rounded ``math.fsum`` (a nonzero exact sum of doubles never
rounds to zero, so the sign is exact).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .reference import dd_matmul, exact_expansion, fraction_matmul

U = 2.0 ** -53
EXACT_LIMIT = 2 ** 23  # m n k up to which every entry gets its exact expansion
FRACTION_LIMIT = 2 ** 14  # ... and is cross-checked with Fractions
_TINY = 2.0 ** -1074
_REL = 2.0 ** -50


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


class Reference:
    """Exact ``AB`` and ``|A||B|`` of one case (exact expansions, or double-double)."""

    def __init__(self, A: np.ndarray, B: np.ndarray, force_dd: bool = False):
        self.A, self.B = A, B
        m, k = A.shape
        n = B.shape[1]
        self.hi, self.lo, self.rad, dd_abs = dd_matmul(A, B)
        self.exact = not force_dd and m * n * k <= EXACT_LIMIT
        self.kind = "exact" if self.exact else "double-double"
        self._S: dict = {}
        self._T: dict = {}
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

    # -- errors ---------------------------------------------------------------

    def errors(self, C: np.ndarray):
        """``(err, lo, hi)``: ``|C - AB|`` rounded, and an interval holding it exactly."""
        m, n = C.shape
        err = np.empty((m, n))
        for i in range(m):
            for j in range(n):
                c = C[i, j]
                if not math.isfinite(c):
                    err[i, j] = math.inf
                elif self.exact:
                    err[i, j] = abs(math.fsum(self._S[i, j] + [-c]))
                else:
                    err[i, j] = abs(math.fsum([self.hi[i, j], self.lo[i, j], -c]))
        slack = 0.0 if self.exact else self.rad
        lo = np.maximum(err * (1 - _REL) - slack - _TINY, 0.0)
        hi = err * (1 + _REL) + slack + _TINY
        return err, lo, hi

    def exceeds(self, C, X, err=None, mask=None) -> np.ndarray:
        """Exactly: where ``|C - AB| > X`` (``X`` a float array), within ``mask``."""
        _, lo, hi = err if err is not None else self.errors(C)
        out = lo > X
        amb = ~out & (hi > X)
        if mask is not None:
            out &= mask
            amb &= mask
        for i, j in np.argwhere(amb):
            p, c, x = self.parts(i, j), C[i, j], X[i, j]
            out[i, j] = math.fsum(p + [-c, -x]) > 0 or math.fsum(p + [-c, x]) < 0
        return out

    def target(self) -> np.ndarray:
        return U * (np.abs(self.S) + self.T)

    def misses_target(self, C, err=None, mask=None) -> np.ndarray:
        """Exactly: where ``|C - AB| > u |AB| + u (|A||B|)``, within ``mask``."""
        _, lo, hi = err if err is not None else self.errors(C)
        slack = 0.0 if self.exact else U * self.rad * 4
        t = self.target()
        out = lo > t * (1 + _REL) + slack + _TINY
        amb = ~out & (hi > t * (1 - _REL) - slack - _TINY)
        if mask is not None:
            out &= mask
            amb &= mask
        for i, j in np.argwhere(amb):
            p, tp, c = self.parts(i, j), self.tparts(i, j), C[i, j]
            sd = _sign(math.fsum(p + [-c]))
            ss = _sign(math.fsum(p))
            terms = [sd * x for x in p] + [-sd * c] + [-ss * U * x for x in p] + \
                [-U * x for x in tp]
            out[i, j] = math.fsum(terms) > 0
        return out


def summarize(ref: Reference, err: np.ndarray) -> dict:
    """Max/median componentwise relative error (exact zeros apart) and normalised error."""
    nz = ~ref.zero
    rel = err[nz] / np.abs(ref.S[nz]) if nz.any() else np.zeros(0)
    pos = ref.T > 0
    nrm = err[pos] / ref.T[pos]
    t = ref.target()
    with np.errstate(divide="ignore", invalid="ignore"):
        tr = np.where(t > 0, err / t, np.where(err > 0, np.inf, 0.0))
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
    """The per-entry bound against |A||B| and against the measured error."""
    pos = ref.T > 0
    e = err > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        over = np.where(bound > 0, err / bound, np.where(e, np.inf, 0.0))
        tight = bound[e] / err[e]
    return {
        "max_bound_nrm": float((bound[pos] / ref.T[pos]).max()) if pos.any() else 0.0,
        "max_err_over_bound": float(over.max()) if over.size else 0.0,
        "median_bound_over_err": float(np.median(tight)) if tight.size else None,
    }


def normwise_limit(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``u ||a_i||_2 ||b_j||_2`` with a relative allowance for its own rounding."""
    return (U * (1 + 2.0 ** -40)) * np.outer(np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=0))
