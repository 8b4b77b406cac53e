"""The rules of the compiled passes (numba), and the primitives they share.

The passes live with their step (:mod:`ozaki.backends.cpu.lines`, :mod:`ozaki.backends.cpu.residues`,
:mod:`ozaki.backends.cpu.reconstruct`, :mod:`ozaki.backends.cpu.bounds`) and run their tasks on the
threads of :mod:`ozaki.backends.cpu.parallel`; here are the symmetric reductions and the
task layouts. Every kernel is exact or rounds once, documented per function:

* operands are read as their IEEE bit patterns (int64 views), so scaling by a
  power of two, truncation and residues are integer operations: no libm call,
  no ``frexp`` of a rounded value, and subnormal inputs are handled exactly;
* a pass is a loop over tasks (rows, chunks of columns, tiles), each range of
  tasks run by one thread (:func:`ozaki.backends.cpu.parallel.run`), and each output element
  is produced by one task in a fixed order: results do not depend on the thread
  count;
* no ``fastmath``: numba does not contract ``a*b + c`` into an FMA without it, so
  no kernel here fuses (:doc:`algorithm`, "FMA policy"; the one explicit, exact FMA
  is in :mod:`ozaki.core.compensated`);
* rounding to an integer uses the ``1.5 * 2**52`` constant, exact for
  ``|x| <= 2**51`` and identical on every IEEE machine.

The operand kernels work on C-ordered 2-D bit arrays ``X`` whose entries are
scaled by ``2**(srow[i] + scol[j])``: the row shifts of ``A`` are passed as
``srow`` (``scol`` zero) and the column shifts of ``B`` as ``scol``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

CACHE = True

_MAGIC = 6755399441055744.0  # 1.5 * 2**52
_TWO26 = 67108864.0
_TWO_M26 = 1.0 / 67108864.0
MANTISSA_MASK = 0xFFFFFFFFFFFFF
HIDDEN_BIT = 1 << 52

#: ``POW2[e + 1022] == 2.0**e`` for every normal exponent ``e`` in [-1022, 1023].
POW2 = np.array([2.0 ** e for e in range(-1022, 1024)])


@nb.njit(inline="always")
def round_int(x):
    """Round to nearest (ties to even); exact for ``|x| <= 2**51``."""
    return (x + _MAGIC) - _MAGIC


@nb.njit(inline="always")
def smod(y, p, pinv, c26):
    """Symmetric residue of the integer-valued float ``y`` (``|y| <= 2**53``).

    Returns ``r == y (mod p)`` with ``-floor(p/2) <= r <= ceil(p/2) - 1``.
    Exactness: ``y = yh 2**26 + yl`` exactly with ``|yh| <= 2**27``,
    ``|yl| <= 2**25``; each quotient times ``p`` stays below ``2**45``
    (``p < 2**22``), so every product and difference is an exact integer, and
    the rounded quotient is off by at most one, fixed by one correction.
    ``c26`` is ``2**26 mod p``.
    """
    yh = round_int(y * _TWO_M26)
    yl = y - yh * _TWO26
    t = yh - p * round_int(yh * pinv)
    return smod_short(t * c26 + yl, p, pinv)  # |t c26 + yl| < 2**45


@nb.njit(inline="always")
def line_exponent(maxbits):
    """``E`` of :func:`ozaki.core.scaling.exponents` for one line (0 on an all-zero line)."""
    ex = maxbits >> 52
    if maxbits == 0:
        return 0
    if ex > 0:
        return ex - 1022
    return math.frexp(float(maxbits))[1] - 1074  # mant < 2**52: exact in FP64


@nb.njit(inline="always")
def unpack(x):
    """Bits ``x`` of a finite double -> (mantissa, exponent): ``|v| = mant * 2**ex``."""
    ex = (x >> 52) & 0x7FF
    mant = x & MANTISSA_MASK
    if ex > 0:
        mant |= HIDDEN_BIT
        return mant, ex - 1075
    return mant, -1074


#: Tasks per chunk of the passes that run in row tiles (:func:`row_tiles`): a
#: chunk, on one thread, allocates its scratch once.
CHUNK_TASKS = 32


@nb.njit(inline="always")
def row_tiles(rows, w, size):
    """``(tile, tiles, per, chunks)``: tasks of about ``size`` entries over ``rows`` rows of ``w``.

    A task takes a tile of at most ``size`` columns of ``per = size // tile``
    consecutive rows (about ``size`` entries however narrow the rows); task
    ``task`` covers rows from ``(task // tiles) per`` and columns from
    ``(task % tiles) tile``. Tasks go in ``chunks`` of :data:`CHUNK_TASKS`.
    """
    tile = max(1, min(w, size))
    tiles = (w + tile - 1) // tile
    per = size // tile
    tasks = ((rows + per - 1) // per) * tiles
    return tile, tiles, per, (tasks + CHUNK_TASKS - 1) // CHUNK_TASKS


#: Columns per task of the passes that reduce along columns, at least (each
#: column's result is formed by one thread, in row order: thread-count independent).
COLUMN_CHUNK = 256


@nb.njit(inline="always")
def column_chunks(n):
    """``(width, count)`` of the column chunks of ``n`` columns: at least :data:`COLUMN_CHUNK`,
    wider (up to 16x) for long rows, whose narrow chunks read short runs of every row
    (1.5x slower at 2**20 columns). The results do not depend on the chunks."""
    width = min(16 * COLUMN_CHUNK, max(COLUMN_CHUNK, n // 64))
    return width, (n + width - 1) // width


@nb.njit(inline="always")
def column_chunk(task, nchunks, n, width):
    """Slice ``g`` and column range ``[j0, j1)`` of task ``task`` over ``nchunks`` chunks."""
    g = task // nchunks
    j0 = (task - g * nchunks) * width
    return g, j0, min(n, j0 + width)


@nb.njit(inline="always")
def smod_short(y, p, pinv):
    """Symmetric residue of the integer-valued float ``y`` with ``|y| <= 2**52``.

    ``q = rint(y / p)`` is off by at most one; ``|q p| < 2**53`` so ``y - q p``
    is exact, and one correction brings it into range.
    """
    r = y - p * round_int(y * pinv)
    hi = np.floor((p - 1.0) * 0.5)
    if r > hi:
        r -= p
    elif r < hi - p + 1.0:
        r += p
    return r


@nb.njit(inline="always")
def smod_product(y, p, pinv, c26, short):
    """:func:`smod` of an exact product ``|y| <= 2**53``, or with ``short`` (the
    caller's bound ``|y| <= 2**52``) the one-step :func:`smod_short`: the same residue."""
    if short:
        return smod_short(y, p, pinv)
    return smod(y, p, pinv, c26)
