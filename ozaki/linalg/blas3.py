"""BLAS-form level-3 routines on the emulated products: :func:`trsm` and :func:`syrk`.

The signatures and semantics of ``scipy.linalg.blas.dtrsm``/``dsyrk`` (``strsm``,
``ctrsm``, ``ztrsm``; ``ssyrk``, ``csyrk``, ``zsyrk``: the precision is chosen from
the arrays as ``scipy.linalg.blas.get_blas_funcs`` chooses it, complex when
``alpha`` or ``beta`` is complex too), blocked so that the ``O(n^3)`` work runs
through :func:`ozaki.gemm` with the caller's product options:

* ``trsm``: the block triangular solve of :mod:`ozaki.linalg.triangular` (diagonal
  blocks in the compiled kernels, one product per block updating every row or
  column still to solve). The right-side form ``X op(A) = B`` is the left-side
  one on the transposes, ``op(A)^T X^T = B^T`` (views, no copy).
* ``syrk``: one product per block of ``nb`` rows of ``C``, ``A_i A_{0:i}^T``
  (lower) or ``A_i A_{i:n}^T`` (upper): only the referenced triangle and the
  diagonal blocks are computed, about half of the full product's flops.

Scalings by ``alpha`` and ``beta`` are single roundings per part: for complex
operands ``s x`` is spelled out, ``(fl(fl(sr xr) - fl(si xi)), fl(fl(sr xi) +
fl(si xr)))`` with separate numpy operations (no fused multiply-add); ``s == 1``
skips the multiplication and ``s == 0`` gives zeros without reading ``x``, as BLAS.
So the results' bits depend only on the operands, ``block_size`` and the product
options. No ``check_finite``: as BLAS, NaN and Inf propagate (in the products with
the exact semantics of :func:`ozaki.gemm`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import (DEFAULT_BLOCK_SIZE, array, block_size_of, lapack_dtype,
                        product_options, trans_of, work_dtype)
from .info import Recorder, result
from .triangular import trsm as block_trsm

__all__ = ["trsm", "syrk"]


def _flag(value: Any, name: str, allowed: tuple = (0, 1)) -> int:
    """A BLAS integer flag (``side``, ``lower``, ``diag``, ...): an int or bool in ``allowed``."""
    if isinstance(value, (bool, np.bool_, int, np.integer)) and int(value) in allowed:
        return int(value)
    raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}, got {value!r}")


def _scalar(value: Any, name: str) -> float | complex:
    from ..api.arguments import scalar
    return scalar(value, name)


def _dtype(arrays: list, scalars: list) -> np.dtype:
    """scipy's BLAS precision for ``arrays``; complex (of that precision) when a scalar is."""
    dt = lapack_dtype(*arrays)
    if dt.kind != "c" and any(isinstance(s, complex) for s in scalars):
        dt = np.dtype(np.complex64 if dt == np.float32 else np.complex128)
    return dt


def scale(s: float | complex, X: np.ndarray) -> np.ndarray:
    """``s X``, one rounding per part (the product spelled out for complex ``X``); ``X``
    itself when ``s == 1``, zeros (``X`` not read) when ``s == 0``."""
    if s == 1:
        return X
    if s == 0:
        return np.zeros_like(X)
    if X.dtype.kind != "c":
        return X * float(s.real if isinstance(s, complex) else s)
    sr, si = float(complex(s).real), float(complex(s).imag)
    out = np.empty_like(X)
    out.real = sr * X.real - si * X.imag
    out.imag = sr * X.imag + si * X.real
    return out


def _work(x: np.ndarray, wdt: np.dtype, in_place: bool) -> np.ndarray:
    """``x`` itself (written in place) or a copy of dtype ``wdt``."""
    if in_place and x.dtype == wdt and x.flags.writeable:
        return x
    return np.array(x, dtype=wdt, order="C", copy=True)


