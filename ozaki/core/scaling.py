"""Step 1 of the scheme: power-of-two shifts that turn A and B into integers.

``A' = trunc(diag(2**s) A)`` and ``B' = trunc(B diag(2**t))`` must satisfy
``|A'B'| <= H`` entrywise (``H = floor(P (1 - eta) / 2)``, :mod:`ozaki.core.moduli`)
so that the CRT recovers ``A'B'`` from its residues. Every decision below uses
exact operations only: exponents read from bit patterns, integer maxima,
``frexp`` of exactly known values, comparisons with ``H`` (rounded down).

*accurate*: one exact small-integer GEMM bounds ``|A||B|``. With ``E_i`` the
row exponent (``max_l |a_il| < 2**E_i``) and ``e_i = r - E_i``, the magnitudes
``alpha = |A| 2**e`` lie below ``2**r``; their floors ``F_A`` are integers below
``2**r``; likewise ``beta``, ``F_B``. ``r`` depends on the scheme's unit and
``k`` only (:func:`quantization_bits`), so every engine computes the same exact
``G = F_A F_B`` and all engines choose the same shifts. ``G`` is a **lower**
bound of ``alpha beta`` (used by :mod:`ozaki.core.certify`), and
``U = G + rF + cF + min(nA, nB)`` an **upper** bound (the backend's ``upper_rowmax``).
Since ``(|A||B|)_ij <= 2**-(e_i + f_j) U_ij``, the shifts ``s = e + sigma``,
``t = f + tau`` are safe when ``2**(sigma_i + tau_j) U_ij <= H``. We take
``sigma_i`` the largest with ``2**(2 sigma_i) max_j U_ij <= H`` (then
``2**(sigma_i+tau_j) U_ij <= sqrt(2**(2 sigma_i) mu_i 2**(2 tau_j) nu_j) <= H``
for the symmetric ``tau``) and then ``tau_j`` the largest with
``max_i 2**(sigma_i + tau_j) U_ij <= H``, which is at least the symmetric one.

*fast*: Cauchy-Schwarz, ``|A'B'|_ij <= ||a'_i||_2 ||b'_j||_2``. With upper
bounds ``n_i >= ||a_i 2**-E_i||^2`` computed from exact integer sums of floored
magnitudes (:func:`norm_bits`), ``s_i = sigma_i - E_i`` with
``2**(2 sigma_i) n_i <= H``. Scaling a row by
``2**e`` shifts ``E_i`` by ``e`` and leaves ``n_i`` unchanged: the result scales
exactly (the published fast-mode formula is not scale invariant).
"""

from __future__ import annotations

import math

import numpy as np


__all__ = ["exponents", "half_fit", "fit", "quantization_bits", "norm_bits", "fast_shifts",
           "accurate_quantizers", "fits_split", "SPLIT_LIMIT"]

#: Scaled magnitudes below ``2**SPLIT_LIMIT`` have four 22-bit digits (:func:`fits_split`).
SPLIT_LIMIT = 88

#: log2 of the largest quantised magnitude the scheme's unit multiplies exactly:
#: FP8 E4M3 holds the integers up to 16, INT8 up to 127 (64 keeps a margin).
#: ``int7`` keeps int8's 6: floors below ``2**6`` are at most 63 on both sides of the
#: floor GEMM, within the ``|b| <= 64`` that oneDNN's non-VNNI kernels take in one
#: INT8 GEMM (:mod:`ozaki.backends.onednn`).
_UNIT_BITS = {"fp8": 4, "int8": 6, "fp64": 20, "int7": 6}


