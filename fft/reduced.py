"""DCT/DST of types II-IV through shorter FFTs, with double-double twiddles.

The reductions :mod:`fft.realtransforms` takes beyond the direct product's lengths (its
module docstring gives the maths): types II and III through Makhoul's reordering, one
``N``-point real FFT (odd ``N``) or one ``N/2``-point complex FFT (even ``N``), and type
IV through one ``N/2``-point complex FFT between two twiddle passes. The twiddles are
double-double values (:func:`fft.tables.roots_dd`) applied by error-free products
(Dekker's TwoProduct, Knuth's TwoSum: no fused multiply-add, which numba does not
contract by default) and rounded once per output. :func:`reduction` is the rule,
:data:`REDUCED` the transforms by ``(type, how)``, each called as ``f(a, rev, workers,
plan)`` with ``plan`` the :class:`fft.Plan` of its FFT (of :func:`fft_length` points).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from . import tables
from . import transforms as _t

__all__ = ["reduction", "fft_length", "range_shift", "REDUCED", "MAX_DIRECT",
           "MAX_DIRECT_ODD_IV", "two_prod", "two_sum"]

#: The longest line of each type computed by one matrix product (``"direct"``) ...
MAX_DIRECT = {1: 48, 2: 16, 3: 16, 4: 15}
#: ... and of odd type IV, which is not reduced (its mirrored FFT has ``8N`` points).
MAX_DIRECT_ODD_IV = 127


def reduction(t: int, N: int) -> str:
    """How a line of type ``t`` (after the inverse's mapping) and length ``N`` is computed.

    ``"direct"`` (``N <= 48`` for type I, ``16`` for types II and III, ``15`` for type
    IV and ``127`` at odd ``N``: :data:`MAX_DIRECT`, :data:`MAX_DIRECT_ODD_IV`): one
    emulated product with the transform's matrix, its entries and normalisation in
    double-double (:mod:`fft.direct`). ``"mirror"``: the rfft of the symmetric
    extension (the module docstring's first table). ``"half"`` (even ``N``): types II
    and III through one ``N/2``-point complex FFT of Makhoul's reordering, packed as
    complex values, type IV through one ``N/2``-point complex FFT with a twiddle before
    and after. ``"makhoul"`` (odd ``N``, types II and III): one ``N``-point real FFT of
    Makhoul's reordering and one twiddle per output (DCT-II) or input (DCT-III).

    The rule: direct up to those lengths (the thresholds are argued in
    :mod:`fft.realtransforms`); beyond, types II and III are reduced, type IV at even
    ``N``; type I and odd type IV are mirrored. It depends on ``(t, N)`` alone, not on
    ``dct``/``dst``, the norm or the batch, so a line's bits do not depend on how it is
    batched.
    """
    if N <= MAX_DIRECT[t] or (t == 4 and N % 2 and N <= MAX_DIRECT_ODD_IV):
        return "direct"
    if t in (2, 3):
        return "half" if N % 2 == 0 else "makhoul"
    return "half" if t == 4 and N % 2 == 0 else "mirror"


def fft_length(how: str, N: int) -> int:
    """The length of the FFT a line of length ``N`` takes by ``how`` (:func:`reduction`)."""
    return N // 2 if how == "half" else N


def range_shift(a: np.ndarray, L: int) -> int:
    """``s >= 0`` such that nothing in a reduced transform of ``2**-s a`` overflows,
    including the splitting in the error-free products (``2**27`` times an operand).

    With ``|a| < 2**e`` (``sqrt 2`` more for an orthogonalised endpoint), a pre-twiddled
    value is below ``2**(e + 2)`` (its coefficients' moduli sum to at most 2), the
    length-``L`` FFT's computed values are below ``2**(e + g + 4)`` (``2**g``: the plan's
    growth, :func:`fft.transforms._range_shift`) and the post-twiddled ones below
    ``2**(e + g + 6)``; ``e + g + 4 <= 996`` keeps every operand that is split below
    ``2**996`` and the FFT's input within its own threshold. The scaling is by a power of
    two, which the error-free transformations commute with (no underflow): the bits of
    a scaled call are those of the unscaled one, scaled.
    """
    top = _t.largest_finite(a)
    if top == 0.0:
        return 0
    return max(0, math.frexp(top)[1] + _t.get_plan(L).growth + 4 - 996)


# error-free transformations (no fused multiply-add: numba does not contract by default)

_SPLITTER = 134217729.0  # 2**27 + 1: Dekker's splitter


@nb.njit(nogil=True, cache=True)
def two_prod(a, b):  # pragma: no cover - compiled
    """``a b = p + e`` exactly (Dekker; ``|a|, |b| < 2**996``, no underflow)."""
    p = a * b
    c = _SPLITTER * a
    a1 = c - (c - a)
    a2 = a - a1
    c = _SPLITTER * b
    b1 = c - (c - b)
    b2 = b - b1
    return p, ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2


@nb.njit(nogil=True, cache=True)
def two_sum(a, b):  # pragma: no cover - compiled
    """``a + b = s + e`` exactly (Knuth)."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


@nb.njit(nogil=True, cache=True)
def _dot2(ah, al, u, bh, bl, v):  # pragma: no cover - compiled
    """``(ah + al) u + (bh + bl) v`` rounded about once: the products of the high parts
    and their sum are error-free, their errors and the low parts' products are summed and
    added last (Ogita, Rump and Oishi's Dot2, with double-double coefficients): the
    result is within ``u |result| + O(u**2) sum |terms|`` of the exact value."""
    p, e = two_prod(ah, u)
    q, f = two_prod(bh, v)
    s, g = two_sum(p, q)
    return s + (((e + f) + g) + (al * u + bl * v))


@nb.njit(nogil=True, cache=True)
def _dot4(ah, al, u, bh, bl, v, ch, cl, w, dh, dl, z):  # pragma: no cover - compiled
    """``(ah + al) u + (bh + bl) v + (ch + cl) w + (dh + dl) z`` rounded about once
    (Dot2 of four terms)."""
    p1, e1 = two_prod(ah, u)
    p2, e2 = two_prod(bh, v)
    p3, e3 = two_prod(ch, w)
    p4, e4 = two_prod(dh, z)
    s, f1 = two_sum(p1, p2)
    s, f2 = two_sum(s, p3)
    s, f3 = two_sum(s, p4)
    err = ((e1 + e2) + (e3 + e4)) + ((f1 + f2) + f3)
    return s + (err + ((al * u + bl * v) + (cl * w + dl * z)))


# the kernels: one pass over the lines before or after the FFT (``+ 0.0``: no -0)

@nb.njit(nogil=True, cache=True)
def _post2(V, tw, y, rev):  # pragma: no cover - compiled
    """DCT-II from the spectrum ``V`` (2, B, >= N//2 + 1) of Makhoul's ``v``:
    ``Z = W_{4N}^k V[k]``, ``y[k] = 2 Re Z``, ``y[N-k] = -2 Im Z``; reversed (DST-II)
    when ``rev``. ``tw``: ``W_{4N}^k = c - i s`` in double-double."""
    B, N = y.shape
    half = N - N // 2
    for b in range(B):
        for k in range(N // 2 + 1):
            ch, cl, sh, sl = tw[0, k], tw[1, k], tw[2, k], tw[3, k]
            vr, vi = V[0, b, k], V[1, b, k]
            out = 2.0 * _dot2(ch, cl, vr, sh, sl, vi) + 0.0
            if rev:
                y[b, N - 1 - k] = out
            else:
                y[b, k] = out
            if 0 < k < half:
                out = 2.0 * _dot2(sh, sl, vr, -ch, -cl, vi) + 0.0
                if rev:
                    y[b, k - 1] = out
                else:
                    y[b, N - k] = out


@nb.njit(nogil=True, cache=True)
def _pre3(x, tw, V, rev):  # pragma: no cover - compiled
    """``conj(V[n])``, ``V[n] = conj(W_{4N}^n) (x[n] - i x[N-n])`` (``x[N] = 0``),
    ``n <= N/2``: the half spectrum whose inverse real DFT is DCT-III's ``v``; of ``x``
    reversed (DST-III) when ``rev``."""
    B, N = x.shape
    for b in range(B):
        for n in range(N // 2 + 1):
            ch, cl, sh, sl = tw[0, n], tw[1, n], tw[2, n], tw[3, n]
            if rev:
                p = x[b, N - 1 - n]
                q = x[b, n - 1] if n > 0 else 0.0
            else:
                p = x[b, n]
                q = x[b, N - n] if n > 0 else 0.0
            V[0, b, n] = _dot2(ch, cl, p, sh, sl, q) + 0.0
            V[1, b, n] = _dot2(ch, cl, q, -sh, -sl, p) + 0.0


@nb.njit(nogil=True, cache=True)
def _post2h(Z, tab, y, rev):  # pragma: no cover - compiled
    """DCT-II from the ``M = N/2``-point DFT ``Z`` of ``v[2m] + i v[2m+1]`` (Makhoul's
    ``v``): ``P = A_k Z[k] + B_k conj(Z[M-k])``, ``y[k] = Re P``, ``y[N-k] = -Im P``
    (``tab``: :func:`_tables2`); reversed (DST-II) when ``rev``."""
    B, N = y.shape
    M = N // 2
    for b in range(B):
        for k in range(M + 1):
            i, j = k % M, (M - k) % M
            zr, zi, wr, wi = Z[0, b, i], Z[1, b, i], Z[0, b, j], Z[1, b, j]
            arh, arl, aih, ail = tab[0, k], tab[1, k], tab[2, k], tab[3, k]
            brh, brl, bih, bil = tab[4, k], tab[5, k], tab[6, k], tab[7, k]
            re = _dot4(arh, arl, zr, -aih, -ail, zi, brh, brl, wr, bih, bil, wi) + 0.0
            if rev:
                y[b, N - 1 - k] = re
            else:
                y[b, k] = re
            if 0 < k < M:
                im = _dot4(arh, arl, zi, aih, ail, zr, bih, bil, wr, -brh, -brl, wi)
                if rev:
                    y[b, k - 1] = 0.0 - im
                else:
                    y[b, N - k] = 0.0 - im


@nb.njit(nogil=True, cache=True)
def _pre3h(x, tab, Z, rev):  # pragma: no cover - compiled
    """``conj(Z[k])``, ``Z[k] = alpha_k (x[k] - i x[N-k]) + beta_k (x[M-k] + i x[M+k])``
    (``x[N] = 0``, ``k < M = N/2``; ``tab``: :func:`_tables3`), whose ``M``-point inverse
    DFT is ``v[2m] + i v[2m+1]`` for DCT-III's ``v``; of ``x`` reversed (DST-III) when
    ``rev``."""
    B, N = x.shape
    M = N // 2
    for b in range(B):
        for k in range(M):
            if rev:
                p, q = x[b, N - 1 - k], (x[b, k - 1] if k > 0 else 0.0)
                r, s = x[b, M - 1 + k], x[b, M - 1 - k]
            else:
                p, q = x[b, k], (x[b, N - k] if k > 0 else 0.0)
                r, s = x[b, M - k], x[b, M + k]
            arh, arl, aih, ail = tab[0, k], tab[1, k], tab[2, k], tab[3, k]
            brh, brl, bih, bil = tab[4, k], tab[5, k], tab[6, k], tab[7, k]
            Z[0, b, k] = _dot4(arh, arl, p, aih, ail, q, brh, brl, r, -bih, -bil, s) + 0.0
            Z[1, b, k] = 0.0 - _dot4(aih, ail, p, -arh, -arl, q, bih, bil, r, brh, brl, s)


@nb.njit(nogil=True, cache=True)
def _post3h(F, y, rev):  # pragma: no cover - compiled
    """``v[2m] = Re F[m]``, ``v[2m+1] = -Im F[m]`` (``F = conj(z)``), then ``y[2j] = v[j]``,
    ``y[2j+1] = v[N-1-j]``; DST-III's signs ``(-1)**k`` when ``rev``. Copies only."""
    B, N = y.shape
    M = N // 2
    for b in range(B):
        for n in range(N):
            val = F[0, b, n // 2] if n % 2 == 0 else 0.0 - F[1, b, n // 2]
            if n < M:
                y[b, 2 * n] = val
            else:
                y[b, 2 * (N - 1 - n) + 1] = (0.0 - val) if rev else val


@nb.njit(nogil=True, cache=True)
def _pre4(x, tw, T, rev):  # pragma: no cover - compiled
    """``t[n] = W_{8N}^{4n+1} (x[2n] + i x[N-1-2n])``, ``n < N/2``; of ``x`` reversed
    (DST-IV) when ``rev``."""
    B, N = x.shape
    for b in range(B):
        for n in range(N // 2):
            ch, cl, sh, sl = tw[0, n], tw[1, n], tw[2, n], tw[3, n]
            p, q = x[b, 2 * n], x[b, N - 1 - 2 * n]
            if rev:
                p, q = q, p
            T[0, b, n] = _dot2(ch, cl, p, sh, sl, q) + 0.0
            T[1, b, n] = _dot2(ch, cl, q, -sh, -sl, p) + 0.0


@nb.njit(nogil=True, cache=True)
def _post4(T, tw, y, rev):  # pragma: no cover - compiled
    """``u[k] = W_{2N}^k T[k]``, ``y[2k] = 2 Re u``, ``y[N-1-2k] = -2 Im u`` (``+`` when
    ``rev``: DST-IV's signs ``(-1)**k``)."""
    B, N = y.shape
    for b in range(B):
        for k in range(N // 2):
            ch, cl, sh, sl = tw[0, k], tw[1, k], tw[2, k], tw[3, k]
            tr, ti = T[0, b, k], T[1, b, k]
            y[b, 2 * k] = 2.0 * _dot2(ch, cl, tr, sh, sl, ti) + 0.0
            im = 2.0 * _dot2(ch, cl, ti, -sh, -sl, tr)
            y[b, N - 1 - 2 * k] = (im if rev else -im) + 0.0


# the double-double coefficient tables (cached with fft.tables' own)

def _tables2(N: int) -> np.ndarray:
    """DCT-II's ``A_k = W_{4N}^k - i W_{4N}^{5k}`` and ``B_k = W_{4N}^k + i W_{4N}^{5k}``,
    ``k <= N/2`` (``2 W_{4N}^k`` times the real FFT's split, at once), in
    double-double: rows ``Re A, Im A, Re B, Im B`` (hi, lo each), each a double-double
    sum of two entries of :func:`fft.tables.roots_dd` (within about ``2**-104``)."""
    def make():
        M = N // 2
        c1h, c1l, s1h, s1l = tables.roots_dd(4 * N, 0, 1, M + 1)
        c5h, c5l, s5h, s5l = tables.roots_dd(4 * N, 0, 5, M + 1)
        out = np.empty((8, M + 1))
        out[0], out[1] = tables.dd_add(c1h, c1l, -s5h, -s5l)  # Re A = c1 - s5
        h, l = tables.dd_add(s1h, s1l, c5h, c5l)  # Im A = -(s1 + c5)
        out[2], out[3] = -h, -l
        out[4], out[5] = tables.dd_add(c1h, c1l, s5h, s5l)  # Re B = c1 + s5
        out[6], out[7] = tables.dd_add(c5h, c5l, -s1h, -s1l)  # Im B = c5 - s1
        return out + 0.0
    return tables.table_cache.get(("dct2-half", N), make)


def _tables3(N: int) -> np.ndarray:
    """DCT-III's ``alpha_k = conj(A_k)`` and ``beta_k = W_{4N}^{M-k} - i W_{4N}^{M-5k}``,
    ``k < M = N/2``, in double-double: rows ``Re alpha, Im alpha, Re beta, Im beta``."""
    def make():
        M = N // 2
        A = _tables2(N)[:, :M]
        cmh, cml, smh, sml = tables.roots_dd(4 * N, M, -1, M)
        cqh, cql, sqh, sql = tables.roots_dd(4 * N, M, -5, M)
        out = np.empty((8, M))
        out[0], out[1] = A[0], A[1]
        out[2], out[3] = -A[2], -A[3]
        out[4], out[5] = tables.dd_add(cmh, cml, -sqh, -sql)  # Re beta = cm - sq
        h, l = tables.dd_add(smh, sml, cqh, cql)  # Im beta = -(sm + cq)
        out[6], out[7] = -h, -l
        return out + 0.0
    return tables.table_cache.get(("dct3-half", N), make)


# the drivers: lines (B, N) in, lines out

def _lines(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1, a.shape[-1])


def _reorder(x: np.ndarray, rev: bool) -> np.ndarray:
    """Makhoul's ``v = [x[0], x[2], ..., x[3], x[1]]`` of lines ``x`` (DST-II: of
    ``x[n] (-1)**n``, whose DCT-II is the DST-II reversed)."""
    N = x.shape[-1]
    h = N - N // 2
    v = np.empty_like(x)
    v[:, :h] = x[:, ::2]
    if rev:
        np.negative(x[:, 1::2][:, ::-1], out=v[:, h:])
    else:
        v[:, h:] = x[:, 1::2][:, ::-1]
    return v


def _makhoul2(a: np.ndarray, rev: bool, workers, plan) -> np.ndarray:
    """DCT-II (DST-II) of the last axis: the ``N``-point rfft of Makhoul's ``v`` and one
    twiddle per output."""
    N = a.shape[-1]
    x = _lines(a)
    v = _reorder(x, rev)
    with _t.limit_threads(workers):
        V = _t.transform_along(v, 1, plan, real_in=True)
    y = np.empty_like(x)
    _post2(V, tables.roots_dd(4 * N, 0, 1, N // 2 + 1), y, rev)
    return y.reshape(a.shape)


def _makhoul3(a: np.ndarray, rev: bool, workers, plan) -> np.ndarray:
    """DCT-III (DST-III: of ``x`` reversed, outputs times ``(-1)**k``) of the last axis:
    one twiddle per input, the ``N``-point inverse real FFT (the forward plan on the
    conjugates), and ``y[2m] = v[m]``, ``y[2m+1] = v[N-1-m]``."""
    N = a.shape[-1]
    x = _lines(a)
    V = np.empty((2, x.shape[0], N // 2 + 1))
    _pre3(x, tables.roots_dd(4 * N, 0, 1, N // 2 + 1), V, rev)
    with _t.limit_threads(workers):
        v = _t.transform_along(_t.complete_hermitian(V, 1, N), 1, plan, real_out=True)
    h = N - N // 2
    y = np.empty_like(x)
    y[:, ::2] = v[:, :h]
    if rev:
        np.subtract(0.0, v[:, h:][:, ::-1], out=y[:, 1::2])
    else:
        y[:, 1::2] = v[:, h:][:, ::-1]
    return y.reshape(a.shape)


def _half2(a: np.ndarray, rev: bool, workers, plan) -> np.ndarray:
    """DCT-II (DST-II) of an even-length last axis: Makhoul's ``v`` packed as ``N/2``
    complex values ``v[2m] + i v[2m+1]``, their complex FFT, one four-term product per
    output (the real FFT's split and the twiddle at once)."""
    N = a.shape[-1]
    x = _lines(a)
    v = _reorder(x, rev)
    Z = np.empty((2, x.shape[0], N // 2))
    Z[0], Z[1] = v[:, 0::2], v[:, 1::2]
    with _t.limit_threads(workers):
        Z = _t.transform_along(Z, 1, plan)
    y = np.empty_like(x)
    _post2h(Z, _tables2(N), y, rev)
    return y.reshape(a.shape)


def _half3(a: np.ndarray, rev: bool, workers, plan) -> np.ndarray:
    """DCT-III (DST-III) of an even-length last axis: one four-term product per
    ``N/2``-point input (the twiddle and the inverse real FFT's packing at once), the
    ``N/2``-point complex FFT (of the conjugates: the inverse), and a permutation."""
    N = a.shape[-1]
    x = _lines(a)
    Z = np.empty((2, x.shape[0], N // 2))
    _pre3h(x, _tables3(N), Z, rev)
    with _t.limit_threads(workers):
        F = _t.transform_along(Z, 1, plan)
    y = np.empty_like(x)
    _post3h(F, y, rev)
    return y.reshape(a.shape)


def _half4(a: np.ndarray, rev: bool, workers, plan) -> np.ndarray:
    """DCT-IV (DST-IV: of ``x`` reversed, outputs times ``(-1)**k``) of an even-length
    last axis: a twiddle, the ``N/2``-point complex FFT, a twiddle."""
    N = a.shape[-1]
    x = _lines(a)
    T = np.empty((2, x.shape[0], N // 2))
    _pre4(x, tables.roots_dd(8 * N, 1, 4, N // 2), T, rev)
    with _t.limit_threads(workers):
        T = _t.transform_along(T, 1, plan)
    y = np.empty_like(x)
    _post4(T, tables.roots_dd(2 * N, 0, 1, N // 2), y, rev)
    return y.reshape(a.shape)


REDUCED = {(2, "makhoul"): _makhoul2, (3, "makhoul"): _makhoul3, (2, "half"): _half2,
            (3, "half"): _half3, (4, "half"): _half4}
