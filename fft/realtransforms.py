"""Real-to-real transforms: DCT and DST of types I-IV (``scipy.fft``'s signatures).

Every multiplication of a transform runs through ozaki's emulated products; how a line
of type ``t`` and length ``N`` is computed depends on ``(t, N)`` alone (:func:`reduction`):

* **Direct** (``N <= 48`` for type I, ``16`` for types II and III, ``15`` for type IV,
  127 for odd type IV): one product with the normalised matrix in double-double.
* **Mirrored** (type I and odd type IV beyond those): the real-input DFT
  (:func:`fft.rfft`) of a **symmetric extension**, with no twiddle.
* **Reduced** (types II and III from ``N = 17``, type IV at even ``N >= 16``): one
  ``N/2``-point complex FFT (even ``N``) or one ``N``-point real FFT (odd ``N``, types II
  and III) between twiddle passes computed with error-free transformations.

**Direct** (:mod:`fft.direct` has the argument): one :func:`ozaki.dgemm` of the lines
and the normalised matrix in double-double, keeping about 128 bits of each side, so each
output is a nearest double of the exact transform (no float64 result, scipy's included,
is nearer); no range scaling, and a line's bits never depend on the batch.

**Threshold**: accuracy decides at short lengths, cost beyond. The direct product gives
nearest doubles at any length but costs ``13 * 2N**2`` multiply-adds per line against an
FFT's ``O(N log N)``. Measured on 4096 lines (2 shared, loaded cores): types II and III
up to 16 take the time of the mirrored ``4N``-point rfft they replace (fp64 plans), 2-4x
the reduced transforms', which from 17 on are cheaper still and below scipy's error (L2
ratio 0.45-0.85); type IV's reduction needs even ``N`` (from 16, 3-4x cheaper), and at
odd ``N`` up to 127 the direct product is 4-20x cheaper than the ``8N``-point mirrored
rfft; type I, never reduced, costs 0.3-2.3x the mirrored ``2(N +- 1)``-point rfft up to
``N = 48``, whose ``"ortho"`` divisor ``fl(sqrt L)``, off by up to ``0.9 u`` (``L =
76``: ``N = 37, 39``), gave the only errors above scipy's up to 48.

**Mirrored.** The transform's cosines (sines) are exactly the real (imaginary) parts of
``W_M^j`` for an ``M`` of 2, 4 or 8 times the length, so placing ``x`` at the right
indices of a length-``M`` line, mirrored with a ``+`` sign (cosines) or ``-`` sign
(sines), makes the DFT real (imaginary) and equal to the transform at selected
frequencies. With ``N = len(x)`` and ``U = DFT_M(u)``:

=======  ========  ==================================================  ==============
type     ``M``     ``u`` (zero elsewhere; ``n < N``)                   ``y[k]``
=======  ========  ==================================================  ==============
DCT-I    2(N-1)    ``u[n] = u[M-n] = x[n]``                            ``Re U[k]``
DCT-II   4N        ``u[2n+1] = u[M-2n-1] = x[n]``                      ``Re U[k]``
DCT-III  4N        ``u[n] = u[M-n] = x[n]``                            ``Re U[2k+1]``
DCT-IV   8N        ``u[2n+1] = u[M-2n-1] = x[n]``                      ``Re U[2k+1]``
DST-I    2(N+1)    ``u[n+1] = -u[M-n-1] = x[n]``                       ``-Im U[k+1]``
DST-II   4N        ``u[2n+1] = -u[M-2n-1] = x[n]``                     ``-Im U[k+1]``
DST-III  4N        ``u[n+1] = -u[M-n-1] = x[n]``, but ``u[3N] = 0``    ``-Im U[2k+1]``
DST-IV   8N        ``u[2n+1] = -u[M-2n-1] = x[n]``                     ``-Im U[2k+1]``
=======  ========  ==================================================  ==============

The endpoints that scipy's definitions weigh by 1 rather than 2 (``x[0]`` and ``x[N-1]``
of DCT-I, ``x[0]`` of DCT-III, ``x[N-1]`` of DST-III) sit once: at an index that is its
own mirror, or (DST-III) without its mirror. The extension is a copy, so the only
roundings are the FFT's and the normalisation's, and the mirroring makes the discarded
part exactly zero, so the FFT's normwise error falls on the wanted part alone.

**Reduced.** The DSTs are the DCTs of the same type by exact relations:
``DST-II(x)[k] = DCT-II(x[n] (-1)**n)[N-1-k]``, ``DST-III(x)[k] = (-1)**k
DCT-III(x[N-1-n])[k]`` and likewise DST-IV, folded into the passes (sign flips and
index changes). With ``v = [x[0], x[2], ..., x[3], x[1]]`` (Makhoul's reordering:
``v[n] = x[2n]``, ``v[N-1-n] = x[2n+1]``) and ``V = DFT_N(v)``:

* DCT-II: ``y[k] = 2 Re(W_{4N}^k V[k])`` and ``y[N-k] = -2 Im(W_{4N}^k V[k])``. For
  even ``N``, ``V`` is not formed: the ``N/2``-point DFT ``Z`` of ``v[2m] + i v[2m+1]``
  gives ``y[k] = Re P``, ``y[N-k] = -Im P`` with ``P = A_k Z[k] + B_k conj(Z[N/2-k])``,
  ``A_k = W_{4N}^k - i W_{4N}^{5k}``, ``B_k = W_{4N}^k + i W_{4N}^{5k}`` (the real FFT's
  split and the twiddle in one four-term product).
* DCT-III, the transpose: ``V[n] = conj(W_{4N}^n) (x[n] - i x[N-n])`` (``x[N] = 0``)
  and ``v`` its inverse real DFT, ``y[2m] = v[m]``, ``y[2m+1] = v[N-1-m]``. For even
  ``N`` the half-length packing is folded in as well: ``Z[k] = alpha_k (x[k] - i
  x[N-k]) + beta_k (x[N/2-k] + i x[N/2+k])``, ``alpha_k = conj(A_k)``, ``beta_k =
  W_{4N}^{N/2-k} - i W_{4N}^{N/2-5k}``, and the ``N/2``-point inverse DFT of ``Z`` is
  ``v[2m] + i v[2m+1]``.
* DCT-IV (even ``N``): ``t[n] = W_{8N}^{4n+1} (x[2n] + i x[N-1-2n])``, ``T =
  DFT_{N/2}(t)``, ``u[k] = W_{2N}^k T[k]``, ``y[2k] = 2 Re u[k]``, ``y[N-1-2k] = -2 Im
  u[k]``.

Each twiddle (or ``A, B, alpha, beta``) is a double-double value, from the correctly
rounded roots of :func:`fft.tables.roots_dd` (about 104 bits), and each twiddled value
is a two- or four-term dot product computed with error-free transformations (Dekker's
TwoProduct, Knuth's TwoSum: Ogita-Rump-Oishi's Dot2) in compiled passes: it **rounds
about once**, so a reduced type II or III adds one rounding per output (or input) to
the FFT's, and type IV one before and one after.

**Accuracy and cost** (measured in ``docs/fft.rst``): relative L2 errors of 0.3-1.4e-16
on standard normal input, at most scipy.fft's at every ``N`` from 1 to 40, every type,
inverse, norm and ``orthogonalize``. Direct: ``13 * 2N**2`` multiply-adds per line.
Mirrored: one rfft of length ``M``, 2-8 times the work of an ``N``-point real FFT.
Reduced: one ``N/2``-point complex or ``N``-point real FFT and one or two O(``N``)
compiled passes (at ``N = 2**20`` about the time of ``fft.fft`` of ``2**19`` points).

Normalisation (mirrored and reduced), as scipy, by the logical length ``L`` (``2(N-1)``
for DCT-I, ``2(N+1)`` for DST-I, ``2N`` for the others; not ``M``): ``"backward"``
leaves the forward transforms unscaled and divides the inverses by ``L``; ``"forward"``
the other way round; ``"ortho"`` divides both by ``sqrt(L)`` (one rounded divisor, one
division). ``orthogonalize`` (default: ``norm == "ortho"``) multiplies the endpoints
weighed by 1 by ``sqrt 2`` at the input (DCT-I, DCT-III, DST-III) and divides the
corresponding outputs by it (DCT-I, DCT-II, DST-II), each of those outputs once, by one
rounded divisor. ``idct(x, t)`` is ``dct(x, t')`` with ``t' = 1, 3, 2, 4`` for ``t = 1,
2, 3, 4`` and the normalisation's direction swapped (likewise ``idst``); the n-D forms
run the 1-D transform along each axis, last to first.

Range (mirrored and reduced): an input large enough that the unnormalised transform
could overflow (or, when reduced, that an operand of the error-free products could
exceed ``2**996``) is scaled by an exact power of two first and the normalised result
back (``_shift``, :func:`fft.reduced.range_shift`), so a finite result that fits is
finite (scipy gives ``inf`` or NaN in some such cases). Bits do not depend on the batch:
the reduction depends on ``(t, N)`` only, the extension, the twiddle passes and the
scaling are per line, and the FFT's bits do not depend on the batch (:mod:`fft.plan`),
except where a call is scaled for range, as for the FFTs. A non-finite input gives
non-finite outputs where it enters (a reduced transform's error-free products turn
``inf`` into NaN). Complex input is transformed as its real and imaginary parts, one
batch; float16/float32 give float32 and complex64 gives complex64, computed in FP64 and
rounded once; long double is refused (``TypeError``). Errors for bad arguments are
scipy's types; DCT-I of one point is a ``RuntimeError``, as in scipy.
"""

