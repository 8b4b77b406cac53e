"""Correctly rounded roots of unity, DFT matrices and twiddles.

``W_N^j = exp(-2 pi i j / N)`` is evaluated in double-double arithmetic
(about 104 bits) and rounded once to FP64, so each part is the correctly
rounded value of the exact cosine and sine unless the exact value lies within
about ``2**-100`` relative of a rounding boundary (never met in the tests, which
compare every entry with mpmath for many ``N``). ``np.exp(-2j*np.pi*j/N)``
is not good enough: the angle is rounded before the exponential sees it, an
error that grows with ``j`` (about ``5e-13`` at ``N = 4096``).

Argument reduction is exact: ``4j = qN + e`` with ``q = round(4j/N)`` in
integers, so ``2 pi j/N = q pi/2 + theta`` with ``theta = pi e/(2N)``,
``|theta| <= pi/4``; the quadrant ``q mod 4`` swaps and negates cosine and
sine (exact), and ``theta`` is formed as the double-double product of ``pi``
(three FP64 terms) and ``e/(2N)`` (a double-double quotient). The Taylor
series of ``sin`` and ``cos`` at ``|theta| <= pi/4`` converge below
``2**-106`` after the terms of degree 27 and 28.

Tables are cached per size; the cache is bounded in bytes (:data:`CACHE_BYTES`).
"""

from __future__ import annotations

from collections import OrderedDict
from fractions import Fraction
from math import factorial
from threading import Lock

import numpy as np

__all__ = ["roots", "roots_dd", "dft_matrix", "twiddles", "chirp", "CACHE_BYTES", "clear_cache"]

CACHE_BYTES = 1 << 28  #: bound of the table cache (bytes of complex128 entries)

_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitter for FP64


def _two_sum(a, b):
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def _split(a):
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    """``a*b = p + e`` exactly (Dekker; |a|, |b| far below 2**996, as here)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dd_add(ah, al, bh, bl):
    s, e = _two_sum(ah, bh)
    e = e + (al + bl)
    return _two_sum(s, e)


def _dd_mul(ah, al, bh, bl):
    p, e = _two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    return _two_sum(p, e)


def _dd_const(x: Fraction) -> tuple[float, float]:
    hi = float(x)
    return hi, float(x - Fraction(hi))


# pi to 160 bits, as three FP64 terms (hi + mid + lo); digits from the decimal expansion
_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899")
_PI_HI = float(_PI)
_PI_MID = float(_PI - Fraction(_PI_HI))
_PI_LO = float(_PI - Fraction(_PI_HI) - Fraction(_PI_MID))
_SIN = [_dd_const(Fraction((-1) ** (i // 2), factorial(i))) for i in range(27, 0, -2)]
_COS = [_dd_const(Fraction((-1) ** (i // 2), factorial(i))) for i in range(28, -1, -2)]


def _sincos(e: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Correctly rounded ``cos`` and ``sin`` of ``theta = pi e / (2N)``, ``|e| <= N/2``."""
    csh, csl, sh, sl = _sincos_dd(e, N)
    return csh + csl, sh + sl  # one rounding each: hi + lo of a normalised pair


