"""The iterates of :func:`~ozaki.linalg.solve_refined`: residuals, backward errors,
corrections and the refinement steps on one set of factors.

:class:`Iterates` holds ``x`` and ``r = b - A x`` per column of ``b`` and the two backward
errors the steps are judged by (docs/linalg.rst, "Mixed-precision refinement"):

* residuals ``fl(b - A x)`` with ``A x`` the FP64-grade product (:func:`ozaki.gemm`, in
  blocks of rows on the small-product path when ``x`` is narrow);
* ``|A||x|`` and ``||A||_inf`` as ordered FP64 sums of non-negative terms (relative
  error at most ``gamma_n``, no cancellation);
* corrections by substitution with the factors (:func:`~ozaki.linalg.lu.substitute`), or
  GMRES-IR (:mod:`ozaki.linalg.gmres`).

Every operation is a fixed sequence of IEEE operations or an ozaki product, so the
iterates' bits depend only on the operands and the product options.
"""

from __future__ import annotations

import time

import numpy as np

from ..api.front import gemm
from ..backends import get_backend
from ..core import compensated
from ..core.kind import kind_of
from .gmres import gmres_budget, gmres_ir
from .lu import substitute

__all__ = ["Iterates", "mag", "SAFE_MIN"]

#: LAPACK's ``safmin``: ``s = (n + 1) safmin`` is its ``SAFE1``, added to every
#: ``(|A||x| + |b|)_i``. ``u s`` bounds what underflow can cost a residual entry (the
#: products' contract: ``2**-1075``); and a zero ``(|A||x| + |b|)_i`` (whose residual
#: is exactly 0: every term is) then needs no special case.
SAFE_MIN = float(np.finfo(np.float64).tiny)


def mag(X: np.ndarray) -> np.ndarray:
    """``|x|``, or LAPACK's ``cabs1 = |Re x| + |Im x|`` for complex (one rounding)."""
    return np.abs(X.real) + np.abs(X.imag) if np.iscomplexobj(X) else np.abs(X)


