"""References for the FFT campaign, independent of the ``fft`` package.

* :func:`long_double` - ``scipy.fft`` on the input widened to ``np.longdouble`` /
  ``np.clongdouble`` (pocketfft computes in long double: a 64-bit mantissa on
  x86-64, about ``2**-64`` per operation, a thousandth of ``u = 2**-53``).
* :func:`direct_dft` - the DFT summed directly in :mod:`mpmath` (113 bits), with the
  angle reduced exactly (``exp(-2 pi i (j k mod n) / n)``), for every output of a
  small transform or a few outputs of a large one.
* :func:`agreement` - how far the long-double reference is from the direct one:
  the campaign's cross-check, part of the report.

The DCT and DST (:data:`~validation.fft.cases.R2R`) take the same long-double
reference, ``scipy.fft.dct`` and the rest on ``np.longdouble`` input (pocketfft's
real-to-real transforms, computed in long double); their direct sums are in
:mod:`validation.fft.r2r` (:data:`~validation.fft.r2r.SMALL_CHECKS`: every type,
forward and inverse, every norm).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import scipy.fft as sfft

from .cases import HALF_INPUT, R2R, REAL_INPUT

PREC = 113  # mpmath's working precision for the direct DFT (bits)
MIN_MANTISSA = 63  # np.finfo(np.longdouble).nmant needed (x86-64 extended: 63)
AGREEMENT_LIMIT = 1e-18  # the long-double reference must be this close to mpmath's
SPOT_FRACTION = 0.01  # at a case's bins: within this fraction of the case's bound


def check_long_double() -> int:
    """The long double's mantissa bits; raises ``RuntimeError`` if too short."""
    nmant = np.finfo(np.longdouble).nmant
    if nmant < MIN_MANTISSA:
        raise RuntimeError(f"np.longdouble has {nmant} mantissa bits here; the FFT reference "
                           f"needs at least {MIN_MANTISSA} (x86-64 extended precision)")
    return nmant + 1


def call(mod, transform: str, x: np.ndarray, shape: tuple, **options):
    """``mod``'s transform of ``x`` (``mod``: ``scipy.fft`` or the ``fft`` package);
    ``options``: a DCT/DST's ``type`` and ``norm``."""
    if transform in R2R:
        return getattr(mod, transform)(x, type=options["type"], norm=options.get("norm"))
    if transform in HALF_INPUT:
        return getattr(mod, transform)(x, n=shape[0])
    if transform == "roundtrip":
        return mod.ifftn(mod.fftn(x)) if len(shape) > 1 else mod.ifft(mod.fft(x))
    return getattr(mod, transform)(x)


def long_double(transform: str, x: np.ndarray, shape: tuple, **options) -> np.ndarray:
    """The reference: scipy.fft in long double (``x`` itself for ``roundtrip``)."""
    if transform == "roundtrip":
        return x.astype(np.clongdouble)
    real = transform in REAL_INPUT or transform in R2R
    wide = x.astype(np.longdouble if real else np.clongdouble)
    return call(sfft, transform, wide, shape, **options)


# -- the direct DFT in mpmath --------------------------------------------------