def trsm(alpha: float | complex, a: Any, b: Any, side: int = 0, lower: int = 0,
         trans_a: int | str = 0, diag: int = 0, overwrite_b: int = 0, *,
         block_size: int = DEFAULT_BLOCK_SIZE, return_info: bool = False,
         **product_options_):
    """Triangular solve with several right-hand sides, as ``scipy.linalg.blas.dtrsm``.

    ``X = alpha op(a)^-1 b`` (``side=0``: ``op(a) X = alpha b``) or
    ``X = alpha b op(a)^-1`` (``side=1``: ``X op(a) = alpha b``), ``a`` triangular.
    ``b`` is scaled first (``alpha == 0``: zeros, ``a`` not read), then the blocked
    solve runs: diagonal blocks of ``block_size`` in compiled kernels, the rest of
    the work through :func:`ozaki.gemm`.

    Parameters
    ----------
    alpha : float or complex
    a : (k, k) array_like
        Triangular, ``k = m`` for ``side=0``, ``k = n`` for ``side=1``; only the
        triangle selected by ``lower`` is read (not its diagonal with ``diag=1``).
    b : (m, n) array_like
    side : {0, 1}
        0: ``op(a)`` on the left; 1: on the right.
    lower : {0, 1}
        Read the lower (1) or upper (0) triangle of ``a``.
    trans_a : {0, 1, 2, 'N', 'T', 'C'}
        ``op(a)``: ``a``, ``a^T`` or ``a^H`` (``a^T`` for real ``a``).
    diag : {0, 1}
        1: ``a`` has a unit diagonal (not read).
    overwrite_b : {0, 1}
        1: when ``b`` is a writable ndarray of the result's dtype, float64 or
        complex128, solve in place and return ``b``.
    block_size : int
        Rows (``side=0``) or columns (``side=1``) of ``X`` solved per block
        (default 256). The result's bits depend on it.
    return_info : bool
        Also return a :class:`~ozaki.linalg.LinalgInfo`.
    **product_options_
        ``scheme``, ``num_moduli``, ``mode``, ``engine``, ``fallback`` of
        :func:`ozaki.gemm`.

    Returns
    -------
    x : (m, n) ndarray
        float32, float64, complex64 or complex128 as ``get_blas_funcs`` picks from
        ``a`` and ``b`` (complex too when ``alpha`` is complex; scipy's ``dtrsm``
        would drop the imaginary part). A zero on a non-unit diagonal gives IEEE
        infinities or NaNs, as BLAS (no check).

    Raises
    ------
    ValueError
        ``a`` not square, ``b`` not 2-D, shapes that do not match ``side``, a flag
        out of range, bad ``block_size``, unknown product options.
    TypeError
        Non-numeric, masked or long double arrays; ``alpha`` not a number.
    """
    nb = block_size_of(block_size)
    opts = product_options("trsm", product_options_)
    alpha = _scalar(alpha, "alpha")
    side, lower, diag = _flag(side, "side"), _flag(lower, "lower"), _flag(diag, "diag")
    t = trans_of(trans_a)
    a0, b0 = array(a, "a", ndim=2), array(b, "b", ndim=2)
    m, n = b0.shape
    k = n if side else m
    if a0.shape != (k, k):
        raise ValueError(f"a must have shape {(k, k)} for b of shape {b0.shape} and "
                         f"side={side} ({'X op(a) = alpha b' if side else 'op(a) X = alpha b'}),"
                         f" got {a0.shape}")
    dt = _dtype([a0, b0], [alpha])
    wdt = work_dtype(dt)
    rec = Recorder("trsm", a0.shape, nb, opts)
    X = _work(b0, wdt, bool(_flag(overwrite_b, "overwrite_b")) and b0 is b and dt == wdt)
    with rec.phase("other"):
        S = scale(alpha, X)
        if S is not X:
            X[...] = S
    if alpha != 0 and X.size:
        A = np.asarray(a0, dtype=wdt)
        if t == 2 and A.dtype.kind == "c":
            A = A.conj()  # op(a) = conj(a)^T (a copy: conjugation is exact)
        # the left-side solve T Y = Y on Y = X (side 0) or Y = X^T (side 1)
        transpose = (t != 0) != bool(side)
        T, low = (A.T, not lower) if transpose else (A, bool(lower))
        block_trsm(T, X.T if side else X, low, bool(diag), nb, rec)
    x = X if X.dtype == dt else X.astype(dt)
    return result(x, rec, return_info)


