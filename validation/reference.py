"""Reference products, implemented independently of the library's own code.

* :func:`exact_matmul` - the exactly rounded product: every term ``a b`` is split
  error-free into ``p + e`` (Veltkamp/Dekker, no FMA) and ``math.fsum`` rounds
  the exact sum once. Valid while no term over- or underflows (checked).
* :func:`fraction_matmul` - exact rational arithmetic, for tiny shapes (the
  adversarial family's reference, any finite magnitudes) and for cross-checking
  the former.
* :func:`exact_expansion` - the exact product entry by entry, as a short sum of
  nonoverlapping doubles (so exact decisions cost one ``math.fsum`` each).
* :func:`dd_matmul` - a double-double GEMM (Ogita-Rump-Oishi Dot2: TwoProduct by
  Veltkamp split and TwoSum, no FMA), with its a-priori error radius.
* :func:`test_matrix` - the literature's ``a_ij = (U - 0.5) exp(phi Z)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba as nb
import numpy as np

__all__ = ["exact_matmul", "fraction_matmul", "test_matrix", "componentwise_errors",
           "expansion", "exact_expansion", "dd_matmul", "in_split_range"]

_SPLIT = 134217729.0  # 2**27 + 1


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * b == p + e`` exactly (Dekker), elementwise, without FMA."""
    p = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def exact_matmul(A: np.ndarray, B: np.ndarray, entries=None) -> np.ndarray:
    """Exactly rounded ``A @ B`` (all entries, or the ``(i, j)`` pairs in ``entries``).

    Raises ValueError when some term is too large or too small for the
    error-free split (``|a|, |b|`` beyond ``2**±480`` roughly).
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    for X, name in ((A, "A"), (B, "B")):
        nz = np.abs(X[X != 0])
        if nz.size and (nz.max() > 2.0 ** 480 or nz.min() < 2.0 ** -480):
            raise ValueError(f"{name} has entries outside [2**-480, 2**480]")
    if entries is None:
        entries = [(i, j) for i in range(A.shape[0]) for j in range(B.shape[1])]
        out = np.empty((A.shape[0], B.shape[1]))
        for i, j in entries:
            p, e = two_product(A[i], B[:, j])
            out[i, j] = math.fsum(np.concatenate((p, e)))
        return out
    vals = []
    for i, j in entries:
        p, e = two_product(A[i], B[:, j])
        vals.append(math.fsum(np.concatenate((p, e))))
    return np.array(vals)


def fraction_matmul(A: np.ndarray, B: np.ndarray) -> list[list[Fraction]]:
    """Exact ``A @ B`` as Fractions (slow: tiny shapes only)."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    Af = [[Fraction(x) for x in row] for row in A]
    Bf = [[Fraction(x) for x in row] for row in B.T]
    return [[sum((a * b for a, b in zip(ra, cb)), Fraction(0)) for cb in Bf] for ra in Af]


def test_matrix(m: int, n: int, phi: float | None, rng: np.random.Generator) -> np.ndarray:
    """``(U - 0.5) exp(phi Z)``; ``phi=None`` gives pure N(0, 1) entries."""
    if phi is None:
        return rng.standard_normal((m, n))
    return (rng.random((m, n)) - 0.5) * np.exp(phi * rng.standard_normal((m, n)))


test_matrix.__test__ = False  # not a pytest test


def componentwise_errors(C: np.ndarray, C_ref: np.ndarray, absAB: np.ndarray) -> dict:
    """Max componentwise relative error (nonzero references) and max error / (|A||B|)."""
    err = np.abs(C - C_ref)
    nz = C_ref != 0
    rel = float(np.max(err[nz] / np.abs(C_ref[nz]))) if nz.any() else 0.0
    pos = absAB > 0
    norm = float(np.max(err[pos] / absAB[pos])) if pos.any() else 0.0
    zero_err = float(np.max(err[~nz])) if (~nz).any() else 0.0
    return {"max_rel": rel, "max_normalized": norm, "max_abs_at_zero": zero_err}


# -- exact expansions ----------------------------------------------------------

