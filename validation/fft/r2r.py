"""The DCT and DST of the FFT campaign: scipy's definitions summed directly, and the
lengths, reductions and bound of each case.

The reference of a real-to-real case is, as for the FFTs, ``scipy.fft`` on the input
widened to ``np.longdouble`` (:func:`validation.fft.reference.long_double`): pocketfft
computes ``dct``/``dst`` of long double input in long double, its twiddles included,
about ``2**-64`` per operation. That it is right is not assumed but checked against
:func:`direct`, which sums scipy's defining formulas in :mod:`mpmath` (113 bits):

* every output of every type, forward and inverse, every ``norm``, at an odd and an
  even length, and of three small 3-D transforms (:data:`SMALL_CHECKS`);
* a few outputs of every 1-D case up to ``N = 70000`` (the campaign's spot check).

:func:`direct` shares no code with pocketfft nor with :mod:`fft`: each output is the
defining sum ``y[k] = f sum_n w_n x[n] trig(pi p(k, n) / q)`` with the integer
``p(k, n)`` reduced modulo ``2q`` before any rounding (a table of ``cospi``/``sinpi`` of
exact rationals over a quarter period, the rest by exact symmetries), the weights
``w_n`` and factors ``f`` of scipy's documented normalisations, and mpmath's ``fdot``.
Its own correctness rests on identities checked in ``tests/test_validation_fft.py``:
the ``"ortho"`` matrices are orthogonal, each inverse undoes its forward transform for
every norm, DCT-II and DCT-III are transposes, and DST-II is DCT-II of ``(-1)**n x[n]``
reversed.

A case's bound is the FFT campaign's ``2 u sqrt(log2 M)`` with ``M`` the product over
the axes of the length of the transform's symmetric extension (``2(N-1)`` for DCT-I,
``2(N+1)`` for DST-I, ``4N`` for types II and III, ``8N`` for type IV: the FFT a
transform of that type amounts to), doubled where an FFT the ``fft`` package takes for
it (:func:`fft_lengths`) has a prime factor above :data:`fft.DENSE_LIMIT` (Bluestein).
A line on the direct path (one product with the transform's matrix, no FFT) keeps the
same bound; its outputs are nearest doubles of the exact transform, far within it.
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np

import fft
from fft.reduced import reduction

PREC = 113  # bits, as the direct DFT of validation.fft.reference
KINDS = ("dct", "dst")
TRANSFORMS = ("dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn")
TYPES = (1, 2, 3, 4)
NORMS = ("backward", "ortho", "forward")
#: The type an inverse computes (scipy: ``idct(x, t)`` is ``dct`` of this type, the
#: normalisation's direction swapped).
INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def kind(transform: str) -> str:
    """``"dct"`` or ``"dst"``."""
    return transform.lstrip("i")[:3]


def inverse(transform: str) -> bool:
    return transform.startswith("i")


def line_type(transform: str, t: int) -> int:
    """The type each line of ``transform`` of type ``t`` computes (inverses mapped)."""
    return INVERSE_TYPE[t] if inverse(transform) else t


def normal_length(k: str, t: int, N: int) -> int:
    """scipy's normalisation length ``L``: ``2(N-1)`` (DCT-I), ``2(N+1)`` (DST-I), ``2N``."""
    if t == 1:
        return 2 * (N - 1) if k == "dct" else 2 * (N + 1)
    return 2 * N


def extension_length(k: str, t: int, N: int) -> int:
    """``M``: the length of the symmetric extension whose DFT holds the transform."""
    return {1: normal_length(k, 1, N), 2: 4 * N, 3: 4 * N, 4: 8 * N}[t]


def reductions(transform: str, t: int, shape) -> list[str]:
    """``fft.reduced.reduction`` of each axis' lines: ``"direct"``, ``"mirror"``,
    ``"makhoul"``, ``"half"``."""
    return [reduction(line_type(transform, t), int(n)) for n in shape]


