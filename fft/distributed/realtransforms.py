"""``dctn``, ``dstn``, ``idctn``, ``idstn`` of distributed 3-D arrays, bitwise equal to serial.

The serial n-D transforms (:mod:`fft.realtransforms`) run the 1-D transform along each
of ``axes``, last to first, on the whole array (for complex input: on its real and
imaginary parts, as one batch). Each 1-D step is per line -- the reduction, the
extension, the twiddle passes, the FFT, the normalisation depend on the line alone --
with **one exception: the range scale**. On the mirrored and reduced paths a step first
finds the largest finite magnitude of the *whole* array it is given and, if the
transform of that magnitude could overflow, scales everything by a power of two
(``_shift`` / ``range_shift``, and inside the mirrored path the rfft's own
``_range_shift`` of the extension, whose orthogonalised endpoints carry a factor
``sqrt 2``). A rank holding a block of lines sees only its own largest magnitude, so the
distributed transform must give each step the global one. The direct path (the short
lengths, :mod:`fft.direct`) reads no global value: no range scale, one product whose
shifts, certificate and fallback are per line and column, so a line's bits are its own
whatever else is in the batch (the peaks line included). The tests check both: with its
own peaks only, a rank's tiny lines lose the serial bits above the direct lengths and
keep them at those lengths (``tests/test_fft_distributed_r2r.py``).

**The peaks line.** Every global value the serial step reads (none on the direct path)
is the largest, over all entries, of a function ``g_j(|x|)`` that depends only on the
position ``j`` along the axis and does not decrease with ``|x|`` (``|x| 2**-s``,
rounded, times ``sqrt 2`` at an orthogonalised endpoint: rounding is monotone), over
finite entries only. So with ``peaks[j]``, the largest finite ``|x|`` at position ``j``
over *every* line of the array (0 where there is none), the line ``peaks`` reaches each
of those maxima: a
batch made of this rank's lines plus ``peaks`` has the same global values as the whole
array, every line of it is transformed as in the serial call, and the extra line is
dropped. The ranks agree on ``peaks`` by one ``Allreduce(MAX)`` of ``N`` doubles per
axis (exact: a maximum rounds nothing). The batch goes through the *public* serial 1-D
function (:func:`fft.dct`, :func:`fft.idct`, :func:`fft.dst`, :func:`fft.idst` along
the last axis, the same type, norm and resolved ``orthogonalize``), which is the very
step the serial n-D function takes along each axis, so whatever path the serial code
takes for a length (mirrored, reduced, direct) the distributed one takes too.

The exchanges are those of :func:`fft.distributed.fftn`: one ``Alltoallv`` before each
axis that is not local (values moved, never combined), and the layout ends where they
leave it: from ``(0, 1)`` the default axes end in ``(1, 2)``, and ``axes=(2, 1, 0)``
from there returns to ``(0, 1)``:

>>> Y = dctn(x, type=2)                       # = fft.dctn(X)                  # doctest: +SKIP
>>> x2 = idctn(Y, type=2, axes=(2, 1, 0))     # = fft.idctn(Y_, axes=(2, 1, 0)) # doctest: +SKIP
"""

from __future__ import annotations

import operator
import time

import numpy as np

from ozaki.distributed.layout import agree
from ozaki.distributed.traffic import allreduce

from ..realtransforms import dct, dst, idct, idst
from ..transforms import check_norm, get_plan
from .layout import DistributedArray
from .transforms import FFTInfo, TransformRun, axes_order, plan_fingerprint

__all__ = ["dctn", "idctn", "dstn", "idstn", "range_peaks", "transform_lines"]

#: The serial 1-D transform that is one step of each n-D function.
ONE_D = {("dct", False): dct, ("dct", True): idct, ("dst", False): dst, ("dst", True): idst}