from __future__ import annotations

import contextlib
import math
import operator
from contextvars import ContextVar
from typing import Any

import numpy as np

from . import direct, tables
from . import transforms as _t
from .plan import Plan
from .reduced import REDUCED, fft_length, range_shift, reduction

__all__ = ["dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn"]

_INVERSE = {1: 1, 2: 3, 3: 2, 4: 4}


def _type(type, kind: str) -> int:
    try:
        t = operator.index(type)
    except TypeError:
        raise TypeError(f"type must be an integer 1, 2, 3 or 4, got {type!r}") from None
    if t not in _INVERSE:
        raise ValueError(f"invalid {kind.upper()} type")
    return t


def _logical(t: int, kind: str, n: int) -> int:
    """``M``: the extension's length (the module docstring's table)."""
    if t == 1:
        if kind == "dct" and n < 2:
            raise RuntimeError("zero-length FFT requested: a DCT of type 1 needs at least "
                               f"2 points, got {n}")
        return 2 * (n - 1) if kind == "dct" else 2 * (n + 1)
    return 8 * n if t == 4 else 4 * n


def _extend(a: np.ndarray, t: int, kind: str, M: int) -> np.ndarray:
    """The length-``M`` symmetric (``dct``) or antisymmetric (``dst``) extension of the
    last axis of ``a``."""
    N = a.shape[-1]
    u = np.zeros(a.shape[:-1] + (M,))
    s = 1.0 if kind == "dct" else -1.0
    if t in (2, 4):
        u[..., 1:2 * N:2] = a
        u[..., M - 1:M - 2 * N:-2] = s * a
    elif kind == "dct":  # types 1 and 3: x[0] once at index 0
        u[..., :N] = a
        u[..., M - 1:M - N:-1] = a[..., 1:]
    else:  # DST-I, DST-III: u[n+1] = x[n]
        u[..., 1:N + 1] = a
        last = N if t == 1 else N - 1  # DST-III: x[N-1] at u[N] alone
        u[..., M - 1:M - 1 - last:-1] = -a[..., :last]
    return u