def syrk(alpha: float | complex, a: Any, beta: float | complex = 0.0, c: Any = None,
         trans: int | str = 0, lower: int = 0, overwrite_c: int = 0, *,
         block_size: int = DEFAULT_BLOCK_SIZE, return_info: bool = False,
         **product_options_):
    """Symmetric rank-k update, as ``scipy.linalg.blas.dsyrk`` (``zsyrk`` for complex).

    ``C = alpha a a^T + beta c`` (``trans=0``, ``a`` of shape (n, k)) or
    ``C = alpha a^T a + beta c`` (``trans=1``, ``a`` of shape (k, n)): the plain
    transpose for complex ``a`` too (``zsyrk``; a Hermitian ``herk`` is not
    provided). Only the triangle selected by ``lower`` is computed and written; the
    other triangle is ``c``'s (zeros when ``c`` is None), as BLAS leaves it.

    In the referenced triangle each entry is ``fl(fl(alpha X) + fl(beta c))`` with
    ``X`` the FP64-grade product (one :func:`ozaki.gemm` call per block of
    ``block_size`` rows of ``C``); ``beta == 0`` does not read ``c``, ``alpha == 0``
    or ``k == 0`` does not read ``a`` (``C = beta c``), as BLAS.

    Parameters
    ----------
    alpha, beta : float or complex
    a : (n, k) or, with ``trans``, (k, n) array_like
    c : (n, n) array_like, optional
        Read in the referenced triangle unless ``beta == 0``.
    trans : {0, 1, 2, 'N', 'T', 'C'}
        0: ``a a^T``; 1 (2, 'C' for real ``a``): ``a^T a``. ``trans=2`` with
        complex ``a`` raises (``zsyrk`` refuses it).
    lower : {0, 1}
        Compute the lower (1) or upper (0) triangle.
    overwrite_c : {0, 1}
        1: when ``c`` is a writable ndarray of the result's dtype, float64 or
        complex128, update it in place and return it.
    block_size : int
        Rows of ``C`` per product (default 256). The result's bits depend on it.
    return_info, **product_options_
        As :func:`trsm`.

    Returns
    -------
    c : (n, n) ndarray
        The dtype ``get_blas_funcs`` picks from ``a`` and ``c`` (complex too when
        ``alpha`` or ``beta`` is complex).

    Raises
    ------
    ValueError
        ``a`` not 2-D, ``c`` not of shape (n, n), ``trans=2`` with complex ``a``, a
        flag out of range, bad ``block_size``, unknown product options.
    TypeError
        Non-numeric, masked or long double arrays; ``alpha`` or ``beta`` not a number.
    """
    nb = block_size_of(block_size)
    opts = product_options("syrk", product_options_)
    alpha, beta = _scalar(alpha, "alpha"), _scalar(beta, "beta")
    lower = _flag(lower, "lower")
    t = trans_of(trans)
    a0 = array(a, "a", ndim=2)
    if t == 2 and a0.dtype.kind == "c":
        raise ValueError("trans=2 ('C') is not valid for complex a in syrk (zsyrk takes 0 or "
                         "1: a a^T or a^T a, the plain transpose)")
    n, k = a0.shape[::-1] if t else a0.shape
    c0 = None if c is None else array(c, "c", ndim=2)
    if c0 is not None and c0.shape != (n, n):
        raise ValueError(f"c must have shape {(n, n)} for a of shape {a0.shape} and "
                         f"trans={trans!r}, got {c0.shape}")
    dt = _dtype([a0] + ([c0] if c0 is not None else []), [alpha, beta])
    wdt = work_dtype(dt)
    rec = Recorder("syrk", (n, k), nb, opts)
    in_place = bool(_flag(overwrite_c, "overwrite_c")) and c0 is c and dt == wdt
    C = np.zeros((n, n), dtype=wdt) if c0 is None else _work(c0, wdt, in_place)
    if n == 0 or ((alpha == 0 or k == 0) and beta == 1):
        return result(C if C.dtype == dt else C.astype(dt), rec, return_info)
    A = np.asarray(a0, dtype=wdt)
    A = A.T if t else A  # (n, k)
    for i0 in range(0, n, nb):
        i1 = min(i0 + nb, n)
        cols = slice(0, i1) if lower else slice(i0, n)
        with rec.phase("other"):
            Cb = scale(beta, C[i0:i1, cols])
        if alpha != 0 and k:
            X = rec.product(A[i0:i1], A[cols], trans_b="T")
            with rec.phase("other"):
                X = scale(alpha, X)
                Cb = X if beta == 0 else X + Cb
        with rec.phase("other"):
            # the diagonal block: its referenced triangle only
            d = slice(i0, i1) if lower else slice(0, i1 - i0)
            keep = np.tri(i1 - i0, dtype=bool)
            keep = keep if lower else keep.T
            D = C[i0:i1, i0:i1]
            D[keep] = Cb[:, d][keep]
            if lower:
                C[i0:i1, :i0] = Cb[:, :i0]
            else:
                C[i0:i1, i1:] = Cb[:, i1 - i0:]
    return result(C if C.dtype == dt else C.astype(dt), rec, return_info)