def range_peaks(lines: np.ndarray) -> np.ndarray:
    """The largest finite magnitude at each position of a batch of lines.

    Parameters
    ----------
    lines : ndarray, float64, shape (B, N)

    Returns
    -------
    ndarray, float64, shape (N,)
        ``max_b |lines[b, j]|`` over the finite entries (``0.0`` where there is none,
        and for ``B = 0``); non-negative, so the maximum over ranks is an
        ``Allreduce(MAX)``.
    """
    finite = np.isfinite(lines)
    return np.abs(lines, where=finite, out=np.zeros(lines.shape)).max(axis=0, initial=0.0)


def transform_lines(lines: np.ndarray, peaks: np.ndarray, kind: str, type: int,
                    inverse: bool, norm: str, orthogonalize: bool, workers=None
                    ) -> np.ndarray:
    """One serial 1-D step on a rank's lines, given the peaks of all ranks' lines.

    Parameters
    ----------
    lines : ndarray, float64, shape (B, N)
        This rank's lines along the transformed axis (both parts of complex data).
    peaks : ndarray, float64, shape (N,)
        :func:`range_peaks` over every line of the global array (all ranks).
    kind : {"dct", "dst"}
    type : {1, 2, 3, 4}
    inverse : bool
        The inverse transform of ``type`` (:func:`fft.idct`, :func:`fft.idst`).
    norm : {"backward", "ortho", "forward"}
    orthogonalize : bool
        Resolved (serial default: ``norm == "ortho"``).
    workers : int, optional

    Returns
    -------
    ndarray, float64, shape (B, N)
        The bits the serial n-D transform gives these lines at this step (module
        docstring: the extra line ``peaks`` makes the batch's range scale the whole
        array's). ``lines`` is not modified.
    """
    B, N = lines.shape
    if B == 0:
        return np.empty((0, N))
    batch = np.empty((B + 1, N))
    batch[:B] = lines
    batch[B] = peaks
    out = ONE_D[kind, inverse](batch, type=type, axis=-1, norm=norm, workers=workers,
                               orthogonalize=orthogonalize)
    return out[:B]


def _check(x, type, axes, norm, workers, orthogonalize, kind: str, inverse: bool):
    """Validate and agree on the arguments on every rank (the same error everywhere).

    The serial function's own checks (type, norm, workers, DCT-I of one point) run on
    a line of ``min(2, shape)`` zeros: the same errors as the serial call, cheaply.
    Returns ``(type, axes, norm, orthogonalize)``.
    """
    if not isinstance(x, DistributedArray):  # no communicator to agree on
        raise TypeError(f"x must be a fft.distributed.DistributedArray (see scatter), got "
                        f"{x.__class__.__name__}")

    def check():
        x.validate()
        ax = axes_order(axes)
        ONE_D[kind, inverse](np.zeros(min(2, *x.shape)), type=type, norm=norm,
                             workers=workers, orthogonalize=orthogonalize)
        t, nm = operator.index(type), check_norm(norm)
        ortho = nm == "ortho" if orthogonalize is None else bool(orthogonalize)
        # the same engine, scheme and mode everywhere (what makes a plan's bits)
        fingerprint = [plan_fingerprint(get_plan(n)) for n in x.shape]
        return (x.shape, x.split, (x.grid.P, x.grid.Q), np.iscomplexobj(x.local), t, ax, nm,
                ortho, fingerprint)

    got = agree(x.grid.comm, check)
    return got[4:8]


