"""Test cases: the literature's phi matrices over a k sweep, hard structured families,
and adversarial inputs (special values, certificate holes) with a rational reference.

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


# -- adversarial inputs (issue "Reliability: close the certificate and special-value
#    holes found by adversarial testing"); exact values checked in rational arithmetic

_TOP = 2.0 ** 1023


def _adv_fast_2049(rng):
    # fast mode's reproducer: |C - AB| = 1.23 u ||a||_2**2 > u ||a||_2 ||b||_2 (its own seed)
    r = np.random.default_rng(17)
    M = r.integers(2 ** 52, 2 ** 53, 2048, dtype=np.int64) | 2047
    a = np.r_[1.0, M * 2.0 ** -60]
    return a[None], a[:, None].copy()


def _adv_overflow_cancel(rng):
    # 1.5e308 (left to right: -inf), 1e308 - 1, 1e308 (numpy: inf at k = 3), 1e616 -> inf
    return (np.array([[1.0, -2.0, 1e308], [1e308, 1e308, -1e308]]),
            np.array([[0.0, 1.0], [1e308, 1.0], [3.5, 1.0]]))


def _adv_pow2_cancel(rng):
    # 1 + 2**1200 - 2**1200 = 1 (terms beyond the range cancel), and 1 + 2**1201 -> inf
    return (np.array([[2.0 ** 1000, 2.0 ** 600, -2.0 ** 600]]),
            np.array([[2.0 ** -1000, 2.0 ** -1000], [2.0 ** 600, 2.0 ** 600],
                      [2.0 ** 600, -2.0 ** 600]]))


def _adv_signs(rng):
    # random sign patterns of 1.5e308, k = 7: exact values +-1.5e308 or beyond the range
    return rng.choice([-1.0, 1.0], (5, 7)) * 1.5e308, rng.choice([-1.0, 1.0], (7, 4))


def _adv_overflow_result(rng):
    # +-2e308 -> +-inf; 2**1024 - 2**970 (the tie) -> inf; one less -> max; max exactly
    A = np.array([[1e308, -1e308, 1e308, 1e308], [-1e308, 1e308, -1e308, -1e308],
                  [_TOP, _TOP - 2.0 ** 970, 0.0, 0.0], [_TOP, _TOP - 2.0 ** 970, -1.0, 0.0],
                  [_TOP, _TOP - 2.0 ** 971, 0.0, 0.0]])
    return A, np.array([[1.0, 1.0], [1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])


def _adv_subnormal(rng):
    # subnormal inputs and results: 5e-324 * 0.3 -> 0, * 0.7 -> 5e-324, * 0.5 -> 0 (tie
    # to even), * 1.5 -> 1e-323; cancellation below 2**-1022; subnormal times 2**600
    A = np.array([[5e-324, 0.0], [2.0 ** -1060, -2.0 ** -1060],
                  [2.0 ** -1000, 3 * 5e-324], [3e-310, 1e-300]])
    B = np.array([[0.3, 0.7, 0.5, 1.5, 2.0 ** 600],
                  [0.25, -0.25, 2.0 ** -30, 1.0, 2.0 ** -600]])
    return A, B


def _adv_hidden(rng):
    # (AB)_00 = 1 comes from 1e-300 * 1e300, invisible next to the 1e300 in row 0
    return (np.array([[1e300, 1e-300, 1.0], [2.0, 3.0, -1.0], [0.5, 1e-300, 4.0]]),
            np.array([[0.0, 1.0], [1e300, 1.0], [0.0, 2.0]]))


def _adv_fallback_guard(rng):
    # phi = 4 data with a near-overflow row 0 (overflow guard) and a hidden product in
    # entry (1, 1) (uncertified: exact fallback)
    A, B = test_matrix(6, 10, 4.0, rng), test_matrix(10, 5, 4.0, rng)
    A[0, :5] = [1e308, -1e308, 1e308, 7.0, 1e-300]
    B[:5, 0] = [1.0, 1.0, 1.0, 1e300, 1e300]
    A[1] = 0.0
    A[1, :3] = [1e300, 1e-300, 1.0]
    B[:, 1] = 0.0
    B[1, 1] = 1e300
    return A, B


#: name -> (m, k, n, builder)
ADVERSARIAL = {"fast-2049": (1, 2049, 1, _adv_fast_2049),
               "overflow-cancel": (2, 3, 2, _adv_overflow_cancel),
               "pow2-cancel": (1, 3, 2, _adv_pow2_cancel),
               "signs-1.5e308": (5, 7, 4, _adv_signs),
               "overflow-result": (5, 4, 2, _adv_overflow_result),
               "subnormal": (4, 2, 5, _adv_subnormal),
               "hidden-small": (3, 3, 2, _adv_hidden),
               "fallback-guard": (6, 10, 5, _adv_fallback_guard)}
ADV_COUNTS = (2, 3, 4, 5, 6, 8, 12, 16, 20)  # low counts: one CRT level, coarse shifts


def _adversarial(c, rng):
    return ADVERSARIAL[c.params["input"]][3](rng)


BUILDERS = {"phi": _phi, "cancel-proj": _cancel_proj, "cancel-pair": _cancel_pair,
            "integer": _integer, "hilbert": _hilbert, "vandermonde": _vandermonde,
            "rows-2^100": _rows, "inner-2^60": _inner, "triangular": _triangular,
            "banded": _banded, "rank-one": _rank_one, "pow2": _powers,
            "adversarial": _adversarial}


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


def adversarial_cases() -> list[Case]:
    """The adversarial family (both tiers): small shapes, exact rational reference."""
    return [Case(f"adv-{key}", "adversarial", m, n, k, None, ADV_COUNTS,
                 {"input": key, "ref": "rational"})
            for key, (m, k, n, _) in ADVERSARIAL.items()]


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
    cases += _special(quick=False) + adversarial_cases()
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
    return cases + _special(quick=True) + adversarial_cases()


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
