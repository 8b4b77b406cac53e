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
from math import factorial, isqrt
from threading import Lock

import numpy as np

__all__ = ["roots", "roots_dd", "dft_matrix", "twiddles", "chirp", "r2r_trig_dd", "r2r_matrix_dd",
           "sqrt_dd", "dd_add", "dd_mul", "R2R_ENDS_IN", "R2R_ENDS_OUT", "CACHE_BYTES",
           "clear_cache"]

CACHE_BYTES = 1 << 28  #: bound of the table cache (bytes of complex128 entries)

_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitter for FP64
#: The inputs scipy's DCT/DST of a ``(kind, type)`` weigh by 1 rather than 2, which
#: ``orthogonalize`` multiplies by ``sqrt 2``, and the outputs it divides by ``sqrt 2``
#: (indices modulo ``N``).
R2R_ENDS_IN = {("dct", 1): (0, -1), ("dct", 3): (0,), ("dst", 3): (-1,)}
R2R_ENDS_OUT = {("dct", 1): (0, -1), ("dct", 2): (0,), ("dst", 2): (-1,)}


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
    """Double-double sum ``(ah + al) + (bh + bl)``, normalised (about ``2**-104`` relative
    where nothing cancels)."""
    s, e = _two_sum(ah, bh)
    e = e + (al + bl)
    return _two_sum(s, e)


def dd_mul(ah, al, bh, bl):
    """Double-double product ``(ah + al)(bh + bl)``, normalised: within about
    ``2**-104`` relative (the dropped ``al bl`` and the roundings of the cross terms)."""
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
    th, tl = dd_mul(qh, ql, np.float64(_PI_HI), np.float64(_PI_MID))
    th, tl = _two_sum(th, tl + qh * _PI_LO)
    x2h, x2l = dd_mul(th, tl, th, tl)
    sh, sl = np.full_like(th, _SIN[0][0]), np.full_like(th, _SIN[0][1])
    for ch, cl in _SIN[1:]:
        sh, sl = dd_mul(sh, sl, x2h, x2l)
        sh, sl = dd_add(sh, sl, ch, cl)
    sh, sl = dd_mul(sh, sl, th, tl)
    csh, csl = np.full_like(th, _COS[0][0]), np.full_like(th, _COS[0][1])
    for ch, cl in _COS[1:]:
        csh, csl = dd_mul(csh, csl, x2h, x2l)
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