def _hermitian(h: np.ndarray, n: int) -> list:
    """The length-``n`` spectrum whose first ``n // 2 + 1`` entries are ``h``
    (scipy's convention: the imaginary parts at 0 and at ``n / 2`` are ignored)."""
    z = [mpmath.mpc(complex(v)) for v in h[: n // 2 + 1]]
    z[0] = mpmath.mpc(z[0].real)
    if n % 2 == 0:
        z[n // 2] = mpmath.mpc(z[n // 2].real)
    return z + [mpmath.conj(z[k]) for k in range(n - len(z), 0, -1)]


def _roots(n: int, sign: int) -> list:
    """``exp(sign 2 pi i m / n)`` for ``m = 0 .. n-1`` (the argument is exact)."""
    return [mpmath.expjpi(mpmath.mpf(2 * sign * m) / n) for m in range(n)]


def _dft(z: list, bins, sign: int, roots=None) -> list:
    n = len(z)
    w = roots or _roots(n, sign)
    return [mpmath.fdot(z, [w[(j * k) % n] for j in range(n)]) for k in bins]


def direct_dft(transform: str, x: np.ndarray, shape: tuple, bins=None) -> list:
    """Outputs of the transform summed directly in mpmath (``mpc`` or ``mpf``).

    ``bins``: the output indices along a 1-D transform's axis (default: all);
    n-D transforms (``fft2``, ``fftn``) give every output, in C order.
    """
    with mpmath.workprec(PREC):
        if transform in ("fft2", "fftn"):
            return _nd(x)
        n = shape[0]
        if transform in HALF_INPUT:
            h = np.conj(x) if transform == "hfft" else x
            z, sign, scale = _hermitian(h, n), 1, (1 if transform == "hfft" else n)
        else:
            z = [mpmath.mpc(complex(v)) for v in x]
            sign, scale = (1, n) if transform in ("ifft", "ihfft") else (-1, 1)
        if bins is None:
            bins = range(n // 2 + 1 if transform in REAL_INPUT else n)
        out = [v / scale for v in _dft(z, bins, sign)]
        return [v.real for v in out] if transform in HALF_INPUT else out


def _nd(x: np.ndarray) -> list:
    a = np.empty(x.shape, dtype=object)
    a.flat[:] = [mpmath.mpc(complex(v)) for v in x.flat]
    for axis in range(a.ndim):
        moved = np.moveaxis(a, axis, -1)
        roots = _roots(moved.shape[-1], -1)
        for idx in np.ndindex(moved.shape[:-1]):
            moved[idx] = _dft(list(moved[idx]), range(moved.shape[-1]), -1, roots)
    return list(a.flat)


def agreement(ref: np.ndarray, exact: list, bins=None) -> dict:
    """Distance of the long-double ``ref`` from the direct DFT ``exact``.

    ``rel_l2``: ``||ref - exact||_2 / ||exact||_2`` over the outputs compared;
    ``rel_rms``: ``max |ref_k - exact_k|`` over the root mean square of all of
    ``ref`` (for a few bins of a large transform: the scale the campaign's
    normwise metrics use).
    """
    flat = ref.reshape(-1)
    sel = flat if bins is None else flat[list(bins)]
    with mpmath.workprec(PREC):
        diff = [abs(_mp(r) - e) for r, e in zip(sel, exact)]
        num = math.sqrt(float(mpmath.fsum(d * d for d in diff)))
        den = math.sqrt(float(mpmath.fsum(abs(e) ** 2 for e in exact)))
        worst = float(max(diff, default=0))
    rms = float(np.sqrt(np.mean(np.abs(flat.astype(np.clongdouble)) ** 2)))
    return {"rel_l2": num / den if den else (0.0 if num == 0 else math.inf),
            "rel_rms": worst / rms if rms else (0.0 if worst == 0 else math.inf),
            "outputs": len(exact)}


def _mp(v):
    """A long double (complex) as an exact mpmath number."""
    if np.iscomplexobj(v):
        return mpmath.mpc(_mp(v.real), _mp(v.imag))
    m, e = np.frexp(np.longdouble(v))
    return mpmath.ldexp(mpmath.mpf(int(np.ldexp(m, 64))), int(e) - 64)


#: The cross-check of the reference: (transform, shape), every output, normal input.
SMALL_CHECKS = [("fft", (7,)), ("fft", (16,)), ("fft", (60,)), ("fft", (64,)),
                ("ifft", (64,)), ("rfft", (64,)), ("rfft", (61,)), ("irfft", (64,)),
                ("irfft", (63,)), ("hfft", (64,)), ("ihfft", (61,)), ("fft2", (8, 12)),
                ("fftn", (4, 6, 5))]
SPOT_LIMIT = 70000  # 1-D cases up to this length get a few bins checked directly


def spot_bins(n: int, transform: str) -> list[int]:
    """A few output indices of a large transform (first, 1, a third, the last)."""
    top = n // 2 if transform in REAL_INPUT else n - 1
    return sorted({0, 1, top // 3, top})
