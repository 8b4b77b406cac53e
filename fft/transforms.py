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
"""

from __future__ import annotations

import contextlib
import operator
import os
from collections import OrderedDict
from collections.abc import Sequence
from threading import Lock
from typing import Any

import numpy as np

from .kernels import transpose
from .plan import Plan

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "get_plan", "PLAN_CACHE_SIZE",
           "PLAN_CACHE_BYTES"]

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
    key = (int(n), tuple(sorted(options.items())))
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

def _array(x: Any) -> tuple[np.ndarray, bool]:
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


def _norm(norm) -> str:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}, should be "backward", "ortho" or '
                         '"forward"')
    return norm or "backward"


def _length(n, name: str = "n") -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    return n


def _workers(workers) -> int | None:
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
def _threads(workers):
    """Cap the passes' threads (numba's count, local to the calling thread)."""
    w = _workers(workers)
    if w is None:
        yield
        return
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(w, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _axes(shape: tuple, s, axes, real: bool = False) -> tuple[list[int], list[int | None]]:
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
        s = [_length(shape[ax] if v == -1 else v, "s") for ax, v in zip(axes, s)]
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


def _plan_for(plan, i: int, n: int) -> Plan:
    if plan is None:
        return get_plan(n)
    p = plan[i] if isinstance(plan, Sequence) and not isinstance(plan, str) else plan
    if not isinstance(p, Plan):
        raise TypeError(f"plan must be an fft.Plan or a sequence of them, got {type(p).__name__}")
    if p.n != n:
        raise ValueError(f"plan is for length {p.n}, the transform has length {n}")
    return p


# --- the split-array machinery --------------------------------------------------------

def _resize(a: np.ndarray, axis: int, n: int) -> np.ndarray:
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


def _split(x: np.ndarray) -> np.ndarray:
    return np.stack([x.real, x.imag]) if np.iscomplexobj(x) else np.stack([x, np.zeros_like(x)])


def _along(S: np.ndarray, axis: int, plan: Plan, real_in=False, real_out=False) -> np.ndarray:
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


def _scale(S: np.ndarray, norm: str, inverse: bool, total: int) -> np.ndarray:
    kind = ({"backward": "none", "forward": "n", "ortho": "sqrt"}[norm] if not inverse else
            {"backward": "n", "forward": "none", "ortho": "sqrt"}[norm])
    if kind == "n":
        return S / total
    if kind == "sqrt":
        return S / np.sqrt(total)
    return S


def _finish(S: np.ndarray, single: bool, real: bool) -> np.ndarray:
    if real:
        out = np.ascontiguousarray(S)
        return out.astype(np.float32) if single else out
    out = np.empty(S.shape[1:], np.complex64 if single else np.complex128)
    out.real, out.imag = S[0], S[1]
    return out


def _c2c(x, s, axes, norm, inverse, workers, plan):
    a, single = _array(x)
    axes, s = _axes(a.shape, s, axes)
    _check_plans(plan, len(axes))
    norm = _norm(norm)
    for ax, n in zip(axes, s):
        a = _resize(a, ax, n if n is not None else _length(a.shape[ax]))
    order = list(reversed(list(enumerate(axes))))
    real = not np.iscomplexobj(a) and bool(axes)
    with _threads(workers):
        if real:  # real input enters through [Fr; Fi] (conj(x) = x for the inverse)
            i, ax = order.pop(0)
            S = _along(a, ax, _plan_for(plan, i, a.shape[ax]), real_in=True)
        else:
            S = _split(a)
            if inverse:
                S[1] = -S[1]
        for i, ax in order:
            S = _along(S, ax, _plan_for(plan, i, a.shape[ax]))
    if inverse:
        S[1] = -S[1]
    total = int(np.prod([a.shape[ax] for ax in axes], dtype=np.int64))
    return _finish(_scale(S, norm, inverse, total) if axes else S, single, False)


def _r2c(x, s, axes, norm, workers, plan, conj_out=False, swap=False):
    a, single = _array(x)
    if np.iscomplexobj(a):
        raise TypeError("x must be real for a real-input transform (got complex values)")
    axes, s = _axes(a.shape, s, axes, real=True)
    _check_plans(plan, len(axes))
    norm = _norm(norm)
    for ax, n in zip(axes, s):
        a = _resize(a, ax, n if n is not None else _length(a.shape[ax]))
    last = axes[-1]
    n_last = a.shape[last]
    with _threads(workers):
        S = _along(a, last, _plan_for(plan, len(axes) - 1, n_last), real_in=True)
        S = S[(slice(None),) * (last + 1) + (slice(0, n_last // 2 + 1),)]
        for i, ax in reversed(list(enumerate(axes[:-1]))):
            S = _along(np.ascontiguousarray(S), ax, _plan_for(plan, i, a.shape[ax]))
    total = int(np.prod([a.shape[ax] for ax in axes], dtype=np.int64))
    S = _scale(S, _swap(norm) if swap else norm, False, total)
    if conj_out:
        S = S.copy()
        S[1] = -S[1]
    return _finish(S, single, False)


def _c2r(x, s, axes, norm, workers, plan, conj_in=False, swap=False):
    a, single = _array(x)
    axes, s = _axes(a.shape, s, axes, real=True)
    _check_plans(plan, len(axes))
    norm = _norm(norm)
    last = axes[-1]
    n_last = s[-1] if s[-1] is not None else 2 * (a.shape[last] - 1)
    n_last = _length(n_last)
    for ax, n in zip(axes[:-1], s[:-1]):
        a = _resize(a, ax, n if n is not None else _length(a.shape[ax]))
    a = _resize(a, last, n_last // 2 + 1)
    S = _split(a)
    if not conj_in:  # inverse: conj(DFT(conj(x))); hfft's forward transform of conj(x) is this
        S[1] = -S[1]
    with _threads(workers):
        for i, ax in reversed(list(enumerate(axes[:-1]))):
            S = _along(S, ax, _plan_for(plan, i, a.shape[ax]))
        full = _complete(S, last, n_last)
        R = _along(full, last, _plan_for(plan, len(axes) - 1, n_last), real_out=True)
    total = int(np.prod([a.shape[ax] for ax in axes[:-1]], dtype=np.int64)) * n_last
    return _finish(_scale(R, _swap(norm) if swap else norm, True, total), single, True)


def _complete(S: np.ndarray, last: int, n_last: int) -> np.ndarray:
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


def _one(n) -> list[int] | None:
    """A 1-D function's ``n`` as ``s``: ``None`` or a valid length (scipy refuses -1)."""
    return None if n is None else [_length(n)]


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
    return _c2c(x, _one(n), [axis], norm, False, workers, plan)


def ifft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """1-D inverse DFT (``scipy.fft.ifft``'s signature); see :func:`fft`."""
    return _c2c(x, _one(n), [axis], norm, True, workers, plan)


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
    return _r2c(x, _one(n), [axis], norm, workers, plan)


def irfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`rfft`: real output of length ``n`` (default ``2 (m - 1)``).

    The imaginary parts of the zero (and, for even ``n``, the Nyquist)
    frequency are ignored, as in scipy; the last stage is a real product
    ``[Fr, -Fi] @ [Zr; Zi]``.
    """
    return _c2r(x, _one(n), [axis], norm, workers, plan)


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
    return _c2r(x, _one(n), [axis], norm, workers, plan, conj_in=True,
                swap=True)


def ihfft(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
    """Inverse of :func:`hfft` (``scipy.fft.ihfft``'s signature): ``conj(rfft(x)) / n``."""
    return _r2c(x, _one(n), [axis], norm, workers, plan, conj_out=True,
                swap=True)