class Iterates:
    """The iterates of one call (``X``, ``R``, backward errors ``omega`` and ``eta`` per
    column of ``B``), its products and solves, timed into its
    :class:`~ozaki.linalg.RefinementInfo`."""

    def __init__(self, A, B, opts, info):
        self.A, self.B, self.opts, self.info = A, B, opts, info
        # |A| as it is read: real entries take |.| inside the sums, complex ones cabs1
        self.abs_a = mag(A) if np.iscomplexobj(A) else A
        self.abs_b = mag(B)
        self.a_norm = float(np.max(self.abs_times(np.ones((A.shape[0], 1))), initial=0.0))
        self.safe1 = (A.shape[0] + 1) * SAFE_MIN  # LAPACK's SAFE1, exact
        self.budget = gmres_budget(A.shape[0])  # Krylov iterations left
        self.X, self.R, self.omega, self.eta = np.zeros_like(B), None, None, None

    def _add(self, phase, t):
        self.info.seconds[phase] += time.perf_counter() - t

    def abs_times(self, X):
        """``fl(|A| |X|)`` (n, q): non-negative terms added in order of the column index
        (the compiled passes' ``abs_product``; every backend gives the same bits),
        relative error at most ``gamma_n = n u / (1 - n u)`` per entry, away from
        underflow."""
        out = np.empty((1, self.A.shape[0], X.shape[1]))
        get_backend("cpu").abs_product(self.abs_a[None], X[None], out)
        return out[0]

    def product(self, X):
        """``A X`` by the FP64-grade product, in blocks of rows of at most
        :data:`~ozaki.core.compensated.SMALL_WORK` terms when that is one row or more
        (:func:`~ozaki.core.compensated.rows_per_product`).

        Each block then takes the small-product path (Dot2, one pass over its rows of
        ``A``; :mod:`ozaki.core.compensated`), which meets the same bound; at one column
        the emulation would form residues of all of ``A`` for every modulus (at
        ``n = 8192``, 1.7 s a residual against 0.2 s). On that path an entry's bits
        depend on its row of ``A`` and on ``X`` only, so the blocks change no bit.
        """
        n, k = self.A.shape
        cplx = np.iscomplexobj(self.A) or np.iscomplexobj(X)
        rows = compensated.rows_per_product(X.shape[1], k, kind_of(cplx))
        step = rows if 1 <= rows < n else n  # one product when a row is too much, or all fit
        parts = []
        for i0 in range(0, n, step):
            Pi, pinfo = gemm(self.A[i0:i0 + step], X, return_info=True, **self.opts)
            parts.append(Pi)
        self.info.residual_num_moduli = (0 if pinfo.path == "compensated"
                                         else int(pinfo.num_moduli))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def residual(self, X, cols):
        """``fl(B - A X)`` on columns ``cols`` of ``B``, and each column's componentwise
        and normwise backward errors (``inf`` where ``X`` or they are not finite)."""
        t = time.perf_counter()
        abs_x, abs_b = mag(X), self.abs_b[:, cols]
        with np.errstate(all="ignore"):
            R = self.B[:, cols] - self.product(X)
            r = mag(R)
            den = self.abs_times(abs_x) + abs_b + self.safe1
            omega, r = np.max(r / den, axis=0, initial=0.0), np.max(r, axis=0, initial=0.0)
            norm = (self.a_norm * np.max(abs_x, axis=0, initial=0.0)
                    + np.max(abs_b, axis=0, initial=0.0))  # ||A|| ||x|| + ||b||
            eta = np.where(r == 0, 0.0, r / norm)
        lost = ~np.isfinite(X).all(axis=0) | np.isnan(omega) | np.isnan(eta)
        self._add("residual", t)
        return R, np.where(lost, np.inf, omega), np.where(lost, np.inf, eta)

    def record(self, omega, eta, rest):
        """Append the largest backward errors: ``omega``, ``eta`` and ``rest``'s kept ones."""
        for out, new, kept in ((self.info.componentwise_backward_errors, omega, self.omega),
                               (self.info.backward_errors, eta, self.eta)):
            out.append(float(max(np.max(new), np.max(kept, where=rest, initial=0.0))))

    def solve(self, LU, piv, R, phase="correction"):
        """``(LU)^-1 R``, a new array, by substitution (:func:`~ozaki.linalg.lu.substitute`)."""
        t = time.perf_counter()
        X = np.array(R, copy=True)
        with np.errstate(all="ignore"):
            substitute(LU, piv, X)
        if phase:
            self._add(phase, t)
        return X

    def gmres(self, LU, piv, r):
        """GMRES-IR's correction (:func:`~ozaki.linalg.gmres.gmres_ir`), in the budget."""
        t = time.perf_counter()
        d, its = gmres_ir(lambda v: self.solve(LU, piv, v[:, None], phase=None)[:, 0],
                          lambda v: self.product(v[:, None])[:, 0], r, self.budget, self.opts)
        self.budget -= its
        self.info.gmres_iterations += its
        self._add("gmres", t)
        return d

    def steps(self, LU, piv, kinds, limit, tol):
        """Refinement steps on the columns with ``omega > tol``, at most ``limit``;
        returns how many.

        A step must halve the largest ``omega`` of the columns it updates (gain a bit,
        LAPACK's xGERFS rule): else it stalls, and the next method of ``kinds`` takes
        over (``auto``: classical, then GMRES), or the steps end. Each column keeps its
        best iterate (least ``omega``).
        """
        taken, which = 0, 0
        while taken < limit and which < len(kinds) and np.max(self.omega) > tol:
            cols = np.flatnonzero(self.omega > tol)
            before = float(np.max(self.omega[cols]))
            if kinds[which] == "classical":
                D = self.solve(LU, piv, self.R[:, cols])
            else:
                D = np.stack([self.gmres(LU, piv, self.R[:, c]) for c in cols], axis=1)
            with np.errstate(all="ignore"):
                Xn = self.X[:, cols] + D
            Rn, omega, eta = self.residual(Xn, cols)
            taken += 1
            self.info.steps.append(kinds[which])
            self.record(omega, eta, self.omega <= tol)  # and the columns not updated
            better = (omega < self.omega[cols]) | np.isinf(self.omega[cols])  # or the last
            keep = cols[better]
            self.X[:, keep], self.R[:, keep] = Xn[:, better], Rn[:, better]
            self.omega[keep], self.eta[keep] = omega[better], eta[better]
            if not np.max(omega) <= before / 2 or np.isinf(np.max(omega)):
                which += 1
        return taken