def sqrt_dd(r: Fraction) -> tuple[float, float]:
    """``sqrt(r)`` of a positive rational ``r`` as a normalised double-double pair.

    ``m = isqrt(floor(r 4**e))`` with ``m`` near ``2**130`` is exact integer arithmetic, and
    ``m 2**-e`` is below ``sqrt r`` by less than ``2**-128`` relative; ``hi`` is that value
    correctly rounded and ``lo`` the rest, rounded: ``hi + lo`` is within about ``2**-106``
    of ``sqrt r`` relative, and exact where ``sqrt r`` is a power of two (``sqrt(1/4) =
    1/2``: then ``r 4**e`` is a perfect square).
    """
    r = Fraction(r)
    if r <= 0:
        raise ValueError(f"r must be positive, got {r}")
    e = max(0, 130 - (r.numerator.bit_length() - r.denominator.bit_length()) // 2)
    v = Fraction(isqrt((r.numerator << (2 * e)) // r.denominator), 1 << e)
    hi = float(v)
    return hi, float(v - Fraction(hi))


def r2r_trig_dd(kind: str, t: int, N: int) -> np.ndarray:
    """The trigonometric factors of scipy's DCT (``kind="dct"``) or DST of type ``t`` and
    length ``N``, ``T[j, n] = cos(pi p(j, n) / q)`` (or ``sin``), in double-double.

    ``q`` and ``p`` as in scipy's definitions: ``jn / (N-1)`` (DCT-I), ``(j+1)(n+1) / (N+1)``
    (DST-I), ``j(2n+1) / 2N`` (DCT-II; DST-II with ``j+1``), ``(2j+1)n / 2N`` (DCT-III;
    DST-III with ``n+1``), ``(2j+1)(2n+1) / 4N`` (type IV). Each is the entry ``p mod 2q``
    of :func:`roots_dd` of order ``2q`` (``cos(pi p/q) = Re W_{2q}^p``, ``sin(pi p/q) =
    -Im W_{2q}^p``), so the exact argument reduction and the accuracy are
    :func:`roots_dd`'s: ``hi`` correctly rounded, ``hi + lo`` within about ``2**-104``.

    Returns
    -------
    ndarray, shape (2, N, N), float64, read-only
        ``hi`` and ``lo``; rows ``j`` (outputs), columns ``n`` (inputs).
    """
    if kind not in ("dct", "dst") or t not in (1, 2, 3, 4) or N < 1:
        raise ValueError(f"no {kind}-{t} of length {N}")
    if kind == "dct" and t == 1 and N < 2:
        raise ValueError("a DCT of type 1 needs at least 2 points")

    def make():
        j = np.arange(N, dtype=np.int64)[:, None]
        n = np.arange(N, dtype=np.int64)[None, :]
        a, b = (j, n) if kind == "dct" else (j + 1, n + 1)  # DST-I's (j+1)(n+1)
        p, two_q = {1: (a * b, 2 * (N - 1) if kind == "dct" else 2 * (N + 1)),
                    2: (a * (2 * n + 1), 4 * N),  # DST-II: (j+1)(2n+1)
                    3: ((2 * j + 1) * b, 4 * N),  # DST-III: (2j+1)(n+1)
                    4: ((2 * j + 1) * (2 * n + 1), 8 * N)}[t]
        R = roots_dd(two_q, 0, 1, two_q)
        rows = (0, 1) if kind == "dct" else (2, 3)
        return np.stack([R[rows[0]][p % two_q], R[rows[1]][p % two_q]]) + 0.0
    return table_cache.get(("r2r-trig", kind, t, N), make)


def r2r_matrix_dd(kind: str, t: int, N: int, scaling: str, ortho: bool) -> np.ndarray:
    """The normalised DCT/DST matrix ``C = Chi + Clo`` in double-double, as ``[Chi^T;
    Clo^T]`` (the right operand of ``[x, x] @ .`` for lines ``x``).

    ``C[j, n] = T[j, n] s[j, n]``: ``T`` from :func:`r2r_trig_dd` and ``s = w_n g_n h_j f``
    (scipy's weight ``w_n``, 1 at :data:`R2R_ENDS_IN` and 2 elsewhere; with ``ortho``,
    ``g_n = sqrt 2`` there and ``h_j = 1/sqrt 2`` at :data:`R2R_ENDS_OUT`; ``f`` the norm's
    ``1``, ``1/L`` or ``1/sqrt L`` for ``scaling`` ``"none"``, ``"n"``, ``"sqrt"``, with
    scipy's ``L``: ``2(N-1)``, ``2(N+1)`` for type I, else ``2N``). ``s**2`` is an exact
    rational, so :func:`sqrt_dd` gives ``s`` and :func:`dd_mul` the entry, within about
    ``2**-103`` relative; exact entries (0, +-1, +-2, powers of two) come out exact.

    Returns
    -------
    ndarray, shape (2N, N), float64, read-only
    """
    def make():
        L = (2 * (N - 1) if kind == "dct" else 2 * (N + 1)) if t == 1 else 2 * N
        f2 = {"none": Fraction(1), "n": Fraction(1, L * L), "sqrt": Fraction(1, L)}[scaling]
        ends_in = {i % N for i in R2R_ENDS_IN.get((kind, t), ())}
        ends_out = {i % N for i in R2R_ENDS_OUT.get((kind, t), ())} if ortho else set()
        s2 = [[f2 * (1 if n in ends_in else 4) * (2 if ortho and n in ends_in else 1)
               / (2 if j in ends_out else 1) for n in range(N)] for j in range(N)]
        got = {v: sqrt_dd(v) for v in set(v for row in s2 for v in row)}
        sh = np.array([[got[v][0] for v in row] for row in s2])
        sl = np.array([[got[v][1] for v in row] for row in s2])
        T = r2r_trig_dd(kind, t, N)
        hi, lo = dd_mul(T[0], T[1], sh, sl)
        return np.concatenate([hi.T, lo.T]) + 0.0
    return table_cache.get(("r2r-matrix", kind, t, N, scaling, bool(ortho)), make)