def _pick(U: np.ndarray, t: int, kind: str, N: int) -> np.ndarray:
    """The transform's values among the half spectrum ``U`` of the extension."""
    part = U.real if kind == "dct" else U.imag
    if t in (3, 4):
        sel = part[..., 1:2 * N:2]
    else:
        sel = part[..., :N] if kind == "dct" else part[..., 1:N + 1]
    return sel + 0.0 if kind == "dct" else 0.0 - sel  # no negative zeros


def _scaling(norm: str, inverse: bool) -> str:
    """``"none"``, ``"n"`` (divide by ``L``) or ``"sqrt"`` (by ``sqrt L``): scipy's norms,
    the direction swapped for an inverse."""
    return ({"backward": "none", "forward": "n", "ortho": "sqrt"}[norm] if not inverse else
            {"backward": "n", "forward": "none", "ortho": "sqrt"}[norm])


def _divisor(norm: str, inverse: bool, M: int) -> tuple[float, float]:
    """The divisor of the outputs and of the orthogonalised endpoints (one rounding each),
    for the logical length ``M`` (``2(N-1)``, ``2(N+1)`` for type 1, else ``2N``)."""
    kind = _scaling(norm, inverse)
    if kind == "none":
        return 1.0, math.sqrt(2.0)
    if kind == "n":
        return float(M), math.sqrt(2.0 * M * M)
    return math.sqrt(M), math.sqrt(2.0 * M)


