"""Test cases: the literature's phi matrices over a k sweep, and hard structured families.

Every case is rebuilt from its name alone (:func:`build`), so a failure reported by
the suite is reproduced by ``A, B = validation.families.build(name)``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from .reference import test_matrix

PHIS = (0.0, 0.5, 1.0, 2.0, 4.0, None)  # None: pure N(0, 1)
ALL = "all"


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    m: int
    n: int
    k: int
    phi: float | None = None
    counts: str | tuple = ALL  # ALL, or the explicit counts to sweep (auto always runs)
    params: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def phi_label(self) -> str:
        return "N(0,1)" if self.phi is None and self.family == "phi" else (
            "-" if self.phi is None else f"{self.phi:g}")


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([20261129, zlib.crc32(name.encode())])


def _pow2(rng, lo, hi, size):
    return np.ldexp(1.0, rng.integers(lo, hi + 1, size=size))


def _phi(c, rng):
    return test_matrix(c.m, c.k, c.phi, rng), test_matrix(c.k, c.n, c.phi, rng)


def _cancel_proj(c, rng):
    # rows of A projected onto the null space of B^T: A B ~ rounding of |A||B|
    B = rng.standard_normal((c.k, c.n))
    R = rng.standard_normal((c.m, c.k))
    return R - (R @ B) @ np.linalg.pinv(B), B


def _cancel_pair(c, rng):
    # A = [X, X], B = [Y; -Y + 2**-30 D]: A B = 2**-30 X D
    h = c.k // 2
    X, Y = test_matrix(c.m, h, 1.0, rng), test_matrix(h, c.n, 1.0, rng)
    D = test_matrix(h, c.n, 1.0, rng)
    return np.hstack((X, X)), np.vstack((Y, -Y + 2.0 ** -30 * D))


def _integer(c, rng):
    return (rng.integers(-1024, 1025, (c.m, c.k)).astype(float),
            rng.integers(-1024, 1025, (c.k, c.n)).astype(float))


def _hilbert(c, rng):
    i = np.arange(c.k)
    H = 1.0 / (i[:, None] + i[None, :] + 1.0)
    return H, np.linalg.inv(H)  # A B ~ I, condition ~1e16


def _vandermonde(c, rng):
    V = np.vander(np.linspace(0.2, 2.0, c.k), c.k, increasing=True)
    return V, np.linalg.inv(V)


def _rows(c, rng):
    A, B = _phi(c, rng)
    return A * _pow2(rng, -100, 100, (c.m, 1)), B * _pow2(rng, -100, 100, (1, c.n))


def _inner(c, rng):
    # wide exponent spread inside every row of A and column of B (products balanced)
    A, B = _phi(c, rng)
    s = rng.integers(-60, 61, c.k)
    return A * np.ldexp(1.0, s)[None, :], B * np.ldexp(1.0, -s)[:, None]


def _triangular(c, rng):
    A, B = _phi(c, rng)
    return np.tril(A), np.triu(B)


def _banded(c, rng):
    A, B = _phi(c, rng)
    w = c.params.get("width", 2)
    return np.triu(np.tril(A, w), -w), np.triu(np.tril(B, w), -w)


def _rank_one(c, rng):
    u, v = test_matrix(c.m, 1, 1.0, rng), test_matrix(1, c.k, 1.0, rng)
    w, z = test_matrix(c.k, 1, 1.0, rng), test_matrix(1, c.n, 1.0, rng)
    return u @ v, w @ z


def _powers(c, rng):
    return (rng.choice([-1.0, 1.0], (c.m, c.k)) * _pow2(rng, -30, 30, (c.m, c.k)),
            rng.choice([-1.0, 1.0], (c.k, c.n)) * _pow2(rng, -30, 30, (c.k, c.n)))


BUILDERS = {"phi": _phi, "cancel-proj": _cancel_proj, "cancel-pair": _cancel_pair,
            "integer": _integer, "hilbert": _hilbert, "vandermonde": _vandermonde,
            "rows-2^100": _rows, "inner-2^60": _inner, "triangular": _triangular,
            "banded": _banded, "rank-one": _rank_one, "pow2": _powers}


def _phi_case(phi, m, k, counts=ALL, **params) -> Case:
    label = "N" if phi is None else f"{phi:g}"
    return Case(f"phi{label}-k{k}-m{m}", "phi", m, m, k, phi, counts, params)


def _special(quick: bool) -> list[Case]:
    k, m, sq = (256, 8, 32) if quick else (4096, 16, 64)
    return [Case(f"cancel-proj-k{k}", "cancel-proj", m, m // 2, k),
            Case(f"cancel-pair-k{k}", "cancel-pair", m, m, k),
            Case(f"integer-k{k}", "integer", m, m, k),
            Case("hilbert-12", "hilbert", 12, 12, 12),
            Case("vandermonde-16", "vandermonde", 16, 16, 16),
            Case(f"rows-2^100-k{k}", "rows-2^100", m, m, k, 1.0),
            Case(f"inner-2^60-k{k}", "inner-2^60", m, m, k, 1.0),
            Case(f"triangular-{sq}", "triangular", sq, sq, sq, 1.0),
            Case(f"banded-{sq}", "banded", sq, sq, sq, 1.0, params={"width": 2}),
            Case(f"rank-one-k{k}", "rank-one", m, m, k),
            Case(f"pow2-k{k}", "pow2", m, m, k)]


def full_cases() -> list[Case]:
    cases = [_phi_case(phi, 16, 4096, table=True, sweep=phi == 1.0)  # error vs moduli
             for phi in PHIS]
    sweep = (16, 256, 1024, 4095, 4097, 16384, 65535, 65537, 131072)
    for k in sweep:  # phi = 1 across the exactness limits, every count
        m = 16 if k <= 16384 else 8 if k < 131072 else 4
        cases.append(_phi_case(1.0, m, k, sweep=True))
    for phi in PHIS:  # the auto count against phi and k
        for k in (16, 256, 16384, 65537, 131072):
            if phi == 1.0 and k in sweep:
                continue
            m = 16 if k <= 16384 else 8 if k < 131072 else 4
            cases.append(_phi_case(phi, m, k, counts=()))
    cases += _special(quick=False)
    # larger shapes, checked against the double-double reference
    even = tuple(range(2, 21, 2))
    cases += [_phi_case(1.0, 64, 4096, counts=even, large=True),
              _phi_case(4.0, 64, 4096, counts=even, large=True),
              _phi_case(1.0, 16, 131072, counts=(6, 10, 14, 18), large=True)]
    return cases


def quick_cases() -> list[Case]:
    sub = (2, 6, 10, 14, 16, 20)
    cases = [_phi_case(phi, 8, 256, table=True, sweep=phi == 1.0) for phi in PHIS]
    cases += [_phi_case(1.0, 8, 16, counts=sub, sweep=True),
              _phi_case(1.0, 4, 4097, counts=(6, 16), sweep=True),  # fp64 k-blocks
              _phi_case(1.0, 2, 65537, counts=(), sweep=True),  # FP8 accumulation blocks
              Case("phi0.5-k512-m48-dd", "phi", 48, 48, 512, 0.5, (8, 14),
                   params={"ref": "dd", "large": True})]  # the double-double reference
    return cases + _special(quick=True)


def cases(quick: bool) -> list[Case]:
    return quick_cases() if quick else full_cases()


def find(name: str) -> Case:
    for c in full_cases() + quick_cases():
        if c.name == name:
            return c
    raise KeyError(name)


def build(case: Case | str) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)`` for a case (or its name), reproducibly."""
    c = find(case) if isinstance(case, str) else case
    A, B = BUILDERS[c.family](c, _rng(c.name))
    return np.ascontiguousarray(A, dtype=np.float64), np.ascontiguousarray(B, dtype=np.float64)
