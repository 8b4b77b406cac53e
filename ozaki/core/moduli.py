"""Moduli tables and the constants of the Chinese Remainder reconstruction.

Changing a table changes every result bit, so the tables are versioned:
bitwise reproducibility holds per :data:`MODULI_VERSION`. The version covers every
constant that picks counts: the tables, the auto counts' targets and the price of
accurate mode's refinement (:data:`REFINEMENT_PRICE`).

Versions
--------
1
    The first tables (``int7`` appended later without changing the others).
2
    The refinement of the low-precision schemes (``int8``, ``int7``, ``fp8``) priced at
    :data:`REFINEMENT_PRICE` of their moduli, no longer at the fp64 scheme's two: where
    their coarse bound needs a few more moduli over most of the product, accurate mode
    now takes those moduli instead of exact FP64 GEMMs of the failing block, so some of
    its auto counts, and those results, differ from version 1's. Nothing else changed.

Schemes
-------
``int8``
    Residues in int8 (symmetric, ``[-floor(p/2), ceil(p/2) - 1]``), one GEMM per
    modulus. ``|r| <= 128`` so a product is at most ``2**14``.
``fp8``
    Square moduli ``s**2`` and moduli ``p <= 511``; each residue is encoded as
    FP8 E4M3 *digits* (integers in ``[-16, 16]``), three GEMMs per modulus
    (see :mod:`ozaki.core.products`).
``fp64``
    The largest primes ``p`` with ``4096 * ((p - 1) / 2)**2 <= 2**53``: a k-block
    of 4096 products of residues accumulates exactly on FP64 BLAS.
``int7``
    The 24 largest pairwise-coprime integers ``p <= 128`` (greedy from 128 down),
    residues in int8 as for ``int8``, one GEMM per modulus. ``|r| <= 64``, so a
    product is at most ``2**12`` and the residues are within the s8 operand range
    that oneDNN's kernels *without* VNNI take in one INT8 GEMM (their ``vpmaddubsw``
    saturates a pair of u8 x s8 products to int16: ``2 * 255 * 64 = 32640 <= 32767``;
    :mod:`ozaki.backends.onednn`), where ``int8``'s residues up to 128 cost two.
    Each modulus carries about 6.5 bits instead of 7.8, so FP64 grade takes about
    19 moduli where ``int8`` takes 16. Appended last: the other tables and their
    order are unchanged (``MODULI_VERSION`` stays 1).

Reconstruction constants
------------------------
``w_i = (P / p_i) * ((P / p_i)**-1 mod p_i)``, brought into ``(-P/2, P/2]``, is
split into ``L`` *levels* on common grids: ``w_i = sum_l w_il + d_i`` with
``w_il`` a multiple of ``2**g_l`` and ``|w_il| / 2**g_l <= 2**(b-1)``;
``P`` is split the same way. With ``rho = sum_i floor(p_i / 2)`` and
``b = 53 - ceil(log2(rho + 1))``, every partial sum of
``sum_i w_il C_i - q P_l`` (``|C_i| <= floor(p_i/2)``, ``|q| <= rho/2 + 1``) is
bounded by ``2**(b-1) rho + (rho/2 + 1) 2**b <= (rho + 1) 2**b <= 2**53`` grid
units, hence exact in FP64 in any order. ``L`` is the least count for which the dropped tails ``d_i`` (and ``P``'s)
sum to less than half an integer unit, ``sum_i |d_i| floor(p_i/2) +
|d_P| (rho/2 + 1) < 1/2``: the level sums then give the integer ``C'``
**exactly** (``L = 2`` to 4 for the default counts; the level sums live in
registers, so more levels cost a few multiply-adds per output, no memory).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

__all__ = ["MODULI_VERSION", "MODULI", "SCHEMES", "REFINEMENT_PRICE", "CRTPlan", "crt_plan",
           "plan_terms", "fp64_kblock"]

MODULI_VERSION = 2

#: k-block for which the fp64 scheme's primes are sized.
_FP64_KBLOCK = 4096

MODULI: dict[str, tuple[int, ...]] = {
    "int8": (256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
             223, 217, 211, 199, 197, 193, 191, 181, 179, 173),
    "fp8": (33 ** 2, 32 ** 2, 31 ** 2, 29 ** 2, 25 ** 2, 23 ** 2,
            511, 509, 503, 499, 491, 487, 481, 479, 467, 463, 461, 457, 449, 443),
    # Largest primes p with 4096 * ((p - 1) / 2)**2 <= 2**53 (checked by the tests).
    "fp64": (2965819, 2965811, 2965799, 2965793, 2965783, 2965777, 2965763,
             2965757, 2965733, 2965717, 2965693, 2965687, 2965681, 2965631,
             2965609, 2965603, 2965601, 2965591, 2965579, 2965561),
    # The greedy largest pairwise-coprime integers <= 128 (checked by the tests).
    "int7": (128, 127, 125, 123, 121, 119, 113, 109, 107, 103, 101, 97,
             89, 83, 79, 73, 71, 67, 61, 59, 53, 47, 43, 37),
}

SCHEMES = ("int8", "fp8", "fp64", "int7")

#: What accurate mode's refinement of a whole product costs, in the scheme's moduli:
#: with ``auto`` counts, a slice whose coarse bound needs ``extra`` moduli above the
#: start count refines the block of its failing rows and columns, a share ``f`` of its
#: entries, only when ``price * f <= extra`` (:func:`ozaki.core.decisions.decide_accurate`;
#: always when no count certifies). The refinement is exact FP64 GEMMs. For ``fp64``
#: they are the scheme's own kind of product: two, as the refinement first cost
#: (``G'`` and ``U'``). For the low-precision schemes an exact FP64 GEMM costs about 4
#: of their GEMMs a modulus on AVX2 CPUs (``int7``), about 8 with AVX-512 VNNI and 30 or
#: more on GPUs, so they price it at 8: extra moduli unless the block is a small part
#: of the product. It picks counts, so it is part of the results (version 2).
REFINEMENT_PRICE: dict[str, int] = {"int8": 8, "fp8": 8, "fp64": 2, "int7": 8}

#: Smallest number of moduli a plan accepts (one modulus cannot hold a product).
MIN_MODULI = 2

#: Relative margin of the CRT range: shifts keep ``|A'B'| <= P (1 - ETA) / 2``
#: so the quotient estimate (error below ``rho * 2**-51``, ``rho < 2**28``) never
#: rounds the wrong way. It costs ``2**-20`` of a bit.
ETA = 2.0 ** -20


def fp64_kblock() -> int:
    """k-block (number of products) for which the fp64 primes are exact on FP64 BLAS."""
    return _FP64_KBLOCK


def half_range(p: int) -> tuple[int, int]:
    """Symmetric residue range ``[-floor(p/2), ceil(p/2) - 1]`` as ``(lo, hi)``."""
    return -(p // 2), (p - 1) // 2


def _split_levels(x: int, g_top: int, b: int, levels: int) -> tuple[list[int], int]:
    """Split integer ``x`` into ``levels`` parts on grids ``2**(g_top - l b)``.

    Each part is ``round(rest / 2**g) * 2**g`` (nearest), so its grid integer has
    magnitude at most ``2**(b-1)`` once ``|x| <= 2**(g_top + b - 1)``; returns the
    parts and the dropped remainder.
    """
    parts = []
    rest = x
    for level in range(levels):
        g = g_top - level * b
        if g >= 0:
            q = (2 * rest + (1 << g)) >> (g + 1)  # floor(rest / 2**g + 1/2)
            part = q << g
        else:
            part = rest
        parts.append(part)
        rest -= part
    return parts, rest


@dataclass(frozen=True)
class CRTPlan:
    """Constants of one (scheme, number of moduli) pair.

    Attributes
    ----------
    scheme : str
    moduli : tuple of int
    P : int
        Product of the moduli.
    H : float
        ``floor(P (1 - ETA) / 2)`` rounded down to FP64: the bound that the
        scaled product ``|A'B'|`` must respect.
    rho : int
        ``sum_i floor(p_i / 2)``.
    bits_per_level : int
        ``b = 53 - ceil(log2(rho + 1))``.
    weights : ndarray, shape (num_moduli, levels)
        FP64 level parts ``w_il`` (exact).
    p_levels : ndarray, shape (levels,)
        FP64 level parts of ``P`` (exact).
    p_inv : float
        ``fl(1 / P)``.
    tail : float
        Bound of the dropped level tails in integer units of ``C'`` (below 1/2,
        so the level sums are exact).
    rounding : float
        ``R`` in ``|fl(C') - C'| <= (u + gamma**2) |C'| + R``: the compensated
        sum of the ``L`` exact level terms ``D_l`` (Ogita-Rump-Oishi Sum2) errs
        by at most ``u |C'| + gamma_{L-1}**2 sum_l |D_l|`` (``gamma_n = n u /
        (1 - n u)``). For ``l >= 2``, ``|D_l| <= 0.75 (rho + 1) 2**(g_l + b)``,
        so ``sum_{l>=2} |D_l| <= 0.76 (rho + 1) 2**g_1`` and, as
        ``C' = sum_l D_l``, ``sum_l |D_l| <= |C'| + 1.51 (rho + 1) 2**g_1``:
        ``R = gamma**2 1.51 (rho + 1) 2**g_1`` with ``g_1 = bitlen(P) - b``.
    gamma2 : float
        ``gamma_{L-1}**2``, the relative part of the same bound.
    """

    scheme: str
    moduli: tuple[int, ...]
    P: int
    H: float
    rho: int
    bits_per_level: int
    weights: np.ndarray
    p_levels: np.ndarray
    p_inv: float
    tail: float
    rounding: float
    gamma2: float

    @property
    def num_moduli(self) -> int:
        return len(self.moduli)

    @property
    def levels(self) -> int:
        return self.weights.shape[1]

    @property
    def log2_P(self) -> float:
        return math.log2(self.P)


def max_moduli(scheme: str) -> int:
    """Largest number of moduli the scheme's table holds."""
    return len(MODULI[scheme])