def fft_lengths(transform: str, t: int, shape) -> list[int]:
    """The length of the FFT the ``fft`` package takes along each axis: the extension's
    ``M`` when mirrored, ``N`` (Makhoul, odd), ``N/2`` (half), and 1 when direct.

    A direct axis takes no FFT (one product with the matrix, :mod:`fft.direct`): 1, the
    trivial transform, has no prime factor, so it never makes a case Bluestein
    (:func:`bluestein`, the report's ``*``, the doubled bound), and the list keeps one
    entry per axis (0 would not do: :func:`fft.factorize` refuses it).
    """
    k, tt = kind(transform), line_type(transform, t)
    return [1 if how == "direct" else extension_length(k, tt, int(n)) if how == "mirror"
            else int(n) if how == "makhoul" else int(n) // 2
            for how, n in zip(reductions(transform, t, shape), shape)]


def bluestein(transform: str, t: int, shape) -> bool:
    """Whether an FFT the transform takes has a prime factor above ``fft.DENSE_LIMIT``."""
    return any(r > fft.DENSE_LIMIT for n in fft_lengths(transform, t, shape)
               for r in fft.factorize(n))


def bound(transform: str, t: int, shape, u: float = 2.0 ** -53) -> float:
    """``2 u sqrt(log2 M)``, ``M`` the extensions' lengths' product; doubled for Bluestein."""
    k, tt = kind(transform), line_type(transform, t)
    M = math.prod(extension_length(k, tt, int(n)) for n in shape)
    return (2 if bluestein(transform, t, shape) else 1) * 2 * u * math.sqrt(math.log2(M))


# -- scipy's definitions, summed in mpmath --------------------------------------------------

