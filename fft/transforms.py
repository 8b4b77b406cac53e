"""The transforms, with ``scipy.fft``'s signatures, on split arrays.

Every transform moves its axis to the front of a split array ``(2, n, W)``
(real parts, imaginary parts; the other axes folded into ``W``) and runs the
length's :class:`~fft.plan.Plan`; n-D transforms run one axis after another,
staying split in between. Inverse transforms use
``ifft(x) = conj(fft(conj(x))) / n`` (conjugation is exact), so one plan
serves both directions; the normalisation is applied once, at the end, with
one rounding for ``1/n``.

Precision: float64 and complex128 are computed to FP64 grade. float32,
complex64 and float16 are widened, transformed the same way and rounded to
the single-precision result type scipy.fft returns (complex64, float32);
long double is refused (``TypeError``): nothing here is more precise than FP64.

Non-finite input propagates as in IEEE arithmetic: an output that depends on an
``inf`` is non-finite, on a ``nan`` is ``nan``; other lines of the batch keep their bits.

Range: an input whose largest finite magnitude could make some value of the transform
overflow is scaled by an exact power of two ``2**-s`` first and the result by ``2**s``
last (``_range_shift`` argues the threshold), so a finite input gives a finite output
wherever the exact result fits, and ``+-inf`` only where it overflows. Inputs below the
threshold are not touched.

No axis transformed (``axes=()``, or a 0-d input of ``fftn``/``ifftn``): the complex
transforms return ``np.asarray(x)`` itself, of the input's dtype, as scipy.fft does; the
real ones raise ``ValueError``, as scipy.fft does.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
from collections import OrderedDict
from collections.abc import Sequence
from threading import Lock
from typing import Any

import numpy as np

import ozaki

from .kernels import transpose
from .plan import Plan, plan_scheme

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "get_plan", "PLAN_CACHE_SIZE", "PLAN_CACHE_BYTES"]

PLAN_CACHE_SIZE = 32  #: most plans :func:`get_plan` keeps (least recently used dropped)
PLAN_CACHE_BYTES = 1 << 30  #: most bytes of plans it keeps (:attr:`Plan.nbytes`)
_plans: OrderedDict = OrderedDict()
_plans_lock = Lock()
_AxisError = getattr(np, "exceptions", np).AxisError  # numpy < 1.25: np.AxisError
_NORMS = (None, "backward", "ortho", "forward")


def get_plan(n: int, **options) -> Plan:
    """The cached :class:`Plan` for length ``n`` and ``options`` (see :class:`Plan`).

    The cache keeps at most ``fft.transforms.PLAN_CACHE_SIZE`` plans and
    ``fft.transforms.PLAN_CACHE_BYTES`` of them (:attr:`Plan.nbytes`), dropping the
    least recently used; both may be changed at any time.
    """
    # a plan holds the scheme "auto" stood for when it was made (ozaki.set_scheme may pin
    # another on this thread): that scheme is part of the key
    known = {k: options[k] for k in ("scheme", "num_moduli", "mode", "engine") if k in options}
    try:
        scheme = plan_scheme(**known)
    except (TypeError, ValueError):
        scheme = None  # Plan raises the error below
    key = (int(n), tuple(sorted(options.items())), scheme)
    with _plans_lock:
        if key in _plans:
            _plans.move_to_end(key)
            return _plans[key]
    made = Plan(n, **options)
    with _plans_lock:
        made = _plans.setdefault(key, made)
        # both bounds are read here, at each insertion: setting them takes effect
        while len(_plans) > 1 and (len(_plans) > PLAN_CACHE_SIZE or
                                   sum(p.nbytes for p in _plans.values()) > PLAN_CACHE_BYTES):
            _plans.popitem(last=False)
    return made


# --- arguments ----------------------------------------------------------------------

def input_array(x: Any) -> tuple[np.ndarray, bool]:
    """``x`` as float64/complex128, and whether the result is single precision."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError("x is a masked array: fill it first (np.ma.filled)")
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind not in "biufc":
        raise TypeError(f"x must be a real or complex numeric array, got dtype {arr.dtype}")
    if arr.dtype.itemsize > (16 if kind == "c" else 8):
        raise TypeError(f"x has dtype {arr.dtype}: long double is not supported (the "
                        "transform is FP64-grade); use scipy.fft for extended precision")
    single = arr.dtype in (np.float16, np.float32, np.complex64)
    return arr.astype(np.complex128 if kind == "c" else np.float64, copy=False), single