@lru_cache(maxsize=None)
def crt_plan(scheme: str, num_moduli: int) -> CRTPlan:
    """Build (once) the reconstruction constants for ``num_moduli`` moduli of ``scheme``."""
    moduli = MODULI[scheme][:num_moduli]
    P = math.prod(moduli)
    rho = sum(p // 2 for p in moduli)
    b = 53 - math.ceil(math.log2(rho + 1))
    # Top grid: P <= 2**(g_top + b), so |w_i| <= P/2 <= 2**(g_top + b - 1).
    g_top = P.bit_length() - b
    ws = []
    for p in moduli:
        Mi = P // p
        w = (Mi * pow(Mi, -1, p)) % P
        ws.append(w - P if w > P // 2 else w)
    levels = 1
    while True:
        splits = [_split_levels(w, g_top, b, levels) for w in ws]
        p_parts, p_rest = _split_levels(P, g_top, b, levels)
        tail = (sum(abs(rest) * (p // 2) for (_, rest), p in zip(splits, moduli))
                + abs(p_rest) * (rho // 2 + 1))
        if 2 * tail < 1:  # the level sums then give C' exactly (an integer)
            break
        levels += 1
    weights = np.array([[float(x) for x in parts] for parts, _ in splits])
    if any(float(x) != x for parts, _ in splits for x in parts):
        raise AssertionError("a CRT level part is not exact in FP64")
    p_levels = np.array([float(x) for x in p_parts])
    weights.flags.writeable = p_levels.flags.writeable = False  # cached: shared by all calls
    # The quotient estimate sum_l fl(S_l / P) errs by at most ~rho * 2**-51 (the
    # |S_l / P| are below rho); the margin ETA / 2 must exceed it.
    if rho * 2.0 ** -49 >= ETA / 2:
        raise AssertionError("moduli too large for the CRT margin")
    H = math.floor(P * (1 - ETA) / 2)
    Hf = float(H)
    if Hf > H:  # round down: the bound must stay safe
        Hf = math.nextafter(Hf, 0.0)
    tail_f = float(tail)
    if tail_f < tail:  # round up: it bounds an error
        tail_f = math.nextafter(tail_f, math.inf)
    u = Fraction(1, 2 ** 53)
    gamma = (levels - 1) * u / (1 - (levels - 1) * u)
    rounding = gamma ** 2 * Fraction(151, 100) * (rho + 1) * 2 ** g_top
    return CRTPlan(scheme, moduli, P, Hf, rho, b, weights, p_levels, 1.0 / P, tail_f,
                   _up(rounding), _up(gamma ** 2))


def plan_terms(scheme: str, counts: np.ndarray):
    """Per-slice CRT constants ``(H, R, g2)`` (each (b,)) for the counts ``counts`` (b,)."""
    counts = np.asarray(counts, np.int64)
    if counts.size and counts.min() == counts.max():  # the common case: one count
        plan = crt_plan(scheme, int(counts.flat[0]))
        return (np.full(counts.shape, plan.H), np.full(counts.shape, plan.rounding),
                np.full(counts.shape, plan.gamma2))
    table = np.zeros((3, max_moduli(scheme) + 1))
    for n in np.unique(counts):
        plan = crt_plan(scheme, int(n))
        table[:, n] = plan.H, plan.rounding, plan.gamma2
    return table[0][counts], table[1][counts], table[2][counts]


def _up(x: Fraction) -> float:
    """``x`` rounded up to FP64 (for bounds)."""
    f = float(x)
    return math.nextafter(f, math.inf) if f < x else f


# Bits of P that keep the componentwise error within 2x native FP64 at phi <= 1,
# measured with this library (m = n = 16, exact references): at k <= 4096 the
# counts are int8 16, fp8 13, fp64 6 (15, 12 and 5 fail); at k = 65536 fp8 needs
# 14 while int8 16 and fp64 6 still pass. Each doubling of k beyond 4096 adds
# 0.75 bit to the target. The tests re-measure this at k up to 2**17.
# int7, measured the same way on more problems (both modes; phi in {0, 1/2, 1} and
# N(0, 1); m = n = 16 at k <= 4096, 8 at 65536, 4 at 2**17; 37 seeds at k <= 4096,
# about 30 at 65536, 7 at 2**17): 17 fails often; 18 fails at k = 4096 on 2 of about
# 500 problems (fast mode, 1.1-1.2x the limit, as int8's 15 fails on 2 of 320 there)
# and at k = 65536 and 2**17 on about 1 in 10; 19 passes on all of them (worst 0.02 of
# the limit at k <= 4096, as int8's 16). Its target 120 gives 19 moduli (125.5 bits)
# up to k = 2**19; tests/test_int7.py re-measures it.
_AUTO_BITS = {"int8": 122.0, "fp8": 120.0, "fp64": 120.0, "int7": 120.0}
_AUTO_BITS_PER_DOUBLING = 0.75


def auto_num_moduli(scheme: str, k: int) -> int:
    """Moduli count for ``num_moduli="auto"``: the least count whose ``log2 P``
    reaches the scheme's FP64-grade target at inner dimension ``k``."""
    target = _AUTO_BITS[scheme] + _AUTO_BITS_PER_DOUBLING * max(0.0, math.log2(max(k, 1)) - 12.0)
    bits = 0.0
    for n, p in enumerate(MODULI[scheme], start=1):
        bits += math.log2(p)
        if n >= MIN_MODULI and bits >= target:
            return n
    return len(MODULI[scheme])


def residue_dtype(moduli) -> np.dtype:
    """Smallest integer type that holds every symmetric residue of ``moduli``."""
    top = max(moduli)
    return np.dtype(np.int8 if top <= 256 else np.int16 if top <= 65536 else np.int32)


def modular_constants(p: int) -> tuple[float, float, float]:
    """``(p, fl(1/p), 2**26 mod p)`` as floats: what the symmetric reduction of an
    integer-valued float modulo ``p`` reads (each backend's ``smod``)."""
    return float(p), 1.0 / p, float(pow(2, 26, p))


def short_bound(bound: int) -> bool:
    """Whether exact products bounded by ``bound`` take the one-step reduction (``<= 2**52``).

    Raises ``ValueError`` above ``2**53``, where a product is no longer exact in FP64.
    """
    if bound > 2 ** 53:
        raise ValueError(f"exact products are at most 2**53 in magnitude, got a bound {bound}")
    return bound <= 2 ** 52
