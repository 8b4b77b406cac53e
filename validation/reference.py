"""Reference products, implemented independently of the library's own code.

* :func:`exact_matmul` - the exactly rounded product: every term ``a b`` is split
  error-free into ``p + e`` (Veltkamp/Dekker, no FMA) and ``math.fsum`` rounds
  the exact sum once. Valid while no term over- or underflows (checked).
* :func:`fraction_matmul` - exact rational arithmetic, for tiny shapes and for
  cross-checking the former.
* :func:`test_matrix` - the literature's ``a_ij = (U - 0.5) exp(phi Z)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["exact_matmul", "fraction_matmul", "test_matrix", "componentwise_errors"]

_SPLIT = 134217729.0  # 2**27 + 1


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
            p, e = _two_product(A[i], B[:, j])
            out[i, j] = math.fsum(np.concatenate((p, e)))
        return out
    vals = []
    for i, j in entries:
        p, e = _two_product(A[i], B[:, j])
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
