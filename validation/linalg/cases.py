"""The linalg campaign's matrices: HPL's, ill-conditioned, badly scaled, pivoting at every
step, symmetric positive definite.

Every case is rebuilt from its name alone (:func:`build`), so a failure reported by the
campaign is reproduced by ``A, x0, meta = validation.linalg.cases.build(name)``: ``A`` the
``(n, n)`` float64 matrix, ``x0`` the ``(n,)`` solution it was drawn with (the right-hand
side is ``b = fl(A x0)``, rounded once: :func:`validation.linalg.reference.rhs`) and
``meta`` what the construction promises (the target condition number, the scaling
exponents, the pivot sequence), which the tests check.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from ozaki import linalg

__all__ = ["Case", "FAMILIES", "SCALE_RANGE", "PIVOT_BAND", "build", "find", "quick_cases",
           "full_cases", "cases", "solvers"]

#: Families: ``hpl`` (uniform in [-0.5, 0.5], HPL's matrix), ``svd`` (singular values
#: geometric from 1 to 1/kappa), ``rows``/``cols``/``rows-cols`` (HPL's matrix scaled by
#: powers of two), ``pivot`` (a row interchange at every step), ``spd`` (symmetric
#: positive definite, eigenvalues geometric from 1 to 1/kappa).
FAMILIES = ("hpl", "svd", "rows", "cols", "rows-cols", "pivot", "spd")
#: Exponents of the row and column scalings: uniform integers in [-300, 300].
SCALE_RANGE = 300
#: Bandwidth of ``L`` in the pivot family (entries ``|l_ij| <= 3 * 2**-(i-j+2)``).
PIVOT_BAND = 16
#: Exponents of ``u_kk = +-2**p`` in the pivot family (``p`` uniform in this range).
PIVOT_DIAG = (16, 20)


@dataclass(frozen=True)
class Case:
    """One matrix: ``name`` (which rebuilds it), ``family``, order ``n``, ``seed`` and the
    family's parameters (``kappa`` for ``svd``/``spd``)."""

    name: str
    family: str
    n: int
    seed: int = 0
    params: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def block_size(self) -> int:
        """The panel width ``nb`` ozaki factors with: ``n / 8`` between 16 and
        ozaki's default (128), so that even the quick tier's orders run several panels
        and trailing updates through the emulated products."""
        return min(linalg.DEFAULT_BLOCK_SIZE, max(16, self.n // 8))

    @property
    def kappa(self) -> float | None:
        """The target 2-norm condition number (``svd``, ``spd``), else ``None``."""
        return self.params.get("kappa")


def solvers(case: Case) -> tuple[str, ...]:
    """The routines run on a case: ``lu`` (``lu_factor``/``lu_solve``), ``solve``
    (``assume_a="gen"``); on ``spd`` matrices also ``cho`` (``cho_factor``/``cho_solve``)
    and ``solve-pos`` (``assume_a="pos"``)."""
    return ("lu", "cho", "solve-pos") if case.family == "spd" else ("lu", "solve")


def _rng(case: Case) -> np.random.Generator:
    return np.random.default_rng([20261130, zlib.crc32(case.name.encode())])


def _uniform(n: int, rng) -> np.ndarray:
    """HPL's distribution: independent entries uniform in [-0.5, 0.5]."""
    return rng.random((n, n)) - 0.5


def _orthogonal(n: int, rng) -> np.ndarray:
    """A Haar-distributed orthogonal matrix (QR of a Gaussian one, signs fixed)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diagonal(R))


def _geometric(n: int, kappa: float) -> np.ndarray:
    """``s_i = kappa**(-i/(n-1))``: from 1 down to ``1/kappa`` (LAPACK's ``latms`` mode 3)."""
    return kappa ** (-np.arange(n) / max(n - 1, 1))


def _hpl(c, rng):
    return _uniform(c.n, rng), {}


def _svd(c, rng):
    # A = U diag(s) V^T. Forming it rounds each entry once more (|E_ij| <= n u |(U S V^T)_ij|
    # roughly, about u / sqrt(n) each), so ||E||_2 is of order u: sigma_min = 1/kappa moves
    # by a few per cent at kappa = 1e14 (checked by the tests), not by a factor.
    U, V = _orthogonal(c.n, rng), _orthogonal(c.n, rng)
    s = _geometric(c.n, c.kappa)
    return (U * s) @ V.T, {"kappa": c.kappa, "singular_values": s}


def _spd(c, rng):
    # A = Q diag(s) Q^T, made exactly symmetric by (M + M^T) / 2 (fl(a + b) = fl(b + a)).
    Q = _orthogonal(c.n, rng)
    s = _geometric(c.n, c.kappa)
    M = (Q * s) @ Q.T
    return (M + M.T) / 2, {"kappa": c.kappa, "eigenvalues": s}


def _exponents(n: int, rng) -> np.ndarray:
    e = rng.integers(-SCALE_RANGE, SCALE_RANGE + 1, n)
    e[:2] = (-SCALE_RANGE, SCALE_RANGE)  # both ends of the range, in every case
    return rng.permutation(e)


def _scaled(c, rng):
    # A = D_r A0 D_c with D = diag(2**e): exact (powers of two, no over- or underflow:
    # |a_ij| <= 2**599, nonzero |a_ij| >= 2**-600 * 2**-53).
    A0 = _uniform(c.n, rng)
    rows = _exponents(c.n, rng) if c.family in ("rows", "rows-cols") else np.zeros(c.n, int)
    cols = _exponents(c.n, rng) if c.family in ("cols", "rows-cols") else np.zeros(c.n, int)
    A = np.ldexp(A0, rows[:, None] + cols[None, :])
    return A, {"A0": A0, "row_exponents": rows, "col_exponents": cols}


def _pivot(c, rng):
    """``A = S L U``: partial pivoting interchanges a row at every step (argued below).

    ``L`` is unit lower triangular with ``l_ij = +-m 2**-(i-j+2)``, ``m`` in {0, 1, 2, 3},
    for ``1 <= i - j <= PIVOT_BAND`` (zero beyond), so ``|l_ij| <= 3/8`` and ``L``'s
    off-diagonal row sums stay below 3/4 (``||L^-1||_inf <= 4``); ``U`` is upper
    triangular with ``u_kk = +-2**p`` (``p`` in :data:`PIVOT_DIAG`) and integers in
    [-8, 8] above the diagonal, so ``||D^-1 (U - D)||_inf <= 8 n 2**-16 <= 1/4`` for
    ``n <= 2048`` (``U`` well conditioned). ``S`` moves row ``k`` of ``L U`` to row
    ``k - 1`` and row 0 to row ``n - 1`` (a cyclic shift).

    *Every operation of Gaussian elimination on A is exact.* The entries of ``L U`` and of
    every reduced matrix ``A^(k) = sum_{m >= k} l_im u_mj`` (and any partial sum of
    those terms, in any order: blocked, recursive, with or without FMA) are multiples of
    ``2**-(PIVOT_BAND + 2)`` below ``2**21`` in magnitude: at most 39 significant bits.
    The multipliers ``a^(k)_ik / a^(k)_kk = l_ik u_kk / u_kk`` divide by a power of two.

    *The pivot at step k is the row of L U numbered k, and it is alone.* In the reduced
    column ``k`` that row holds ``u_kk`` and every other remaining row ``i`` holds
    ``l_ik u_kk``, at most ``3/8 |u_kk|``.

    *It is always in the last position.* Before step 0, row ``k`` of ``L U`` sits at
    position ``k - 1`` and row 0 at ``n - 1``. Step 0 swaps positions 0 and ``n - 1``:
    row 0 comes to position 0, and row 1 (at position 0) goes to ``n - 1``. Inductively,
    before step ``k`` row ``k`` is at ``n - 1`` and rows ``k + 1, ...`` at positions
    ``k, ...``; step ``k`` swaps ``k`` and ``n - 1``, which brings row ``k + 1`` to
    ``n - 1``. So LAPACK's (0-based) pivot vector is ``n - 1`` at every step ``k < n - 1``
    (and at the last, trivially), and the leading entry of ``A`` is ``l_10 u_00``, a
    quarter of the column's largest or zero: without pivoting, elimination breaks down
    or loses the bound on ``|L|``.
    """
    n = c.n
    L = np.eye(n)
    for d in range(1, min(PIVOT_BAND, n - 1) + 1):
        m = rng.integers(0, 4, n - d) * rng.choice([-1.0, 1.0], n - d)
        L[np.arange(d, n), np.arange(n - d)] = m * 2.0 ** -(d + 2)
    U = np.triu(rng.integers(-8, 9, (n, n)).astype(float), 1)
    p = rng.integers(PIVOT_DIAG[0], PIVOT_DIAG[1] + 1, n)
    U[np.arange(n), np.arange(n)] = np.ldexp(rng.choice([-1.0, 1.0], n), p)
    LU = L @ U  # exact (see above)
    A = np.roll(LU, -1, axis=0)  # row k of LU at row k - 1, row 0 at row n - 1
    return A, {"L": L, "U": U, "pivots": np.full(n, n - 1, dtype=np.int32)}


_BUILDERS = {"hpl": _hpl, "svd": _svd, "rows": _scaled, "cols": _scaled,
             "rows-cols": _scaled, "pivot": _pivot, "spd": _spd}


def _solution(c: Case, meta: dict, rng) -> np.ndarray:
    """``x0``: uniform in [-0.5, 0.5]; for column-scaled matrices ``D_c^-1`` times that,
    so that every term ``a_ij x0_j`` is the unscaled one times ``2**e_i`` (no range
    beyond the matrix's own)."""
    x = rng.random(c.n) - 0.5
    if "col_exponents" in meta:
        x = np.ldexp(x, -meta["col_exponents"])
    return x


def _kappa_name(kappa: float) -> str:
    return f"1e{round(math.log10(kappa))}"


def _case(family: str, n: int, seed: int = 0, kappa: float | None = None) -> Case:
    name = f"{family}{'-' + _kappa_name(kappa) if kappa else ''}-n{n}"
    name += f"-s{seed}" if seed else ""
    return Case(name, family, n, seed, {"kappa": kappa} if kappa else {})


def quick_cases() -> list[Case]:
    """The CI tier: ``n <= 256``, every family (under half a minute on two cores)."""
    out = [_case("hpl", 64), _case("hpl", 256), _case("hpl", 256, 1), _case("hpl", 256, 2)]
    out += [_case("svd", 256, kappa=k) for k in (1e8, 1e11, 1e14)]
    out += [_case(f, 256) for f in ("rows", "cols", "rows-cols", "pivot")]
    out += [_case("spd", 256, kappa=k) for k in (1e2, 1e8, 1e12)]
    return out


def full_cases() -> list[Case]:
    """The full tier: every family up to ``n = 2048``, HPL's over three seeds per order."""
    out = [_case("hpl", n, s) for n in (256, 512, 1024, 2048) for s in range(3)]
    out += [_case("svd", n, kappa=k) for n in (512, 2048) for k in (1e8, 1e11, 1e14)]
    out += [_case(f, n) for f in ("rows", "cols", "rows-cols", "pivot") for n in (512, 2048)]
    out += [_case("spd", n, kappa=k) for n in (512, 2048) for k in (1e2, 1e8, 1e12)]
    return out


def cases(quick: bool) -> list[Case]:
    return quick_cases() if quick else full_cases()


def find(name: str) -> Case:
    """The case named ``name`` (of either tier); ``KeyError`` if there is none."""
    for c in quick_cases() + full_cases():
        if c.name == name:
            return c
    raise KeyError(name)


def build(case: Case | str) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(A, x0, meta)`` for a case (or its name), reproducibly (see the module doc)."""
    c = find(case) if isinstance(case, str) else case
    rng = _rng(c)
    A, meta = _BUILDERS[c.family](c, rng)
    x0 = _solution(c, meta, rng)
    return np.ascontiguousarray(A, dtype=np.float64), x0, meta
