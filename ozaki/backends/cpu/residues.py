"""Step 2, the residues: ``smod(trunc(x 2**shift), p)`` of an operand, exactly.

Two compiled passes (numba, the rules of :mod:`ozaki.backends.cpu.kernels`: exact, one
thread per output entry, no fastmath) produce the same values:

* :func:`split_residues`, the fast one, for scaled magnitudes below ``2**88``
  (every default count: the shifts bring the operands to about ``2**65`` at
  most). It stays in FP64 arithmetic: the scaled value is formed by two exact
  power-of-two multiplications, truncated, and split into four 22-bit digits,
  ``y = y3 2**66 + y2 2**44 + y1 2**22 + y0``; the residue of each modulus is
  ``smod(y3 c66 + y2 c44 + y1 c22 + y0)`` with constants ``c_e = 2**e mod p``
  (three digits, without ``y3``, where every magnitude is below ``2**66``).
  No table lookups and no integer conversions, so the loops vectorise, and one
  pass reads the operand once for a whole group of moduli.
* :func:`gather_residues`, the general one (any scaled magnitude, one modulus),
  works on the bit patterns with tables of ``2**e mod p``.

:func:`ozaki.core.scaling.fits_split` says, from the line exponents and the shifts, which one a
call may use. Non-finite entries give residue 0 in both (their semantics are
applied separately, :mod:`ozaki.core.special`).
"""

from __future__ import annotations

import functools

import numba as nb
import numpy as np

from .kernels import CACHE, HIDDEN_BIT, MANTISSA_MASK, CHUNK_TASKS, round_int, row_tiles, smod_short
from .parallel import run

__all__ = ["split_residues", "gather_residues", "split_factors",
           "split_constants"]

_FINITE = 1.8e308  # above every finite double: ``abs(y) < _FINITE`` is False for Inf and NaN
_D22 = 2.0 ** 22
_D44 = 2.0 ** 44
_D66 = 2.0 ** 66
#: Entries per task: a tile of the operand, its factors and digits stays in L1 through the moduli.
TILE = 512