def expansion(terms: list[float]) -> list[float]:
    """The exact sum of ``terms`` as ``[s1, s2, ...]``, ``s_j = fl(sum - s1 - ... - s_{j-1})``.

    ``math.fsum`` is correctly rounded, so each pass peels off the rounded
    remainder; it stops when the remainder is exactly zero (``[]`` for a zero sum).
    """
    parts: list[float] = []
    while True:
        s = math.fsum(terms + [-x for x in parts])
        if s == 0.0:
            return parts
        parts.append(s)


def in_split_range(*arrays) -> bool:
    """Whether every finite nonzero entry lies in ``[2**-480, 2**480]``, where the
    error-free split of every product (and of its square) is exact."""
    for X in arrays:
        nz = np.abs(X[(X != 0) & np.isfinite(X)])
        if nz.size and (nz.max() > 2.0 ** 480 or nz.min() < 2.0 ** -480):
            return False
    return True


def _check_range(*arrays) -> None:
    if not in_split_range(*arrays):
        raise ValueError("entries outside [2**-480, 2**480]: the error-free split fails")


def exact_expansion(A: np.ndarray, B: np.ndarray, entries=None, absolute: bool = False):
    """Exact ``(A @ B)_ij`` (or ``(|A||B|)_ij`` with ``absolute``) as expansions.

    Returns ``{(i, j): [s1, s2, ...]}`` for ``entries`` (default: all). With
    ``a b = p + e`` (Dekker) and ``|e| <= ulp(p)/2``, ``|a b| = |p| + sign(p) e``.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    _check_range(A, B)
    if entries is None:
        entries = [(i, j) for i in range(A.shape[0]) for j in range(B.shape[1])]
    out = {}
    for i, j in entries:
        p, e = two_product(A[i], B[:, j])
        if absolute:
            p, e = np.abs(p), np.sign(p) * e
        out[(i, j)] = expansion(np.concatenate((p, e)).tolist())
    return out


# -- double-double GEMM --------------------------------------------------------

@nb.njit(cache=True)
def _dot2_rows(A, Bt, hi, lo):
    """Dot2 per entry; no FMA (numba without fastmath does not contract)."""
    m, k = A.shape
    n = Bt.shape[0]
    for i in range(m):
        for j in range(n):
            s = 0.0
            c = 0.0
            for ll in range(k):
                a = A[i, ll]
                b = Bt[j, ll]
                p = a * b
                t = 134217729.0 * a
                ah = t - (t - a)
                al = a - ah
                t = 134217729.0 * b
                bh = t - (t - b)
                bl = b - bh
                e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
                x = s + p  # TwoSum(s, p)
                z = x - s
                q = (s - (x - z)) + (p - z)
                s = x
                c = c + (q + e)
            x = s + c  # TwoSum(s, c): hi + lo == s + c exactly
            z = x - s
            hi[i, j] = x
            lo[i, j] = (s - (x - z)) + (c - z)


def dd_matmul(A: np.ndarray, B: np.ndarray):
    """Double-double ``A @ B``: ``(hi, lo, rad, absAB)``, ``|hi + lo - (AB)_ij| <= rad_ij``.

    Dot2 (Ogita, Rump, Oishi 2005) keeps ``s + c`` within ``gamma_k**2
    (|A||B|)_ij`` of the exact dot product; ``rad`` uses ``gamma_{2k}**2``
    times a double-double ``|A||B|`` (itself within that factor), doubled;
    ``absAB`` is that ``|A||B|`` rounded to double.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    Bt = np.ascontiguousarray(np.asarray(B, dtype=np.float64).T)
    _check_range(A, Bt)
    m, n, k = A.shape[0], Bt.shape[0], A.shape[1]
    hi, lo = np.empty((m, n)), np.empty((m, n))
    _dot2_rows(A, Bt, hi, lo)
    ahi, alo = np.empty((m, n)), np.empty((m, n))
    _dot2_rows(np.abs(A), np.abs(Bt), ahi, alo)
    g = 2 * k * 2.0 ** -53 / (1 - 2 * k * 2.0 ** -53)
    rad = 2.0 * g * g * (ahi * (1 + 2.0 ** -50)) + 2.0 ** -1060
    return hi, lo, rad, ahi
