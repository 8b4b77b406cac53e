"""Short DCTs and DSTs as one FP64-grade product with the double-double matrix.

The ``"direct"`` path of :mod:`fft.realtransforms`: the lengths at which
:func:`fft.reduced.reduction` says ``"direct"`` (:data:`fft.reduced.MAX_DIRECT`,
:data:`fft.reduced.MAX_DIRECT_ODD_IV`; the thresholds are argued in
:mod:`fft.realtransforms`). Every output is a nearest double of the exact normalised
transform, up to terms far below half an ulp.

**The product.** ``C = Chi + Clo`` (:func:`fft.tables.r2r_matrix_dd`) holds scipy's
weights, the norm's ``1/L`` or ``1/sqrt L`` and ``orthogonalize``'s ``sqrt 2`` factors,
each entry within ``2**-103`` relative of the exact one, and the lines ``x`` (rows) are
multiplied as ``[x, x] @ [Chi^T; Clo^T]``: **one** emulated product of inner length
``2N`` (:func:`ozaki.dgemm`, fast mode, ``fallback="exact"``) at a count whose moduli's
product exceeds ``2**(2 DIRECT_BITS + 1) 2N`` (13 moduli of the ``fp64`` scheme, taken
whatever the plans' scheme: ``int8``'s 20 reach only about 155 bits).

**Why each output is a nearest double.** Fast mode makes about ``DIRECT_BITS = 128`` bits
of each line and each column integers, which keeps every bit of ``Chi`` and ``Clo`` and,
of ``x``, everything above ``2**-128 max|x|``; the CRT recovers the product of those
integers exactly and ozaki's compensated reconstruction rounds it once, up to its
``gamma**2`` terms. So each output is a nearest double of the exact normalised transform,
up to ``2**-100 sum_n |C_jn x_n| + 2**-127 ||C_j||_1 max|x|``. Any float64 result
(scipy's included) is a double, so none is nearer: on every output our error is at most
scipy.fft's up to those terms, hence so are the L2 and max errors
(``tests/test_fft_r2r_short.py`` checks each output against mpmath). A product of the
correctly rounded entries alone would add up to ``u/2`` per term (the tests show outputs
it misses).

**Range, special values, batches.** The product needs no range scaling (ozaki computes
an entry whose ``(|A||B|)_ij`` may reach ``2**1023`` by its exactly rounded dot product:
a result that fits is finite), follows exact arithmetic on ``inf``/NaN, and its shifts,
certificate and fallback are per line and column: a line's bits never depend on the
batch, and the path reads no value of the other lines (no global range scale, unlike the
mirrored and reduced paths).

**Cost.** ``13 * 2N**2`` multiply-adds per line, plus about 0.5 ms per call; the matrix
is prepared once per ``(kind, type, N, normalisation, options)`` (:func:`prepared_matrix`,
cached).
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

import ozaki

from . import tables
from . import transforms as _t
from .plan import StageRecord
from .records import record

__all__ = ["DIRECT_BITS", "SCALINGS", "prepared_matrix", "transform"]

#: Bits a direct product keeps of each line and each matrix column (module docstring).
DIRECT_BITS = 128
#: The normalisations: none, divide by ``L``, divide by ``sqrt L`` (:func:`transform`).
SCALINGS = ("none", "n", "sqrt")


@functools.lru_cache(maxsize=64)
def prepared_matrix(kind: str, t: int, N: int, scaling: str, ortho: bool,
                    options: tuple) -> tuple[ozaki.PreparedOperand, int, dict]:
    """The prepared matrix of a direct transform, its count and the product's options.

    Parameters
    ----------
    kind : {"dct", "dst"}
    t : {1, 2, 3, 4}
        The type each line computes (an inverse already mapped).
    N : int
        Line length, ``N >= 1`` (``>= 2`` for DCT-I).
    scaling : {"none", "n", "sqrt"}
        The normalisation (:data:`SCALINGS`).
    ortho : bool
        ``orthogonalize``.
    options : tuple of (str, object) pairs
        :class:`fft.Plan`'s keywords, sorted (hashable: the cache's key).

    Returns
    -------
    prepared : ozaki.PreparedOperand
        ``[Chi^T; Clo^T]`` of :func:`fft.tables.r2r_matrix_dd`, shape ``(2N, N)``.
    count : int
        The number of moduli: the smallest whose product reaches ``2**(2 DIRECT_BITS +
        1) 2N`` (13 for ``fp64``, where fast mode keeps about ``DIRECT_BITS`` bits of
        each side), at most the scheme's (``"int8"``'s 20 moduli keep about 74).
    opts : dict
        ``scheme``, ``mode``, ``engine`` for :func:`ozaki.dgemm`: the scheme is
        ``"fp64"`` unless the options name one (or an engine without it: its own).
    """
    opts = dict(options)
    scheme, mode = opts.get("scheme", "auto"), opts.get("mode", "fast")
    engine = opts.get("engine", "auto")
    if scheme == "auto":
        try:
            scheme = ozaki.resolve_options("fp64", "auto", mode, engine).scheme
        except ValueError:  # an engine that does not run it: its own
            scheme = ozaki.resolve_options("auto", "auto", mode, engine).scheme
    need, bits, count = 2 * DIRECT_BITS + 1 + math.log2(2 * N), 0.0, 0
    for m in ozaki.moduli(scheme):
        if bits >= need:
            break
        bits, count = bits + math.log2(m), count + 1
    prepared = ozaki.prepare(tables.r2r_matrix_dd(kind, t, N, scaling, ortho), side="right",
                             keep_residues=N <= 16)  # planes of a longer one: rebuilt per call
    return prepared, count, {"scheme": scheme, "mode": mode, "engine": engine}


def transform(a: np.ndarray, kind: str, t: int, scaling: str, ortho: bool, *,
              workers: int | None = None, options: dict | None = None) -> np.ndarray:
    """The normalised DCT or DST of the last axis of ``a`` as one product, the lines as
    the rows of ``[x, x] @ [Chi^T; Clo^T]`` (module docstring).

    Parameters
    ----------
    a : ndarray, float64, shape (..., N)
        The lines (not modified).
    kind : {"dct", "dst"}
    t : {1, 2, 3, 4}
        The type each line computes (an inverse already mapped, its normalisation's
        direction swapped in ``scaling``).
    scaling : {"none", "n", "sqrt"}
        Divide by 1, by scipy's ``L`` or by ``sqrt L`` (:data:`SCALINGS`), in the matrix.
    ortho : bool
        ``orthogonalize`` (scipy's endpoint weighting), in the matrix.
    workers : int, optional
        Caps the product's threads (default: all).
    options : dict, optional
        :class:`fft.Plan`'s keywords (:func:`fft.realtransforms.plan_options`): the
        product's ``scheme``, ``mode`` and ``engine``; ``native=True`` multiplies by
        numpy's FP64 GEMM instead (the benchmarks' baseline).

    Returns
    -------
    ndarray, float64, shape of ``a``
        Records one :class:`fft.StageRecord` of form ``"direct"`` (radix ``N``, columns
        the number of lines).
    """
    if kind not in ("dct", "dst") or t not in (1, 2, 3, 4):
        raise ValueError(f"kind must be 'dct' or 'dst' and t one of 1-4, got {kind!r}, {t!r}")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    opts = {} if options is None else options
    N = a.shape[-1]
    x = np.ascontiguousarray(a).reshape(-1, N)
    if not x.size:
        return np.zeros(a.shape)
    X = np.concatenate([x, x], axis=1)
    t0 = time.perf_counter()
    if opts.get("native"):
        y, count, gemms = X @ tables.r2r_matrix_dd(kind, t, N, scaling, ortho), 0, 0
    else:
        prepared, count, o = prepared_matrix(kind, t, N, scaling, ortho,
                                             tuple(sorted(opts.items())))
        with _t.limit_threads(workers):
            y, info = ozaki.dgemm(X, prepared, num_moduli=count, fallback="exact",
                                  return_info=True, **o)
        gemms = info.gemms
    record(StageRecord(N, x.shape[0], "direct", count, gemms, time.perf_counter() - t0))
    return y.reshape(a.shape)