def check_norm(norm) -> str:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}, should be "backward", "ortho" or '
                         '"forward"')
    return norm or "backward"


def check_length(n, name: str = "n") -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    return n


def check_workers(workers) -> int | None:
    if workers is None:
        return None
    w = operator.index(workers)
    if w == 0:
        raise ValueError("workers must not be zero")
    if w < 0:
        w += (os.cpu_count() or 1) + 1
        if w <= 0:
            raise ValueError(f"workers value out of range; got {workers}, must not be less "
                             f"than {-(os.cpu_count() or 1)}")
    return w


@contextlib.contextmanager
def limit_threads(workers):
    """Cap the passes' threads at ``workers`` (:func:`ozaki.set_workers`, local to the
    calling thread; never above :func:`ozaki.get_workers`)."""
    w = check_workers(workers)
    if w is None:
        yield
        return
    with ozaki.set_workers(min(w, ozaki.get_workers())):
        yield


def resolve_axes(shape: tuple, s, axes, real: bool = False) -> tuple[list[int], list[int | None]]:
    """scipy's rules for ``s`` and ``axes``; lengths ``None`` (``s`` not given) keep the
    input's, and ``-1`` in ``s`` is the input's length along that axis (as in scipy, also
    for the output length of a complex-to-real transform)."""
    ndim = len(shape)
    if s is not None:
        s = [s] if np.ndim(s) == 0 else list(s)
    if axes is None:
        if s is not None and len(s) > ndim:
            raise ValueError(f"shape requires more axes than are present ({len(s)} > {ndim})")
        axes = list(range(ndim - len(s), ndim)) if s is not None else list(range(ndim))
    else:
        axes = [axes] if np.ndim(axes) == 0 else list(axes)
        axes = [operator.index(a) for a in axes]
    axes = [_axis(a, ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError("all axes must be unique")
    if s is None:
        s = [None] * len(axes)
    elif len(s) != len(axes):
        raise ValueError("when given, axes and shape arguments have to be of the same length")
    else:
        s = [check_length(shape[ax] if v == -1 else v, "s") for ax, v in zip(axes, s)]
    if real and not axes:
        raise ValueError("at least 1 axis must be transformed")
    return axes, s


def _axis(a: int, ndim: int) -> int:
    if not -ndim <= a < ndim:
        raise _AxisError(a, ndim)
    return a % ndim


def _check_plans(plan, count: int) -> None:
    if isinstance(plan, Sequence) and not isinstance(plan, str) and len(plan) != count:
        raise ValueError(f"plan holds {len(plan)} plans for {count} transformed axes: pass "
                         "one per axis, in the order of axes")


def plan_for_axis(plan, i: int, n: int) -> Plan:
    if plan is None:
        return get_plan(n)
    p = plan[i] if isinstance(plan, Sequence) and not isinstance(plan, str) else plan
    if not isinstance(p, Plan):
        raise TypeError(f"plan must be an fft.Plan or a sequence of them, got {type(p).__name__}")
    if p.n != n:
        raise ValueError(f"plan is for length {p.n}, the transform has length {n}")
    return p


# --- the split-array machinery --------------------------------------------------------

def resize_axis(a: np.ndarray, axis: int, n: int) -> np.ndarray:
    """Crop or zero-pad axis ``axis`` of ``a`` to ``n``."""
    have = a.shape[axis]
    if have == n:
        return a
    if have > n:
        return a[(slice(None),) * axis + (slice(0, n),)]
    shape = list(a.shape)
    shape[axis] = n
    out = np.zeros(shape, a.dtype)
    out[(slice(None),) * axis + (slice(0, have),)] = a
    return out


def to_split(x: np.ndarray) -> np.ndarray:
    return np.stack([x.real, x.imag]) if np.iscomplexobj(x) else np.stack([x, np.zeros_like(x)])


def transform_along(S: np.ndarray, axis: int, plan: Plan, real_in=False,
                    real_out=False) -> np.ndarray:
    """DFT along ``axis`` of a split array ``S`` (2, ...) or a real one (...).

    The last axis of a C-ordered array goes to the front and back by tiled
    transposes (:func:`fft.kernels.transpose`), and the result is C-ordered; other
    axes move by numpy (contiguous runs of the trailing axes) and come back as a
    view. Only copies: the bits are the plan's either way.
    """
    lead = 0 if real_in else 1
    n = S.shape[axis + lead]
    if axis + lead == S.ndim - 1 and S.ndim > lead + 1 and S.flags.c_contiguous and S.size:
        W = S.size // ((1 + lead) * n)
        Z = transpose(S.reshape(1 + lead, W, n))  # (parts, n, W)
        out = plan.execute(Z[0] if real_in else Z, real_in, real_out)
        back = transpose(out.reshape(1 if real_out else 2, n, W))  # (parts, W, n)
        return back.reshape(S.shape[lead:] if real_out else (2,) + S.shape[lead:])
    src = np.moveaxis(S, axis + lead, lead)
    shape = src.shape
    Z = src.reshape((n, -1) if real_in else (2, n, -1))
    if Z.shape[-1] == 0:
        out = np.zeros(((n,) if real_out else (2, n)) + (0,))
    else:
        out = plan.execute(np.ascontiguousarray(Z), real_in, real_out)
    rest = shape[lead + 1:]
    out = out.reshape(((n,) if real_out else (2, n)) + rest)
    return np.moveaxis(out, 1 - real_out, axis + 1 - real_out)


# --- range: inputs near overflow ---------------------------------------------------------

#: The largest ``e + g`` left unscaled (``M < 2**e``, the plans' growth ``2**g``).
SAFE_EXPONENT = 1020


def largest_finite(a: np.ndarray) -> float:
    """The largest magnitude among the finite real and imaginary parts of ``a`` (0 if none)."""
    if not a.size:
        return 0.0
    parts = (a.real, a.imag) if np.iscomplexobj(a) else (a,)
    top = 0.0
    for p in parts:
        hi, lo = float(p.max()), float(p.min())
        if not (math.isfinite(hi) and math.isfinite(lo)):  # inf or nan: finite ones only
            p = np.abs(p[np.isfinite(p)])
            hi, lo = (float(p.max()), 0.0) if p.size else (0.0, 0.0)
        top = max(top, hi, -lo)
    return top


def _range_shift(a: np.ndarray, plans: Sequence[Plan]) -> int:
    """``s >= 0`` such that no value of the transform of ``2**-s a`` can overflow.

    Let ``M < 2**e`` be the largest finite real or imaginary part of ``a``: complex
    moduli are below ``sqrt(2) M``. The transform runs its plans one after another,
    and :attr:`Plan.growth` bounds how far plan ``k`` can magnify the largest modulus,
    by ``2**g_k`` in exact arithmetic: a DFT stage of length ``r`` by ``r`` (each output
    is a sum of ``r`` unit-modulus multiples of its inputs, the twiddles have modulus 1),
    Bluestein's prime stage by ``2 p**2`` inside (its chirp products have modulus 1, its
    kernel at most ``(2p - 1) / L``) and ``p`` at its output. With ``g = sum g_k`` every
    exact value is below ``sqrt(2) 2**(e + g)``. Computed values differ by rounding: each
    stage product is FP64-grade (ozaki's ``u |Y| + u ||f|| ||x||`` with ``||f|| ||x|| <=
    r mu`` for the largest input modulus ``mu``, or exactly rounded), each twiddle or
    chirp product adds two roundings, so a stage grows its bound by a factor ``1 + 8u``
    at most, under 2 over all stages: every computed value is below ``2 sqrt(2)
    2**(e + g)``. The emulated products' own scaling is by powers of two read from
    exponents and is exact, and their ``(|A||B|)_ij`` (the sums of magnitudes of
    ``2r`` real products, at most ``sqrt(2)`` times the stage's modulus bound) stay below
    ``4 * 2**(e + g)``. So ``e + g <= SAFE_EXPONENT = 1020`` keeps every value, and every
    ``(|A||B|)_ij``, below ``2**1022``: nothing overflows, and no product comes near
    ozaki's overflow guard (``2**1023``, where entries are recomputed exactly). The
    normalisation (division by ``n`` or ``sqrt(n)``) only shrinks values.

    Above it, ``s = e + g - SAFE_EXPONENT`` brings ``M 2**-s`` below ``2**(1020 - g)``. The
    scaling is exact except for entries below ``2**(s - 1022)`` (they round into the
    subnormal range: less than ``2**-1000 M``, far below the FP64-grade bound), and since
    ozaki's products, the twiddle products and the normalisation commute with powers of
    two (the same bits, scaled, when nothing over- or underflows), the scaled transform
    gives the old bits wherever the old one neither overflowed nor underflowed. Scaling
    the result back by ``2**s`` is exact, except where it overflows (``+-inf``: the
    rounded result exceeds the range) or where the scaled result was subnormal.
    """
    top = largest_finite(a)
    if top == 0.0:
        return 0
    e = math.frexp(top)[1]  # top < 2**e
    g = sum(p.growth for p in plans)
    return max(0, e + g - SAFE_EXPONENT)


def _shrink(a: np.ndarray, shift: int) -> np.ndarray:
    """``a 2**-shift`` (a new array; ``a`` itself when ``shift`` is 0)."""
    return a * 2.0 ** -shift if shift else a


def _restore(S: np.ndarray, shift: int) -> np.ndarray:
    """``S 2**shift``: exact, or ``+-inf`` where the result overflows (``S`` when 0)."""
    if not shift:
        return S
    with np.errstate(over="ignore"):
        return S * 2.0 ** shift


def apply_norm(S: np.ndarray, norm: str, inverse: bool, total: int) -> np.ndarray:
    kind = ({"backward": "none", "forward": "n", "ortho": "sqrt"}[norm] if not inverse else
            {"backward": "n", "forward": "none", "ortho": "sqrt"}[norm])
    if kind == "n":
        return S / total
    if kind == "sqrt":
        return S / np.sqrt(total)
    return S


def result_array(S: np.ndarray, single: bool, real: bool) -> np.ndarray:
    if real:
        out = np.ascontiguousarray(S)
        return out.astype(np.float32) if single else out
    out = np.empty(S.shape[1:], np.complex64 if single else np.complex128)
    out.real, out.imag = S[0], S[1]
    return out


def _c2c(x, s, axes, norm, inverse, workers, plan):
    a, single = input_array(x)
    axes, s = resolve_axes(a.shape, s, axes)
    _check_plans(plan, len(axes))
    norm = check_norm(norm)
    if not axes:  # as scipy.fft: the input itself, of its own dtype (workers still checked)
        check_workers(workers)
        return np.asarray(x)
    for ax, n in zip(axes, s):
        a = resize_axis(a, ax, n if n is not None else check_length(a.shape[ax]))
    order = list(reversed(list(enumerate(axes))))
    real = not np.iscomplexobj(a)
    with limit_threads(workers):
        plans = {i: plan_for_axis(plan, i, a.shape[ax]) for i, ax in order}
        shift = _range_shift(a, list(plans.values()))
        a = _shrink(a, shift)
        if real:  # real input enters through [Fr; Fi] (conj(x) = x for the inverse)
            i, ax = order.pop(0)
            S = transform_along(a, ax, plans[i], real_in=True)
        else:
            S = to_split(a)
            if inverse:
                S[1] = -S[1]
        for i, ax in order:
            S = transform_along(S, ax, plans[i])
    if inverse:
        S[1] = -S[1]
    total = int(np.prod([a.shape[ax] for ax in axes], dtype=np.int64))
    return result_array(_restore(apply_norm(S, norm, inverse, total), shift), single, False)


def _r2c(x, s, axes, norm, workers, plan, conj_out=False, swap=False):
    a, single = input_array(x)
    if np.iscomplexobj(a):
        raise TypeError("x must be real for a real-input transform (got complex values)")
    axes, s = resolve_axes(a.shape, s, axes, real=True)
    _check_plans(plan, len(axes))
    norm = check_norm(norm)
    for ax, n in zip(axes, s):
        a = resize_axis(a, ax, n if n is not None else check_length(a.shape[ax]))
    last = axes[-1]
    n_last = a.shape[last]
    with limit_threads(workers):
        plans = [plan_for_axis(plan, i, a.shape[ax]) for i, ax in enumerate(axes)]
        shift = _range_shift(a, plans)
        a = _shrink(a, shift)
        S = transform_along(a, last, plans[-1], real_in=True)
        S = S[(slice(None),) * (last + 1) + (slice(0, n_last // 2 + 1),)]
        for i, ax in reversed(list(enumerate(axes[:-1]))):
            S = transform_along(np.ascontiguousarray(S), ax, plans[i])
    total = int(np.prod([a.shape[ax] for ax in axes], dtype=np.int64))
    S = _restore(apply_norm(S, _swap(norm) if swap else norm, False, total), shift)
    if conj_out:
        S = S.copy()
        S[1] = -S[1]
    return result_array(S, single, False)


def _c2r(x, s, axes, norm, workers, plan, conj_in=False, swap=False):
    a, single = input_array(x)
    axes, s = resolve_axes(a.shape, s, axes, real=True)
    _check_plans(plan, len(axes))
    norm = check_norm(norm)
    last = axes[-1]
    n_last = s[-1] if s[-1] is not None else 2 * (a.shape[last] - 1)
    n_last = check_length(n_last)
    for ax, n in zip(axes[:-1], s[:-1]):
        a = resize_axis(a, ax, n if n is not None else check_length(a.shape[ax]))
    a = resize_axis(a, last, n_last // 2 + 1)
    with limit_threads(workers):
        plans = [plan_for_axis(plan, i, a.shape[ax]) for i, ax in enumerate(axes[:-1])]
        plans.append(plan_for_axis(plan, len(axes) - 1, n_last))
        shift = _range_shift(a, plans)
        S = to_split(_shrink(a, shift))
        if not conj_in:  # inverse: conj(DFT(conj(x))); hfft's forward transform of conj(x)
            S[1] = -S[1]
        for i, ax in reversed(list(enumerate(axes[:-1]))):
            S = transform_along(S, ax, plans[i])
        full = complete_hermitian(S, last, n_last)
        R = transform_along(full, last, plans[-1], real_out=True)
    total = int(np.prod([a.shape[ax] for ax in axes[:-1]], dtype=np.int64)) * n_last
    R = _restore(apply_norm(R, _swap(norm) if swap else norm, True, total), shift)
    return result_array(R, single, True)


def complete_hermitian(S: np.ndarray, last: int, n_last: int) -> np.ndarray:
    """The full split spectrum of length ``n_last`` along axis ``last`` of a split half
    spectrum ``S`` (``n_last // 2 + 1`` entries there): ``X[n - k] = conj(X[k])``.

    The imaginary parts of the zero and (even ``n_last``) Nyquist frequencies do not
    enter a real result: they are dropped first (finite ones, in place; NaN and inf
    propagate, as in scipy), so that they do not set their column's power-of-two shift.
    """
    h = n_last // 2 + 1
    for k in {0, n_last // 2} if n_last % 2 == 0 else {0}:
        im = S[(1,) + (slice(None),) * last + (slice(k, k + 1),)]  # a view
        im[np.isfinite(im)] = 0.0
    # Hermitian completion along the last axis: X[n-k] = conj(X[k])
    full = np.empty(S.shape[:last + 1] + (n_last,) + S.shape[last + 2:])
    idx = (slice(None),) * (last + 1)
    full[idx + (slice(0, h),)] = S
    m = n_last - h
    if m:
        mirror = np.flip(S[idx + (slice(1, m + 1),)], axis=last + 1)  # k = m .. 1
        full[(0,) + idx[1:] + (slice(h, None),)] = mirror[0]
        full[(1,) + idx[1:] + (slice(h, None),)] = -mirror[1]
    return full


def length_as_s(n) -> list[int] | None:
    """A 1-D function's ``n`` as ``s``: ``None`` or a valid length (scipy refuses -1)."""
    return None if n is None else [check_length(n)]


def _swap(norm: str) -> str:
    return {"backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


# --- the public functions ---------------------------------------------------------------

def fft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """1-D discrete Fourier transform, FP64-grade (``scipy.fft.fft``'s signature).

    Parameters
    ----------
    x : array_like
        Real or complex input; the other axes are a batch.
    n : int, optional
        Length of the transform: ``x`` is cropped or zero-padded along ``axis``.
    axis : int
    norm : {"backward", "ortho", "forward"}, optional
    overwrite_x : bool
        Accepted for compatibility; ``x`` is never modified.
    workers : int, optional
        Caps the threads of the passes (default: all).
    plan : Plan, optional
        A plan of the transform's length (:func:`get_plan`).

    Returns
    -------
    ndarray, complex128 (complex64 for single-precision input)
    """
    return _c2c(x, length_as_s(n), [axis], norm, False, workers, plan)


def ifft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """1-D inverse DFT (``scipy.fft.ifft``'s signature); see :func:`fft`."""
    return _c2c(x, length_as_s(n), [axis], norm, True, workers, plan)


def fft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None):
    """2-D DFT (``scipy.fft.fft2``'s signature); ``plan``: one per axis."""
    return _c2c(x, s, axes, norm, False, workers, plan)


def ifft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None):
    """2-D inverse DFT (``scipy.fft.ifft2``'s signature)."""
    return _c2c(x, s, axes, norm, True, workers, plan)


def fftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """N-D DFT (``scipy.fft.fftn``'s signature); ``plan``: one per axis."""
    return _c2c(x, s, axes, norm, False, workers, plan)


def ifftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """N-D inverse DFT (``scipy.fft.ifftn``'s signature)."""
    return _c2c(x, s, axes, norm, True, workers, plan)


def rfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """DFT of real input, ``n//2 + 1`` outputs (``scipy.fft.rfft``'s signature).

    The first stage is a real product ``[Fr; Fi] @ x``.
    """
    return _r2c(x, length_as_s(n), [axis], norm, workers, plan)


def irfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`rfft`: real output of length ``n`` (default ``2 (m - 1)``).

    The imaginary parts of the zero (and, for even ``n``, the Nyquist)
    frequency are ignored, as in scipy; the last stage is a real product
    ``[Fr, -Fi] @ [Zr; Zi]``.
    """
    return _c2r(x, length_as_s(n), [axis], norm, workers, plan)


def rfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None):
    """2-D DFT of real input (``scipy.fft.rfft2``'s signature)."""
    return _r2c(x, s, axes, norm, workers, plan)


def irfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`rfft2` (``scipy.fft.irfft2``'s signature)."""
    return _c2r(x, s, axes, norm, workers, plan)


def rfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """N-D DFT of real input (``scipy.fft.rfftn``'s signature): real along the last axis."""
    return _r2c(x, s, axes, norm, workers, plan)


def irfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`rfftn` (``scipy.fft.irfftn``'s signature)."""
    return _c2r(x, s, axes, norm, workers, plan)


def hfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """DFT of a Hermitian-symmetric signal, real output (``scipy.fft.hfft``'s signature).

    ``hfft(x, n) == irfft(conj(x), n) * n`` for the default norm.
    """
    return _c2r(x, length_as_s(n), [axis], norm, workers, plan, conj_in=True,
                swap=True)


def ihfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`hfft` (``scipy.fft.ihfft``'s signature): ``conj(rfft(x)) / n``."""
    return _r2c(x, length_as_s(n), [axis], norm, workers, plan, conj_out=True,
                swap=True)


def hfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None):
    """2-D DFT of a Hermitian-symmetric signal (``scipy.fft.hfft2``'s signature); see
    :func:`hfftn`."""
    return _c2r(x, s, axes, norm, workers, plan, conj_in=True, swap=True)


def hfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """N-D DFT of a Hermitian-symmetric signal, real output (``scipy.fft.hfftn``'s signature).

    As in scipy, ``hfftn(x, s, axes, norm) == irfftn(conj(x), s, axes, norm')`` with the
    normalisation's direction swapped (``"backward"`` <-> ``"forward"``): ``x`` is the half
    spectrum along the last of ``axes`` (output length ``s[-1]``, default ``2 (m - 1)``).
    It runs :func:`irfftn`'s steps without its conjugations.
    """
    return _c2r(x, s, axes, norm, workers, plan, conj_in=True, swap=True)


def ihfft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`hfft2` (``scipy.fft.ihfft2``'s signature); see :func:`ihfftn`."""
    return _r2c(x, s, axes, norm, workers, plan, conj_out=True, swap=True)


def ihfftn(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`hfftn` for real input (``scipy.fft.ihfftn``'s signature).

    As in scipy, ``ihfftn(x, s, axes, norm) == conj(rfftn(x, s, axes, norm'))`` with the
    normalisation's direction swapped: half of the last axis, ``n // 2 + 1`` outputs.
    """
    return _r2c(x, s, axes, norm, workers, plan, conj_out=True, swap=True)