def _shift(a: np.ndarray, M: int) -> int:
    """``s >= 0`` such that the unnormalised transform of ``2**-s a`` cannot overflow.

    Each output is a sum of at most ``M`` multiples of the inputs, by coefficients of
    magnitude at most 2 (``sqrt 2`` more for an orthogonalised endpoint), so it is below
    ``2 M 2**e`` (``|a| < 2**e``); ``e + ceil(log2 M) + 2 <= 1022`` keeps it, and the
    normalised result, below ``2**1023``. Scaling by a power of two commutes with the
    rfft and the division (the same bits, scaled, where nothing under- or overflows), so
    the normalisation can bring a result back into range that the unnormalised transform
    would overflow; the rfft scales its own insides (:mod:`fft.transforms`).
    """
    top = _t.largest_finite(a)
    if top == 0.0:
        return 0
    return max(0, math.frexp(top)[1] + (M - 1).bit_length() + 2 - 1022)


_OPTIONS: ContextVar[dict] = ContextVar("fft_r2r_plan_options", default={})


@contextlib.contextmanager
def plan_options(**options):
    """Inside the block, the real-to-real transforms of the calling thread make their plans
    with ``options`` (:class:`fft.Plan`'s keywords) and run their direct products with
    its ``scheme``, ``mode``, ``engine`` and ``native`` (not ``num_moduli``: the direct
    product's count is its own): ``native=True`` runs every product on numpy's FP64 GEMM.

    Not part of :mod:`fft`'s API: the benchmarks' baseline, the same transform with
    native products (``benchmarks/test_fft_bench.py``). Without it the transforms use
    the default plans (:func:`fft.get_plan`)."""
    Plan(1, **options)  # the errors a plan would raise
    token = _OPTIONS.set(dict(options))
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def _plan(n: int) -> Plan:
    return _t.get_plan(n, **_OPTIONS.get())


def _line(a: np.ndarray, axis: int, t: int, kind: str, norm: str, inverse: bool,
          ortho: bool, workers) -> np.ndarray:
    """The transform of type ``t`` (already mapped for an inverse) along ``axis`` of a
    float64 array."""
    a = np.moveaxis(a, axis, -1)
    N = a.shape[-1]
    M = _logical(t, kind, N)
    how = reduction(t, N)
    if how == "direct":
        y = direct.transform(a, kind, t, _scaling(norm, inverse), ortho, workers=workers,
                             options=_OPTIONS.get())
        return np.moveaxis(y, -1, axis)
    pre = tables.R2R_ENDS_IN.get((kind, t), ())
    post = tables.R2R_ENDS_OUT.get((kind, t), ())
    shift = _shift(a, M) if how == "mirror" else range_shift(a, fft_length(how, N))
    a = a * 2.0 ** -shift if shift else a
    if ortho and pre:
        a = a.copy()
        for i in set(i % N for i in pre):
            a[..., i] = a[..., i] * math.sqrt(2.0)
    if how == "mirror":
        raw = _pick(_t.rfft(_extend(a, t, kind, M), axis=-1, workers=workers, plan=_plan(M)),
                    t, kind, N)
    else:
        raw = REDUCED[t, how](a, kind == "dst", workers, _plan(fft_length(how, N)))
    d, d_end = _divisor(norm, inverse, M if t == 1 else 2 * N)
    y = raw / d  # a new contiguous array (d = 1.0: a copy)
    if ortho and post:
        for i in set(i % N for i in post):
            y[..., i] = raw[..., i] / d_end
    if shift:
        with np.errstate(over="ignore"):
            y *= 2.0 ** shift
    return np.moveaxis(y, -1, axis)


def _r2r(x: Any, type, s, axes, norm, workers, orthogonalize, kind: str,
         inverse: bool) -> np.ndarray:
    t = _type(type, kind)
    a, single = _t.input_array(x)
    axes, s = _t.resolve_axes(a.shape, s, axes)
    norm = _t.check_norm(norm)
    _t.check_workers(workers)
    if not axes:  # as scipy.fft: the input itself
        return np.asarray(x)
    ortho = norm == "ortho" if orthogonalize is None else bool(orthogonalize)
    tt = _INVERSE[t] if inverse else t
    for ax, n in zip(axes, s):
        a = _t.resize_axis(a, ax, n if n is not None else _t.check_length(a.shape[ax]))
    parts = np.stack([a.real, a.imag]) if np.iscomplexobj(a) else a[None]
    for ax in reversed(axes):
        parts = _line(parts, ax + 1, tt, kind, norm, inverse, ortho, workers)
    if np.iscomplexobj(a):
        out = np.empty(parts.shape[1:], np.complex64 if single else np.complex128)
        out.real, out.imag = parts[0], parts[1]
        return out
    out = np.ascontiguousarray(parts[0])
    return out.astype(np.float32) if single else out