def split_factors(shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(2**ceil(s/2), 2**floor(s/2))`` per shift ``s``: two factors whose product is ``2**s``.

    Multiplying by both in turn is exact wherever the truncation is not zero:
    for ``s >= 0`` both steps only grow a value that ends below ``2**88``; for
    ``s < 0`` a result ``|y| >= 1`` has a normal (so exact) intermediate, and a
    result below 1 truncates to 0 whatever the rounding of its steps. A factor
    may underflow to 0 (then the truncation is 0 anyway) or, for an all-zero
    line, overflow; ``0 * inf`` is NaN, which the pass maps to 0.
    """
    s = np.asarray(shift, np.int64)
    hi = -((-s) // 2)
    with np.errstate(over="ignore"):
        return np.ldexp(1.0, hi), np.ldexp(1.0, s - hi)


@functools.lru_cache(maxsize=256)
def split_constants(moduli: tuple[int, ...]) -> np.ndarray:
    """Per modulus ``(p, 2**22, 2**44, 2**66 mod p)``, symmetric residues, as floats (L, 4).

    Moduli must lie below ``2**22`` (every scheme's do), so that the constants
    are below ``2**21`` in magnitude. Cached per tuple and read-only.
    """
    if max(moduli) >= 2 ** 22:
        raise ValueError(f"split residues need moduli below 2**22, got {max(moduli)}")
    def sym(v, p):
        r = v % p
        return r - p if r > (p - 1) // 2 else r
    out = np.array([(p, sym(2 ** 22, p), sym(2 ** 44, p), sym(2 ** 66, p)) for p in moduli],
                   np.float64)
    out.flags.writeable = False
    return out


@nb.njit(inline="always")
def _digit_residue(y3, y2, y1, y0, p, pinv, c22, c44, c66, hi, lo):
    """``smod(y3 c66 + y2 c44 + y1 c22 + y0, p)`` for digits below ``2**22``, ``p < 2**22``.

    Each product is below ``2**22 * 2**21`` and the sum below ``2**45``: exact
    integers, so the one-step reduction of :func:`ozaki.backends.cpu.kernels.smod_short`
    applies; ``+ 0.0`` turns a ``-0.0`` into ``0.0``. Written with selects (no
    branches), so it vectorises.
    """
    return _reduced(((y3 * c66 + y2 * c44) + y1 * c22) + y0, p, pinv, hi, lo)


@nb.njit(inline="always")
def _reduced(z, p, pinv, hi, lo):
    """``smod(z, p)`` for an integer ``|z| < 2**45`` (see :func:`_digit_residue`)."""
    r = z - p * round_int(z * pinv)
    r = r - p if r > hi else r
    r = r + p if r < lo else r
    return r + 0.0


@nb.njit(inline="always")
def _split_chunk(c, X, j0, r1, r2, c1, c2, consts, out, nd):
    """Chunk ``c`` of :func:`split_residues`: its tasks, each a tile of ``per`` rows, all moduli.

    Each entry's ``nd`` digits (3 or 4) are formed once (into the chunk's
    scratch, in L1) and then reduced by every modulus.
    """
    L, b, m, w = out.shape
    bx = X.shape[0]
    tile, tiles, per, _ = row_tiles(b * m, w, TILE)
    digits = np.empty((4, tile))
    d3, d2, d1, d0 = digits[0], digits[1], digits[2], digits[3]
    for task in range(c * CHUNK_TASKS, (c + 1) * CHUNK_TASKS):
        if task // tiles * per >= b * m:
            break
        r0 = (task // tiles) * per
        t0 = (task % tiles) * tile
        t1 = min(w, t0 + tile)
        n = t1 - t0
        for gi in range(r0, min(b * m, r0 + per)):
            g = gi // m
            i = gi - g * m
            a1 = r1[g, i]
            a2 = r2[g, i]
            # views of the tile: indices from range() are non-negative, so no
            # wraparound checks stand in the way of vectorising the inner loop
            x = X[min(g, bx - 1), i, j0 + t0:j0 + t1]
            f1 = c1[g, t0:t1]
            f2 = c2[g, t0:t1]
            for j in range(n):
                y = ((x[j] * a1) * a2) * f1[j] * f2[j]
                y = np.trunc(y) if abs(y) < _FINITE else 0.0
                if nd == 4:  # (the branch is the same for the whole loop)
                    y3 = np.trunc(y * (1.0 / _D66))
                    y = y - y3 * _D66
                    d3[j] = y3
                y2 = np.trunc(y * (1.0 / _D44))
                y = y - y2 * _D44
                y1 = np.trunc(y * (1.0 / _D22))
                d2[j], d1[j], d0[j] = y2, y1, y - y1 * _D22
            for q in range(L):
                p = consts[q, 0]
                pinv = 1.0 / p
                c22 = consts[q, 1]
                c44 = consts[q, 2]
                c66 = consts[q, 3]
                hi = np.floor((p - 1.0) * 0.5)
                lo = hi - p + 1.0
                o = out[q, g, i, t0:t1]
                if nd == 4:
                    for j in range(n):
                        o[j] = _digit_residue(d3[j], d2[j], d1[j], d0[j], p, pinv, c22, c44,
                                              c66, hi, lo)
                else:  # y3 = 0: the same exact sum without its term
                    for j in range(n):
                        o[j] = _reduced((d2[j] * c44 + d1[j] * c22) + d0[j], p, pinv, hi, lo)


@nb.njit(nogil=True, cache=CACHE)
def _split_chunks(t0, t1, X, j0, r1, r2, c1, c2, consts, out, nd):
    """Chunks ``t0:t1`` of :func:`split_residues` (:func:`_split_chunk`)."""
    for c in range(t0, t1):
        _split_chunk(c, X, j0, r1, r2, c1, c2, consts, out, nd)


def split_residues(X, j0, r1, r2, c1, c2, consts, out, nd):
    """``out[q, g, i, j] = smod(trunc(x_gi(j0+j) 2**(s_gi + t_gj)), p_q)`` for ``|.| < 2**88``.

    ``X`` (bx, r, c) float64 with ``bx`` 1 (shared) or ``b``; the row factors
    ``r1, r2`` (b, r) and column factors ``c1, c2`` (b, c) are those of
    :func:`split_factors` (ones on the side without shifts), so the scaled
    value is ``((x r1) r2) c1 c2``, exact (see there). ``j0`` offsets the
    columns of ``X`` read (a block of ``w`` columns, ``out``'s width; the column
    factors are the block's, shape (b, w)); ``consts`` (L, 4) from
    :func:`split_constants`. The digits: ``y3 = trunc(y 2**-66)`` is an integer
    below ``2**22``; ``y - y3 2**66`` has the sign of ``y``, is at most ``|y|``
    in magnitude and a multiple of ``ulp(y)`` (both terms are), so it is a
    double and the subtraction exact; likewise the lower splits. ``nd``
    (:func:`fits_split`) is 3 when every ``|y| < 2**66``: then ``y3 = 0`` and
    the pass skips it. Non-finite products map to 0 by one select.
    """
    chunks = row_tiles(out.shape[1] * out.shape[2], out.shape[3], TILE)[3]
    run(_split_chunks, chunks, X, j0, r1, r2, c1, c2, consts, out, nd)


@nb.njit(nogil=True, cache=CACHE)
def _gather_rows(t0, t1, X, j0, srow, scol, p, pinv, pow2mod, out):
    """Rows ``t0:t1`` (flattened over the stack) of :func:`gather_residues`."""
    m, w = out.shape[1], out.shape[2]
    bx = X.shape[0]
    hi = np.floor((p - 1.0) * 0.5)
    for gi in range(t0, t1):
        g = gi // m
        i = gi - g * m
        gx = min(g, bx - 1)
        si = srow[g, i]
        for j in range(w):
            x = X[gx, i, j0 + j]
            ex = (x >> 52) & 0x7FF
            mant = x & MANTISSA_MASK
            if ex > 0:
                mant |= HIDDEN_BIT
            if ex == 0x7FF:  # Inf/NaN: a zero that keeps E inside the tables
                mant = 0
                ex = 1
            E = max(ex, 1) - 1075 + si + scol[g, j]
            mt = mant >> min(max(-E, 0), 63)
            Ep = max(E, 0)
            y = float(mt >> 26) * pow2mod[Ep + 26] + float(mt & 0x3FFFFFF) * pow2mod[Ep]
            r = smod_short(y, p, pinv)
            if x < 0:
                r = -r
                if r > hi:
                    r -= p
            out[g, i, j] = r


def gather_residues(X, j0, srow, scol, p, pinv, pow2mod, out):
    """``out[g, i, j] = smod(trunc(x_gi(j0+j) * 2**(srow[g, i] + scol[g, j])), p)``, exactly.

    ``X`` (bx, r, c) are bit patterns; ``bx`` is 1 (one operand shared by the
    ``b`` slices of ``out``, each slice with its own shifts) or ``b``. The
    scaled value is ``mant * 2**E``. Its truncation is ``m * 2**E'`` with
    ``m = mant >> max(-E, 0)`` (exact integer shift) and ``E' = max(E, 0)``.
    Splitting ``m = mh 2**26 + ml`` (``mh < 2**27``, ``ml < 2**26``),
    ``m 2**E' == mh (2**(E'+26) mod p) + ml (2**E' mod p)  (mod p)``, a sum below
    ``2**49.1`` for ``p < 2**21.6``: one short reduction. ``pow2mod[e] == 2**e
    mod p`` must cover ``E' + 26``.
    """
    run(_gather_rows, out.shape[0] * out.shape[1], X, j0, srow, scol, p, pinv, pow2mod,
        out)
