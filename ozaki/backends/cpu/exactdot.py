"""Exactly rounded dot products: a long fixed-point (Kulisch) accumulator in numba.

This is the path for the entries that the emulation cannot certify (the
"fallback" entries). Native BLAS is not used there: its result depends on the
thread count and blocking, and it overflows or cancels wrongly for finite inputs
whose exact result fits in FP64 (``[1, -2, 1e308] . [0, 1e308, 3.5]`` is exactly
``1.5e308``; a left-to-right BLAS gives ``-inf``).

Every returned value is ``fl(sum_l x_l y_l)``: the **exact** real sum of the
exact products, rounded **once** to the nearest double, ties to even, with
gradual underflow (results below ``2**-1022`` are rounded at ``2**-1074``) and
overflow (a rounded magnitude of ``2**1024`` or more gives ``+-inf`` with the
sign of the exact sum). An exact zero sum gives ``+0.0``; a nonzero sum that
rounds to zero keeps its sign (``-0.0`` for a tiny negative sum), as IEEE 754
rounding does. The result does not depend on the order of the terms, the
memory layout, or the thread count.

Non-finite entries (Inf, NaN) are treated as 0: the term ``x_l y_l`` is
skipped when either factor is non-finite. The caller overwrites the entries
whose row or column holds a non-finite value separately (their semantics, such
as ``Inf * 0 = NaN``, are applied by :mod:`ozaki.core.special`).

The accumulator
---------------
A finite double is ``x = +-mx 2**ex`` with an integer ``mx < 2**53`` and
``ex`` in ``[-1074, 971]`` (the bits, read as an int64 view, see
:func:`ozaki.backends.cpu.kernels.unpack`). A product is therefore ``+-mx my 2**s`` with
``mx my < 2**106`` and ``s = ex + ey`` in ``[-2148, 1942]``: every product, and
every sum of products, is an integer multiple of ``2**-2148`` below
``2**2048`` per term. The accumulator holds that integer ``S 2**2148`` in
``NLIMBS = 136`` signed int64 limbs of radix ``2**32``: limb ``i`` weighs
``2**(32 i - 2148)``, so the limbs cover bit positions ``-2148 .. 2203``; the
products reach position ``2048`` (limb 131) and limbs 132..135 only receive
carries (155 bits of headroom above the largest product, and the sign).

Adding a product (exact): split ``mx = xh 2**26 + xl`` (``xh < 2**27``,
``xl < 2**26``) and the same for ``my``; the three partial products
``xh yh < 2**54``, ``mid = xh yl + xl yh < 2**54`` and ``xl yl < 2**52`` are
exact int64 products, and ``mx my = hi 2**52 + lo`` with
``hi = xh yh + (mid >> 26) < 2**55`` and
``lo = xl yl + (mid mod 2**26) 2**26 < 2**53``, both exact. Each of ``lo`` (at
bit offset ``s``) and ``hi`` (at ``s + 52``) is cut at the limb boundaries into
three pieces, each ``< 2**32``, added to (or, for a negative product,
subtracted from) three consecutive limbs. A limb receives at most two pieces
per term (one from ``lo``, one from ``hi``), so it changes by less than
``2**33`` per term.

Deferred carries: after a carry normalisation every limb but the top one is in
``[0, 2**32)``. After ``N`` further terms ``|limb| < 2**32 + N 2**33``, which
stays below ``2**63`` for any ``N < 2**30 - 1``. The kernel normalises every
``CARRY_PERIOD = 2**20`` added (nonzero, finite) terms, so no limb can
overflow int64 for any ``k``: between normalisations ``|limb| < 2**54``. A
normalisation moves ``c = limb >> 32`` (floor, ``|c| < 2**22``) into the next
limb and leaves ``limb - c 2**32`` in ``[0, 2**32)``: exact, and it does not
change ``S``.

The top limb: ``|S 2**2148| < k 2**4196`` and ``k < 2**63``, far below
``2**(32*135) = 2**4320``, so after a full normalisation the top limb is ``-1``
(negative sum, two's complement) or ``0``: it is the sign. A negative sum is
negated limb by limb and normalised again, which gives the magnitude
``M = |S| 2**2148`` in the same nonnegative form.

Rounding (once): with ``L`` the bit length of ``M``, the unit in the last place
of the result sits at bit ``q = max(L - 53, 1074)`` of ``M`` (``1074`` is
``2**-1074``, the subnormal spacing). ``t = floor(M / 2**(q-1)) < 2**54`` is read
from at most three limbs; ``r = t >> 1`` is the truncated significand, ``t & 1``
the round bit, and the sticky bit is the OR of all bits of ``M`` below
``q - 1``. Round to nearest even increments ``r`` when the round bit is set and
either the sticky bit or the last bit of ``r`` is. The result is
``r 2**(q - 2148)`` with ``r <= 2**53``: representable exactly unless it
overflows (``r = 2**53`` is renormalised to ``2**52`` one binade up), so it is
formed by multiplications by powers of two that are exact (two steps for
subnormal results, each exact because the final value is representable).
Overflow is decided on the rounded value: ``r 2**e >= 2**1024``.

Speed
-----
Measured with ``python benchmarks/exactdot_speed.py`` (one
numba thread, k = 4096, 256 entries; normal random data, and values ``+-2**e``
with ``e`` uniform in ``[-1074, 1023]``) on the project's shared 2-core
development machine: 9 to 12.5 ns per term (37 to 51 us per entry of length
4096, the spread is load from other jobs), the same for both data sets (the
work per term does not depend on the data). The per-entry overhead (zeroing,
normalising and rounding 136 limbs) is about 0.15 us.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ...core.backend import check_indices, dot_arguments
from .kernels import POW2, unpack
from .parallel import run

__all__ = ["dot_rows_cols", "exact_matmul", "exact_block", "CARRY_PERIOD", "NLIMBS"]

CACHE = True

#: Number of int64 limbs of radix ``2**32``; limb ``i`` weighs ``2**(32 i - 2148)``.
NLIMBS = 136
#: Added terms between carry normalisations (any value below ``2**30 - 1`` is safe).
CARRY_PERIOD = 1 << 20
_MAX_PERIOD = (1 << 30) - 2
_BIAS = 2148  # bit position of 2**0 in the accumulator
_M32 = 0xFFFFFFFF
_M26 = 0x3FFFFFF
_EXP = 0x7FF0000000000000
_ABS = 0x7FFFFFFFFFFFFFFF


@nb.njit(inline="always")
def _add_piece(acc, v, pos, sg):
    """``acc += sg * v * 2**pos`` for ``0 <= v < 2**55``, as three pieces below ``2**32``.

    With ``i = pos >> 5`` and ``o = pos & 31``: the low ``32 - o`` bits of ``v``
    go to limb ``i`` (shifted by ``o``: below ``2**32``), the rest
    ``w = v >> (32 - o) < 2**54`` splits into ``w mod 2**32`` (limb ``i + 1``)
    and ``w >> 32 < 2**22`` (limb ``i + 2``). Exact integer operations.
    """
    i = pos >> 5
    o = pos & 31
    c = 32 - o
    w = v >> c
    acc[i] += sg * ((v & ((1 << c) - 1)) << o)
    acc[i + 1] += sg * (w & _M32)
    acc[i + 2] += sg * (w >> 32)


@nb.njit(inline="always")
def _accumulate(acc, a, b):
    """Add the exact product of the finite, nonzero doubles with bits ``a`` and ``b``.

    ``mx my = hi 2**52 + lo`` exactly (module docstring); ``lo`` goes to bit
    ``s = ex + ey + 2148 >= 0`` and ``hi`` to ``s + 52``.
    """
    mx, ex = unpack(a)
    my, ey = unpack(b)
    sg = 1 - 2 * (((a ^ b) >> 63) & 1)
    xh = mx >> 26
    xl = mx & _M26
    yh = my >> 26
    yl = my & _M26
    mid = xh * yl + xl * yh           # < 2**54
    lo = xl * yl + ((mid & _M26) << 26)  # < 2**53
    hi = xh * yh + (mid >> 26)        # < 2**55
    s = ex + ey + _BIAS
    _add_piece(acc, lo, s, sg)
    _add_piece(acc, hi, s + 52, sg)


@nb.njit(inline="always")
def _carry(acc):
    """Propagate carries: limbs ``0 .. NLIMBS-2`` into ``[0, 2**32)``, the value unchanged.

    ``c = limb >> 32`` is the floor of ``limb / 2**32`` (arithmetic shift), so
    ``limb & (2**32 - 1) == limb - c 2**32`` is in ``[0, 2**32)``; ``c`` moves up.
    """
    n = acc.shape[0]
    for i in range(n - 1):
        c = acc[i] >> 32
        acc[i] = acc[i] & _M32
        acc[i + 1] += c


@nb.njit(inline="always")
def _window(acc, w):
    """``floor(M / 2**w)`` for the normalised magnitude ``M``, given that it is below ``2**62``.

    The bits from position ``w`` lie in limbs ``a = w >> 5`` (shifted down by
    ``o = w & 31``), ``a + 1`` (up by ``32 - o``) and ``a + 2`` (up by
    ``64 - o``; nonzero only when ``o > 2``, as the result is below ``2**62``);
    limbs above contribute at ``2**(96 - o) > 2**62`` and are zero.
    """
    n = acc.shape[0]
    a = w >> 5
    o = w & 31
    t = acc[a] >> o
    if a + 1 < n:
        t += acc[a + 1] << (32 - o)
    if a + 2 < n and acc[a + 2] != 0:
        t += acc[a + 2] << (64 - o)
    return t


@nb.njit(inline="always")
def _sticky(acc, w):
    """Whether any bit of the normalised magnitude below position ``w`` is set."""
    a = w >> 5
    o = w & 31
    if (acc[a] & ((1 << o) - 1)) != 0:
        return True
    for i in range(a):
        if acc[i] != 0:
            return True
    return False


@nb.njit(inline="always")
def _round(acc):
    """The accumulated exact sum rounded once to the nearest double (ties to even).

    Destroys ``acc``. See the module docstring for the argument: sign from the
    top limb after normalisation, magnitude by negation, ``q = max(L - 53, 1074)``,
    round and sticky bits, exact scaling by powers of two, overflow on the
    rounded value.
    """
    n = acc.shape[0]
    _carry(acc)
    neg = acc[n - 1] < 0
    if neg:
        for i in range(n):
            acc[i] = -acc[i]
        _carry(acc)
    h = n - 1
    while h >= 0 and acc[h] == 0:
        h -= 1
    if h < 0:
        return 0.0  # exact zero: +0.0
    v = acc[h]
    nbits = 32 * h
    while v > 0:
        v >>= 1
        nbits += 1
    q = max(nbits - 53, 1074)
    t = _window(acc, q - 1)  # < 2**54
    r = t >> 1
    if (t & 1) != 0 and ((r & 1) != 0 or _sticky(acc, q - 1)):
        r += 1
    e = q - _BIAS  # >= -1074
    if r == (1 << 53):
        r = 1 << 52
        e += 1
    if e >= 972:  # r >= 2**52 here, so r 2**e >= 2**1024 (a float product would give inf too)
        val = np.inf
    elif e >= -1022:
        val = float(r) * POW2[e + 1022]  # exact: r < 2**53, normal power of two
    else:
        # e in [-1074, -1023]: r 2**(e+64) is exact (normal), and r 2**e is a
        # multiple of 2**-1074 with at most 53 bits, so the second step is exact
        val = (float(r) * POW2[e + 64 + 1022]) * POW2[-64 + 1022]
    return -val if neg else val


@nb.njit(nogil=True, cache=CACHE)
def _dot_range(t0, t1, X, Y, ii, jj, period, out):
    """Outputs ``t0:t1`` of :func:`dot_kernel`."""
    k = X.shape[1]
    for t in range(t0, t1):
        acc = np.zeros(NLIMBS, np.int64)
        x = X[ii[t]]
        y = Y[jj[t]]
        cnt = 0
        for l in range(k):
            a = x[l]
            b = y[l]
            # Inf/NaN is treated as 0 (the caller applies their semantics); zeros add nothing
            if (((a & _EXP) == _EXP) | ((b & _EXP) == _EXP)
                    | ((a & _ABS) == 0) | ((b & _ABS) == 0)):
                continue
            _accumulate(acc, a, b)
            cnt += 1
            if cnt == period:
                _carry(acc)
                cnt = 0
        out[t] = _round(acc)


def dot_kernel(X, Y, ii, jj, period, out):
    """``out[t] = fl(sum_l x_l y_l)`` for ``x = X[ii[t]]``, ``y = Y[jj[t]]`` (int64 bit views).

    ``X`` (p, k) and ``Y`` (q, k) are C-ordered int64 views of float64 data;
    indices must be in range (checked by the caller). Each output is produced
    by one task, terms in index order, with its own accumulator: the result
    does not depend on the thread count (nor, being exact, on the order).
    Terms with a non-finite or zero factor are skipped; carries are normalised
    every ``period`` added terms (``1 <= period < 2**30 - 1``, see the module
    docstring).
    """
    run(_dot_range, ii.shape[0], X, Y, ii, jj, period, out)


def dot_rows_cols(X, Y, ii, jj, *, period: int = CARRY_PERIOD) -> np.ndarray:
    """Exactly rounded dot products of rows of ``X`` with rows of ``Y``.

    Parameters
    ----------
    X : ndarray, shape (p, k)
        Real floating array (converted exactly to float64); any memory layout
        (a C-contiguous copy is made when needed).
    Y : ndarray, shape (q, k)
        Same, holding the *columns* of the right factor as rows, so that both
        operands are read contiguously.
    ii, jj : array_like of int, shape (t,)
        Row indices into ``X`` and ``Y``, ``0 <= ii < p``, ``0 <= jj < q``.
    period : int, optional
        Added terms between carry normalisations of the accumulator (a test
        hook; every ``1 <= period < 2**30 - 1`` is exact).

    Returns
    -------
    ndarray, shape (t,), float64
        ``out[t] = fl(sum_l X[ii[t], l] * Y[jj[t], l])``: the exact sum rounded
        once to nearest, ties to even, with gradual underflow and overflow to
        ``+-inf`` (see the module docstring). Exact zero gives ``+0.0``. Terms
        with a non-finite factor are treated as 0 (the caller handles them).
        Bitwise independent of the thread count.
    """
    Xb, Yb, ii, jj = dot_arguments(X, Y, ii, jj)
    period = int(period)
    if not 1 <= period <= _MAX_PERIOD:
        raise ValueError(f"period must be in [1, {_MAX_PERIOD}], got {period}")
    out = np.empty(ii.shape[0])
    dot_kernel(Xb, Yb, ii, jj, period, out)
    return out


def _pair(A, B) -> tuple[np.ndarray, np.ndarray]:
    """``A`` (m, k) and ``B`` (k, n) as arrays, their shapes checked."""
    A = np.asarray(A)
    B = np.asarray(B)
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"A and B must be 2-D, got shapes {A.shape} and {B.shape}")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"inner dimensions differ: {A.shape} @ {B.shape}")
    return A, B


def exact_matmul(A, B) -> np.ndarray:
    """The exactly rounded product ``A @ B``, entry by entry (tests and small blocks).

    Parameters
    ----------
    A : ndarray, shape (m, k)
    B : ndarray, shape (k, n)
        Real floating arrays, any layout.

    Returns
    -------
    ndarray, shape (m, n), float64
        Every entry is ``fl(sum_l a_il b_lj)`` as in :func:`dot_rows_cols`
        (non-finite factors treated as 0).
    """
    A, B = _pair(A, B)
    m, n = A.shape[0], B.shape[1]
    ii = np.repeat(np.arange(m, dtype=np.int64), n)
    jj = np.tile(np.arange(n, dtype=np.int64), m)
    return dot_rows_cols(A, B.T, ii, jj).reshape(m, n)


def exact_block(A, B, rows, cols, mask) -> np.ndarray:
    """Exactly rounded values of the masked entries of ``(A @ B)[rows][:, cols]``.

    Parameters
    ----------
    A : ndarray, shape (m, k)
    B : ndarray, shape (k, n)
        Real floating arrays, any layout.
    rows : array_like of int, shape (r,)
        Row indices of ``A``.
    cols : array_like of int, shape (c,)
        Column indices of ``B``.
    mask : array_like of bool, shape (r, c)
        The entries wanted: ``mask[a, b]`` selects ``(A @ B)[rows[a], cols[b]]``.

    Returns
    -------
    ndarray, shape (mask.sum(),), float64
        The exactly rounded entries (as :func:`dot_rows_cols`), in row-major
        order of the ``True`` entries of ``mask``, so that
        ``block[mask] = exact_block(A, B, rows, cols, mask)`` fills them.
        Only the rows and columns that hold a selected entry are copied.
    """
    A, B = _pair(A, B)
    rows = check_indices(rows, A.shape[0], "rows")
    cols = check_indices(cols, B.shape[1], "cols")
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be boolean, got {mask.dtype}")
    if mask.shape != (rows.shape[0], cols.shape[0]):
        raise ValueError(f"mask shape {mask.shape} != (len(rows), len(cols)) = "
                         f"({rows.shape[0]}, {cols.shape[0]})")
    ti, tj = np.nonzero(mask)  # row-major order
    ur, ri = np.unique(ti, return_inverse=True)
    uc, ci = np.unique(tj, return_inverse=True)
    return dot_rows_cols(A[rows[ur]], B[:, cols[uc]].T, ri.reshape(-1), ci.reshape(-1))