def _compute_roots(N: int) -> np.ndarray:
    j = np.arange(N, dtype=np.int64)
    q = (8 * j + N) // (2 * N)  # round(4j / N), halves up
    e = 4 * j - q * N  # |e| <= N/2, a multiple of g = gcd(4, N); every multiple occurs
    g = int(np.gcd(4, N))
    c_tab, s_tab = _sincos(np.arange(0, N // 2 + 1, g, dtype=np.int64), N)  # theta >= 0
    a = np.abs(e) // g
    c, s = c_tab[a], np.where(e < 0, -s_tab[a], s_tab[a])  # cos even, sin odd
    quad = q % 4
    cos = np.choose(quad, [c, -s, -c, s])
    sin = np.choose(quad, [s, c, -s, -c])
    out = np.empty(N, np.complex128)
    out.real = cos + 0.0  # +0.0: no negative zeros in the tables
    out.imag = -sin + 0.0
    return out


class _Cache:
    """A least-recently-used cache bounded in bytes, safe across threads."""

    def __init__(self, limit):
        self._limit, self.size = limit, 0
        self.items: OrderedDict = OrderedDict()
        self.lock = Lock()

    def get(self, key, make):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()
        value.flags.writeable = False
        with self.lock:
            if key not in self.items:
                self.items[key] = value
                self.size += value.nbytes
                while self.size > self._limit() and len(self.items) > 1:
                    _, old = self.items.popitem(last=False)
                    self.size -= old.nbytes
            return self.items[key]

    def clear(self):
        with self.lock:
            self.items.clear()
            self.size = 0


table_cache = _Cache(lambda: CACHE_BYTES)  # read at each insertion: the bound may be changed


def clear_cache() -> None:
    """Drop every cached table."""
    table_cache.clear()


def roots(N: int) -> np.ndarray:
    """``W_N^j = exp(-2 pi i j/N)`` for ``j = 0 .. N-1``, correctly rounded.

    Parameters
    ----------
    N : int
        Order, ``1 <= N < 2**50``.

    Returns
    -------
    ndarray, shape (N,), complex128, read-only
    """
    if not 1 <= N < 2 ** 50:
        raise ValueError(f"N must be in [1, 2**50), got {N}")
    return table_cache.get(("roots", N), lambda: _compute_roots(N))


def dft_matrix(r: int, cache: bool = True) -> np.ndarray:
    """The DFT matrix ``F[j, k] = W_r^{jk}``, shape (r, r), complex128, read-only.

    ``cache=False`` builds it without keeping it (a large dense prime stage keeps
    its own embedded copy).
    """
    def make():
        j = np.arange(r, dtype=np.int64)
        return roots(r)[np.outer(j, j) % r]
    if not cache:
        out = make()
        out.flags.writeable = False
        return out
    return table_cache.get(("dft", r), make)


def twiddles(N: int, r: int) -> np.ndarray:
    """Four-step twiddles ``T[k1, n2] = W_N^{k1 n2}``, shape (r, N/r), complex128, read-only."""
    if N % r:
        raise ValueError(f"radix {r} does not divide {N}")

    def make():
        k1 = np.arange(r, dtype=np.int64)
        n2 = np.arange(N // r, dtype=np.int64)
        return roots(N)[np.outer(k1, n2) % N]
    return table_cache.get(("twiddles", N, r), make)


def chirp(N: int) -> np.ndarray:
    """Bluestein's chirp ``w_n = exp(-pi i n**2 / N) = W_{2N}^{n**2 mod 2N}``, shape (N,)."""
    def make():
        n = np.arange(N, dtype=np.int64)
        return roots(2 * N)[(n * n) % (2 * N)]
    return table_cache.get(("chirp", N), make)


def _sincos_dd(e: np.ndarray, N: int) -> tuple[np.ndarray, ...]:
    """``cos`` and ``sin`` of ``theta = pi e / (2N)``, ``|e| <= N/2``, as normalised
    double-double pairs ``(cos_hi, cos_lo, sin_hi, sin_lo)`` (about 104 bits; ``hi + lo``
    rounds to the correctly rounded value :func:`_sincos` returns)."""
    ef = e.astype(np.float64)  # exact: |e| <= N/2 < 2**52
    d = float(2 * N)
    qh = ef / d
    ph, pl = _two_prod(qh, np.float64(d))
    ql = ((ef - ph) - pl) / d  # ef - ph - pl is exact (Sterbenz and two_prod)
    th, tl = _dd_mul(qh, ql, np.float64(_PI_HI), np.float64(_PI_MID))
    th, tl = _two_sum(th, tl + qh * _PI_LO)
    x2h, x2l = _dd_mul(th, tl, th, tl)
    sh, sl = np.full_like(th, _SIN[0][0]), np.full_like(th, _SIN[0][1])
    for ch, cl in _SIN[1:]:
        sh, sl = _dd_mul(sh, sl, x2h, x2l)
        sh, sl = dd_add(sh, sl, ch, cl)
    sh, sl = _dd_mul(sh, sl, th, tl)
    csh, csl = np.full_like(th, _COS[0][0]), np.full_like(th, _COS[0][1])
    for ch, cl in _COS[1:]:
        csh, csl = _dd_mul(csh, csl, x2h, x2l)
        csh, csl = dd_add(csh, csl, ch, cl)
    return csh, csl, sh, sl


def roots_dd(N: int, start: int, step: int, count: int) -> np.ndarray:
    """``W_N^j = cos(2 pi j/N) - i sin(2 pi j/N)`` for ``j = start + step * i``,
    ``i < count``, in double-double: rows ``cos_hi, cos_lo, sin_hi, sin_lo``.

    Each ``hi`` is the correctly rounded value (the entry of :func:`roots`) and
    ``hi + lo`` is within about ``2**-104`` of the exact value: for twiddle products
    that are to round once (:mod:`fft.realtransforms`). The same exact argument
    reduction as :func:`roots` (``4j = qN + e``, the quadrant swapping and negating
    exactly).

    Returns
    -------
    ndarray, shape (4, count), float64, read-only
    """
    if not 1 <= N < 2 ** 50:
        raise ValueError(f"N must be in [1, 2**50), got {N}")

    def make():
        j = (start + step * np.arange(count, dtype=np.int64)) % N
        q = (8 * j + N) // (2 * N)  # round(4j / N), halves up
        e = 4 * j - q * N  # |e| <= N/2
        ch, cl, sh, sl = _sincos_dd(np.abs(e), N)
        neg = e < 0
        sh, sl = np.where(neg, -sh, sh), np.where(neg, -sl, sl)  # sin odd, cos even
        quad = q % 4
        out = np.empty((4, count))
        out[0] = np.choose(quad, [ch, -sh, -ch, sh])
        out[1] = np.choose(quad, [cl, -sl, -cl, sl])
        out[2] = np.choose(quad, [sh, ch, -sh, -ch])
        out[3] = np.choose(quad, [sl, cl, -sl, -cl])
        return out + 0.0  # no negative zeros
    return table_cache.get(("roots_dd", N, start, step, count), make)
