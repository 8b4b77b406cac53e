"""IEEE-754 primitives of the reference backend: bit fields, rounding to an integer,
exact power-of-two scaling, and the symmetric residues of integer-valued floats.

Every function is vectorised over numpy arrays and performs, per entry, the IEEE
operations its docstring lists, in that order: numpy evaluates each ufunc on its
own (one rounding per operation, no fused multiply-add, no reassociation, no
extended precision), so an expression written here rounds exactly as the same
expression in any IEEE double arithmetic. Branches are selects between values that
are both computed (``np.where``); floating-point exceptions are silenced, as IEEE
arithmetic does not trap.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ABS", "EXP", "MANT", "HIDDEN", "MAGIC", "rint", "ldexp", "pow2",
           "mantissa_exponent", "smod", "smod_short", "smod_product"]

#: Masks of an int64 view of a double: magnitude bits, exponent field, mantissa field.
ABS = 0x7FFFFFFFFFFFFFFF
EXP = 0x7FF0000000000000
MANT = 0xFFFFFFFFFFFFF
#: The hidden bit of a normal double's significand.
HIDDEN = 1 << 52
#: ``1.5 * 2**52``: ``(x + MAGIC) - MAGIC`` rounds ``x`` to an integer (ties to even).
MAGIC = 6755399441055744.0
_TWO26 = 67108864.0
_TWO_M26 = 1.0 / 67108864.0


def rint(x):
    """``(x + 1.5 2**52) - 1.5 2**52``: ``x`` rounded to the nearest integer, ties to even.

    Exact for ``|x| <= 2**51``: the sum lies in ``[2**52, 2**53)``, where the spacing
    of doubles is 1, so the addition rounds ``x`` to an integer and the subtraction
    is exact (Sterbenz). A zero result is ``+0.0`` (``MAGIC - MAGIC``), unlike
    ``np.rint`` of a small negative value.
    """
    return (x + MAGIC) - MAGIC


def pow2(e) -> np.ndarray:
    """``2.0**e`` for integer ``e`` (exact for every ``e >= -1074``; 0 below, inf above 1023)."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(1.0, np.asarray(e, np.int64))


def ldexp(y, e):
    """``y * 2**e`` by one or two multiplications by normal powers of two.

    For ``-1022 <= e <= 1023``: ``y 2**e`` (one rounding, at most); for ``e > 1023``:
    ``(y 2**1023) 2**1023``; for ``-2044 <= e < -1022``: ``(y 2**-1022) 2**(e + 1022)``;
    below: ``(y 2**-1022) 2**-1022``. The single-step case multiplies by ``2**0``
    afterwards, which changes no bit (not even of a NaN or a signed zero). For the
    integer-valued ``|y| < 2**960`` of the CRT, the first step of the two-step cases is
    exact (``|y| >= 1``), so the result is rounded once.
    """
    e = np.asarray(e, np.int64)
    normal = (e >= -1022) & (e <= 1023)
    first = np.where(normal, e, np.where(e > 1023, 1023, -1022))
    second = np.where(normal, 0, np.where(e > 1023, 1023,
                                          np.where(e >= -2044, e + 1022, -1022)))
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return (y * pow2(first)) * pow2(second)


def mantissa_exponent(bits):
    """``(mant, ex)`` of the doubles with int64 bits ``bits``: ``|x| = mant 2**(ex - 1075)``.

    ``ex`` is the biased exponent field, raised to 1 for subnormals (and zeros), and
    ``mant`` the significand with the hidden bit set for normal ``x``: exact integer
    operations. Meaningless for Inf and NaN (``ex = 2047``): callers mask them.
    """
    a = bits & ABS
    ex = a >> 52
    mant = (a & MANT) | np.where(ex > 0, HIDDEN, 0)
    return mant, np.maximum(ex, 1)


def _correct(r, p):
    """``r`` (within ``p`` of the range) brought into ``[hi - p + 1, hi]``,
    ``hi = floor((p - 1) / 2)``, by one subtraction or addition of ``p``."""
    hi = np.floor((p - 1.0) * 0.5)
    return np.where(r > hi, r - p, np.where(r < hi - p + 1.0, r + p, r))


def smod_short(y, p: float, pinv: float):
    """Symmetric residue of the integer-valued ``y``, ``|y| <= 2**52``: ``y - p rint(y / p)``.

    ``rint(fl(y pinv))`` is off by at most one from the nearest quotient; ``|q p| <= 2**53``
    is exact, so is the difference (an integer below ``2**53``), and one correction by
    ``p`` brings it into ``[-floor(p/2), ceil(p/2) - 1]``.
    """
    y = np.asarray(y, np.float64)  # (a float32 array would make numpy round in float32)
    with np.errstate(invalid="ignore", over="ignore"):
        return _correct(y - p * rint(y * pinv), p)


def smod(y, p: float, pinv: float, c26: float):
    """Symmetric residue of the integer-valued ``y``, ``|y| <= 2**53`` (``c26 = 2**26 mod p``).

    ``y = yh 2**26 + yl`` exactly (``yh = rint(y 2**-26)``, ``|yh| <= 2**27``,
    ``|yl| <= 2**25``); ``t = yh - p rint(yh / p)`` and ``z = t c26 + yl`` are exact
    integers below ``2**45`` (``p < 2**22``); ``z`` is reduced as in :func:`smod_short`.
    """
    y = np.asarray(y, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        yh = rint(y * _TWO_M26)
        yl = y - yh * _TWO26
        t = yh - p * rint(yh * pinv)
        z = t * c26 + yl
        return _correct(z - p * rint(z * pinv), p)


def smod_product(y, p: float, pinv: float, c26: float, short: bool):
    """:func:`smod` of an exact product ``|y| <= 2**53``, or, with ``short`` (the
    caller's bound ``|y| <= 2**52``), :func:`smod_short`: the same residue.

    ``y`` is converted to float64 first (exact: float32 products are integers
    below ``2**24``), so both run in double precision.
    """
    return smod_short(y, p, pinv) if short else smod(y, p, pinv, c26)