def exponents(maxbits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exponents ``E`` with ``|x| < 2**E`` from the bits of the largest ``|x|``.

    Returns ``(E, zero)``: ``E`` as int64 (0 where the line is all zero) and the
    all-zero flags. Normal ``x`` with biased exponent ``ex`` lies in
    ``[2**(ex-1023), 2**(ex-1022))``; a subnormal ``mant * 2**-1074`` is below
    ``2**(bit_length(mant) - 1074)``, and ``frexp`` of the integer ``mant``
    (below ``2**52``: exact in FP64) gives ``bit_length(mant)``.
    """
    maxbits = np.asarray(maxbits, np.int64)
    zero = maxbits == 0
    ex = maxbits >> 52
    E = ex - 1022
    sub = (ex == 0) & ~zero
    if sub.any():
        E[sub] = np.frexp(maxbits[sub].astype(np.float64))[1] - 1074
    E[zero] = 0
    return E, zero


def _fit_exponent(x: np.ndarray, H) -> np.ndarray:
    """Largest ``d`` with ``2**d x <= H``, elementwise, for ``x > 0`` (any value elsewhere).

    With ``x = m 2**a`` and ``H = h 2**c`` (``frexp``: exact, ``m``, ``h`` in
    ``[1/2, 1)``), ``2**d x <= H`` iff ``d <= c - a`` when ``m <= h`` and
    ``d <= c - a - 1`` otherwise.
    """
    m, a = np.frexp(x)
    h, c = np.frexp(H)
    return (c - a - (m > h)).astype(np.int64)


def half_fit(mu: np.ndarray, H) -> np.ndarray:
    """Largest integer ``sigma`` with ``2**(2 sigma) mu <= H``, elementwise (0 where mu == 0).

    ``H`` broadcasts against ``mu``; ``floor(d / 2)`` of the largest ``d`` with
    ``2**d mu <= H`` (floor division: ``d`` may be negative).
    """
    mu = np.asarray(mu, np.float64)
    return np.where(mu > 0, _fit_exponent(mu, H) // 2, 0)


def fit(nu: np.ndarray, H) -> np.ndarray:
    """Largest integer ``tau`` with ``2**tau nu <= H``, elementwise (0 where nu == 0)."""
    nu = np.asarray(nu, np.float64)
    return np.where(nu > 0, _fit_exponent(nu, H), 0)


def quantization_bits(scheme: str, k: int) -> int:
    """``r``: accurate-mode magnitudes are quantised to integers below ``2**r``.

    ``r`` is the scheme unit's range, at most what keeps ``k 2**(2 r) <= 2**24``
    (the bound GEMM is then exact in FP32: SGEMM on the CPU, half a DGEMM's
    cost) but not below 4, and always ``k 2**(2 r) <= 2**53``.
    """
    lk = math.ceil(math.log2(max(k, 1)))
    r = min(_UNIT_BITS[scheme], max(4, (24 - lk) // 2))
    return min(r, (53 - lk) // 2)


def norm_bits(k: int) -> int:
    """``h``: fast-mode magnitudes are floored to integers below ``2**h``.

    The exact sums of their squares stay below ``k 2**(2h) <= 2**62`` (int64).
    """
    lk = math.ceil(math.log2(max(k, 1)))
    return max(1, min(20, (62 - lk) // 2))


def fast_shifts(E: np.ndarray, zero: np.ndarray, upper2: np.ndarray, H) -> np.ndarray:
    """Fast-mode shifts ``s = sigma - E`` from upper bounds of the normalised squared norms.

    ``upper2 >= ||a_i 2**-E_i||_2**2`` (:class:`ozaki.core.decisions.Norms`), so
    ``2**(2 sigma) upper2 <= H`` keeps ``||a'_i||_2 ||b'_j||_2 <= H``.
    """
    sigma = half_fit(np.where(zero, 0.0, upper2), H)
    return np.where(zero, 0, sigma - E).astype(np.int64)


def accurate_quantizers(E: np.ndarray, zero: np.ndarray, r: int) -> np.ndarray:
    """Shifts ``e = r - E`` that map each line's magnitudes below ``2**r`` (0 on zero lines)."""
    return np.where(zero, 0, r - np.asarray(E, np.int64))


def fits_split(E: np.ndarray, zero: np.ndarray, shift: np.ndarray) -> int:
    """The 22-bit digits every scaled magnitude of these lines has: 3, 4, or 0 (more).

    Every scaled line ``|x| 2**shift < 2**(E + shift)`` below ``2**66`` has three
    digits, below ``2**88`` four; above, 0. ``E``, ``zero`` (:func:`exponents`) and
    ``shift`` broadcast against each other, shape (b, lines); all-zero lines always
    fit. A backend's residue pass may read digits instead of the bits where they fit
    (the ``cpu`` backend's split pass; the residues are the same).
    """
    top = int(np.where(zero, 0, np.asarray(E) + np.asarray(shift)).max(initial=0))
    return 3 if top <= 3 * 22 else 4 if top <= SPLIT_LIMIT else 0