@functools.lru_cache(maxsize=16)
def _quarter(trig: str, q: int) -> tuple:
    """``cospi(m / q)`` (``trig = "cos"``) or ``sinpi(m / q)`` for ``m = 0 .. q // 2``."""
    f = mpmath.cospi if trig == "cos" else mpmath.sinpi
    with mpmath.workprec(PREC):
        return tuple(f(mpmath.mpf(m) / q) for m in range(q // 2 + 1))


def trig_pi(trig: str, p: int, q: int):
    """``cos(pi p / q)`` or ``sin(pi p / q)`` for integers ``p``, ``q > 0``: ``p`` reduced
    exactly to a quarter period, then a correctly computed table entry."""
    tab = _quarter(trig, q)
    m = p % (2 * q)
    if trig == "cos":
        if m > q:
            m = 2 * q - m  # cos(2 pi - a) = cos a
        return tab[m] if 2 * m <= q else -tab[q - m]  # cos(pi - a) = -cos a
    sign = 1
    if m >= q:
        m, sign = m - q, -1  # sin(a + pi) = -sin a
    if 2 * m > q:
        m = q - m  # sin(pi - a) = sin a
    return tab[m] if sign > 0 else -tab[m]


def _term(k: str, t: int, N: int):
    """``(trig, p(j, n), q, w(n))`` of the unnormalised forward transform ``y[j] = sum_n
    w(n) x[n] trig(pi p(j, n) / q)`` (scipy's definitions)."""
    two = (lambda n: 2)
    if k == "dct":
        if t == 1:
            return "cos", (lambda j, n: j * n), N - 1, (lambda n: 1 if n in (0, N - 1) else 2)
        if t == 2:
            return "cos", (lambda j, n: j * (2 * n + 1)), 2 * N, two
        if t == 3:
            return "cos", (lambda j, n: (2 * j + 1) * n), 2 * N, (lambda n: 1 if n == 0 else 2)
        return "cos", (lambda j, n: (2 * j + 1) * (2 * n + 1)), 4 * N, two
    if t == 1:
        return "sin", (lambda j, n: (j + 1) * (n + 1)), N + 1, two
    if t == 2:
        return "sin", (lambda j, n: (j + 1) * (2 * n + 1)), 2 * N, two
    if t == 3:
        return "sin", (lambda j, n: (2 * j + 1) * (n + 1)), 2 * N, (lambda n: 1 if n == N - 1
                                                                  else 2)
    return "sin", (lambda j, n: (2 * j + 1) * (2 * n + 1)), 4 * N, two


#: scipy's ``orthogonalize``: the inputs multiplied by sqrt 2 and the outputs divided by it
ORTHO_IN = {("dct", 1): (0, -1), ("dct", 3): (0,), ("dst", 3): (-1,)}
ORTHO_OUT = {("dct", 1): (0, -1), ("dct", 2): (0,), ("dst", 2): (-1,)}


def _scale(norm: str, inv: bool, L: int):
    """The factor of every output: ``1``, ``1/L`` or ``1/sqrt(L)`` (scipy's norms; an
    inverse divides by ``L`` under ``"backward"``)."""
    how = {"backward": inv, "forward": not inv}.get(norm)
    if how is None:
        return 1 / mpmath.sqrt(L)
    return mpmath.mpf(1) / L if how else mpmath.mpf(1)


def direct_line(transform: str, t: int, norm: str | None, x, bins=None) -> list:
    """Outputs ``bins`` (default: all) of the 1-D ``transform`` of type ``t`` of ``x``
    (floats or mpmath numbers), summed in mpmath at :data:`PREC` bits."""
    norm = norm or "backward"
    N, k, tt, inv = len(x), kind(transform), line_type(transform, t), inverse(transform)
    if k == "dct" and tt == 1 and N < 2:
        raise ValueError("a DCT of type 1 needs two points")
    trig, p, q, w = _term(k, tt, N)
    with mpmath.workprec(PREC):
        xs = [mpmath.mpf(v) if isinstance(v, mpmath.mpf) else mpmath.mpf(float(v)) for v in x]
        root2 = mpmath.sqrt(2)
        ortho = norm == "ortho"
        if ortho:
            for i in ORTHO_IN.get((k, tt), ()):
                xs[i % N] = xs[i % N] * root2
        wx = [w(n) * xs[n] for n in range(N)]
        f = _scale(norm, inv, normal_length(k, tt, N))
        ends = {i % N for i in ORTHO_OUT.get((k, tt), ())} if ortho else set()
        out = []
        for j in (range(N) if bins is None else bins):
            y = mpmath.fdot(wx, [trig_pi(trig, p(j, n), q) for n in range(N)]) * f
            out.append(y / root2 if j in ends else y)
        return out


def direct(transform: str, t: int, norm: str | None, x: np.ndarray, bins=None) -> list:
    """The transform of ``x`` summed directly in mpmath: ``bins`` of a 1-D one (default
    all), every output (C order) of an n-D one (the 1-D sums along each axis)."""
    if x.ndim == 1 and not transform.endswith("n"):
        return direct_line(transform, t, norm, x, bins)
    line = transform[:-1] if transform.endswith("n") else transform
    a = np.empty(x.shape, dtype=object)
    with mpmath.workprec(PREC):
        a.flat[:] = [mpmath.mpf(float(v)) for v in x.flat]
    for axis in range(a.ndim):
        moved = np.moveaxis(a, axis, -1)
        for idx in np.ndindex(moved.shape[:-1]):
            moved[idx] = direct_line(line, t, norm, list(moved[idx]))
    return list(a.flat)


def spot_bins(N: int) -> list[int]:
    """A few outputs of a large transform: first, 1, a third, the last."""
    return sorted({0, 1, (N - 1) // 3, N - 1} & set(range(N)))


#: The cross-check of the reference (``transform``, type, shape), every ``norm``, every
#: output: every 1-D transform and type at an even and an odd length, two 3-D transforms.
SMALL_CHECKS = ([(tr, t, (n,)) for tr in ("dct", "idct", "dst", "idst") for t in TYPES
                 for n in (16, 17)]
                + [("dctn", 2, (4, 5, 6)), ("idstn", 3, (3, 5, 4)), ("dstn", 4, (4, 3, 5))])