# --- the public functions ---------------------------------------------------------------

_DOC = """{title} (``scipy.fft.{name}``'s signature), FP64-grade.

    {what}
    Computed by ozaki's emulated products (:mod:`fft.realtransforms`): at short lengths
    one product with the double-double matrix (every output a nearest double of the
    exact result), else the rfft of a symmetric or antisymmetric extension (type 1, odd
    type 4) or an ``N/2``- or ``N``-point FFT between twiddle passes that round about once.

    Parameters
    ----------
    x : array_like
        Real or complex input (real and imaginary parts are transformed separately).
    type : {{1, 2, 3, 4}}
        The transform's type (default 2).
    {size}
    norm : {{"backward", "ortho", "forward"}}, optional
    overwrite_x : bool
        Accepted for compatibility; ``x`` is never modified.
    workers : int, optional
        Caps the threads of the passes (default: all).
    orthogonalize : bool, optional
        scipy's endpoint weighting (default: ``norm == "ortho"``).

    Returns
    -------
    ndarray, float64 (float32 for float16/float32 input; complex for complex input)
    """
_SIZE_1 = """n : int, optional
        Length of the transform: ``x`` is cropped or zero-padded along ``axis``.
    axis : int"""
_SIZE_N = """s : int or sequence of ints, optional
        Lengths along ``axes`` (``-1``: the input's), cropping or zero-padding.
    axes : int or sequence of ints, optional
        Default: all axes (the last ``len(s)`` when ``s`` is given)."""


def _doc(name: str, title: str, what: str):
    def wrap(fn):
        fn.__doc__ = _DOC.format(name=name, title=title, what=what,
                                 size=_SIZE_N if name.endswith("n") else _SIZE_1)
        return fn
    return wrap


@_doc("dct", "Discrete cosine transform of types 1-4", "The 1-D transform along ``axis``.")
def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
        norm: str | None = None, overwrite_x: bool = False, workers: int | None = None,
        orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, _t.length_as_s(n), [axis], norm, workers, orthogonalize, "dct", False)


@_doc("idct", "Inverse discrete cosine transform",
      "The inverse of :func:`dct` of the same type and norm along ``axis``.")
def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
         norm: str | None = None, overwrite_x: bool = False, workers: int | None = None,
         orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, _t.length_as_s(n), [axis], norm, workers, orthogonalize, "dct", True)


@_doc("dst", "Discrete sine transform of types 1-4", "The 1-D transform along ``axis``.")
def dst(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
        norm: str | None = None, overwrite_x: bool = False, workers: int | None = None,
        orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, _t.length_as_s(n), [axis], norm, workers, orthogonalize, "dst", False)


@_doc("idst", "Inverse discrete sine transform",
      "The inverse of :func:`dst` of the same type and norm along ``axis``.")
def idst(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
         norm: str | None = None, overwrite_x: bool = False, workers: int | None = None,
         orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, _t.length_as_s(n), [axis], norm, workers, orthogonalize, "dst", True)


@_doc("dctn", "N-D discrete cosine transform",
      "The 1-D :func:`dct` along each of ``axes`` in turn, last to first.")
def dctn(x: Any, type: int = 2, s=None, axes=None, norm: str | None = None,
         overwrite_x: bool = False, workers: int | None = None, *,
         orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, s, axes, norm, workers, orthogonalize, "dct", False)


@_doc("idctn", "N-D inverse discrete cosine transform",
      "The 1-D :func:`idct` along each of ``axes`` in turn, last to first.")
def idctn(x: Any, type: int = 2, s=None, axes=None, norm: str | None = None,
          overwrite_x: bool = False, workers: int | None = None,
          orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, s, axes, norm, workers, orthogonalize, "dct", True)


@_doc("dstn", "N-D discrete sine transform",
      "The 1-D :func:`dst` along each of ``axes`` in turn, last to first.")
def dstn(x: Any, type: int = 2, s=None, axes=None, norm: str | None = None,
         overwrite_x: bool = False, workers: int | None = None,
         orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, s, axes, norm, workers, orthogonalize, "dst", False)


@_doc("idstn", "N-D inverse discrete sine transform",
      "The 1-D :func:`idst` along each of ``axes`` in turn, last to first.")
def idstn(x: Any, type: int = 2, s=None, axes=None, norm: str | None = None,
          overwrite_x: bool = False, workers: int | None = None,
          orthogonalize: bool | None = None) -> np.ndarray:
    return _r2r(x, type, s, axes, norm, workers, orthogonalize, "dst", True)