def _r2r(x, type, axes, norm, workers, orthogonalize, kind: str, inverse: bool,
         return_info: bool):
    from mpi4py import MPI

    t, axes, norm, ortho = _check(x, type, axes, norm, workers, orthogonalize, kind,
                                  inverse)
    info = FFTInfo()
    run = TransformRun(x, info)
    complex_in = np.iscomplexobj(x.local)
    S = run.passes(lambda a: np.stack([a.real, a.imag]) if complex_in else a[None], x.local)
    for ax in reversed(axes):
        S = run.local(S, ax, 1)
        t0 = time.perf_counter()
        moved = np.moveaxis(S, ax + 1, -1)
        lines = moved.reshape(-1, moved.shape[-1])
        peaks = range_peaks(lines)
        allreduce(x.grid.comm, peaks, MPI.MAX, info.traffic, "range")
        t1 = time.perf_counter()
        out = transform_lines(lines, peaks, kind, t, inverse, norm, ortho, workers)
        S = np.moveaxis(out.reshape(moved.shape), -1, ax + 1)
        info.seconds["passes"] += t1 - t0
        info.seconds["transforms"] += time.perf_counter() - t1
    out = run.result(S if complex_in else S[0], not complex_in)
    return (out, info) if return_info else out


_DOC = """{title} of a distributed 3-D array, bitwise equal to ``fft.{name}(X, type,
    axes=axes, norm=norm, orthogonalize=orthogonalize)`` on the whole array ``X``.

    Computed by the serial 1-D :func:`fft.{one}` along each axis, last of ``axes``
    first, on the rank's lines plus one line of the global range peaks (module
    docstring), with an exchange before each axis that is not local.

    Parameters
    ----------
    x : DistributedArray
        Real (float64) or complex (complex128), in any layout; not modified.
    type : {{1, 2, 3, 4}}
        The transform's type (default 2).
    axes : sequence of 3 int, optional
        The order of the axes (a permutation of ``(0, 1, 2)``, default that): the last
        runs first. The bits are the serial call's with the same ``axes``; the order
        decides the exchanges (:func:`fftn`).
    norm : {{"backward", "ortho", "forward"}}, optional
    workers : int, optional
        Caps this rank's threads.
    orthogonalize : bool, optional
        scipy's endpoint weighting (default: ``norm == "ortho"``).
    return_info : bool
        Also return an :class:`FFTInfo` (its traffic counts the peaks as ``"range"``).

    Returns
    -------
    DistributedArray, float64 (complex128 for complex input)
        The transform, in the layout the last exchange left (its ``split``).

    Raises
    ------
    TypeError, ValueError, RuntimeError
        The serial call's errors (bad type, norm, workers; ``RuntimeError`` for a DCT
        of type 1 along an axis of one point), and :func:`fftn`'s (axes not a
        permutation, ranks that disagree), on every rank.
    """


def _doc(name: str, title: str, one: str):
    def wrap(fn):
        fn.__doc__ = _DOC.format(name=name, title=title, one=one)
        return fn
    return wrap


@_doc("dctn", "3-D discrete cosine transform of types 1-4", "dct")
def dctn(x: DistributedArray, type: int = 2, axes=None, norm: str | None = None,
         workers: int | None = None, *, orthogonalize: bool | None = None,
         return_info: bool = False):
    return _r2r(x, type, axes, norm, workers, orthogonalize, "dct", False, return_info)


@_doc("idctn", "3-D inverse discrete cosine transform", "idct")
def idctn(x: DistributedArray, type: int = 2, axes=None, norm: str | None = None,
          workers: int | None = None, *, orthogonalize: bool | None = None,
          return_info: bool = False):
    return _r2r(x, type, axes, norm, workers, orthogonalize, "dct", True, return_info)


@_doc("dstn", "3-D discrete sine transform of types 1-4", "dst")
def dstn(x: DistributedArray, type: int = 2, axes=None, norm: str | None = None,
         workers: int | None = None, *, orthogonalize: bool | None = None,
         return_info: bool = False):
    return _r2r(x, type, axes, norm, workers, orthogonalize, "dst", False, return_info)


@_doc("idstn", "3-D inverse discrete sine transform", "idst")
def idstn(x: DistributedArray, type: int = 2, axes=None, norm: str | None = None,
          workers: int | None = None, *, orthogonalize: bool | None = None,
          return_info: bool = False):
    return _r2r(x, type, axes, norm, workers, orthogonalize, "dst", True, return_info)
