"""Argument checks shared by ``ozaki.linalg``: matrices, right-hand sides, block size,
product options, ``trans``, and the dtypes scipy.linalg returns."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DEFAULT_BLOCK_SIZE", "PRODUCT_OPTIONS", "block_size_of", "product_options",
           "matrix", "rhs", "array", "result_dtype", "lapack_dtype", "solve_dtype", "work_dtype",
           "same_kind", "trans_of", "square"]

#: Default block size ``nb`` (columns per panel): 256, measured faster than 128 by a
#: quarter at n = 2048 and 4096 (docs/linalg.rst, "Block size").
DEFAULT_BLOCK_SIZE = 256

#: The keyword arguments passed through to :func:`ozaki.gemm`.
PRODUCT_OPTIONS = ("scheme", "num_moduli", "mode", "engine", "fallback")

# scipy.linalg's choice of LAPACK/BLAS precision (scipy.linalg.blas.find_best_blas_type):
# bool, 8- and 16-bit integers and float16/32 score 1 (single), wider integers and float64
# 2 (double), complex64 3, complex128 4; the highest score wins, and complex64 with a
# double-scored array is complex128.
_SCORE = {**{c: 1 for c in "?bBhHef"}, **{c: 2 for c in "iIlLqQd"}, "F": 3, "D": 4}
_BY_SCORE = {1: np.dtype(np.float32), 2: np.dtype(np.float64), 3: np.dtype(np.complex64),
             4: np.dtype(np.complex128)}


def block_size_of(block_size: Any) -> int:
    """``block_size`` as a positive int, or a ``TypeError``/``ValueError`` naming it."""
    if isinstance(block_size, (bool, np.bool_)) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"block_size must be a positive int, got "
                        f"{type(block_size).__name__} {block_size!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {int(block_size)}")
    return int(block_size)


def product_options(routine: str, options: dict) -> dict:
    """Check the product options (names and values) before any work is done."""
    for key in options:
        if key not in PRODUCT_OPTIONS:
            raise TypeError(f"{routine}() got an unexpected keyword argument {key!r} "
                            f"(product options are {', '.join(PRODUCT_OPTIONS)})")
    from ..api.calls import options as resolve_options
    opts = dict(options)
    resolve_options(opts.get("scheme", "auto"), opts.get("num_moduli", "auto"),
                    opts.get("mode", "accurate"), opts.get("engine", "auto"),
                    opts.get("fallback"), False)
    return opts


def lapack_dtype(*arrays: np.ndarray) -> np.dtype:
    """The dtype of scipy.linalg's result for these inputs (its BLAS/LAPACK prefix rule).

    float32 for bool, 8/16-bit integers, float16 and float32; float64 for wider
    integers and float64; complex64 for complex64 (with single-scored arrays only);
    complex128 otherwise. ``lu_factor``, ``lu``, ``cholesky``, ``cho_factor``,
    ``inv``, ``solve_triangular``, ``lu_solve``, ``cho_solve`` follow it.
    """
    scores = [_SCORE.get(x.dtype.char, 2) for x in arrays]
    best = max(scores)
    if best == 3 and 2 in scores:
        best = 4
    return _BY_SCORE[best]


def solve_dtype(*arrays: np.ndarray) -> np.dtype:
    """scipy.linalg.solve's rule: ``np.result_type`` of the inputs; float64 when that is
    not inexact (bool and integers); then single (<= 32 bits) or double precision."""
    dt = np.result_type(*arrays)
    if not np.issubdtype(dt, np.inexact):
        return np.dtype(np.float64)
    cplx = dt.kind == "c"
    if np.finfo(dt).bits <= 32:
        return np.dtype(np.complex64 if cplx else np.float32)
    return np.dtype(np.complex128 if cplx else np.float64)


def result_dtype(x: np.ndarray) -> np.dtype:
    """The dtype scipy.linalg returns for input ``x`` alone (:func:`lapack_dtype`)."""
    return lapack_dtype(x)


def work_dtype(dt: np.dtype) -> np.dtype:
    """The dtype of the computation: float64, or complex128 for a complex ``dt``."""
    return np.dtype(np.complex128 if np.dtype(dt).kind == "c" else np.float64)


def same_kind(*works: np.ndarray) -> list[np.ndarray]:
    """The work arrays, all complex128 (new copies of the real ones) when one is complex."""
    if any(w.dtype.kind == "c" for w in works):
        return [w if w.dtype == np.complex128 else w.astype(np.complex128) for w in works]
    return list(works)


def _array(a: Any, name: str, check_finite: bool) -> np.ndarray:
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array: pass np.ma.filled({name}) or its data")
    x = np.asarray(a)
    if x.dtype == object or not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
        raise TypeError(f"{name} must be a real or complex numeric array, got dtype {x.dtype}")
    if x.dtype.kind in "fc" and work_dtype(x.dtype).itemsize < x.dtype.itemsize:
        raise TypeError(f"{name} is long double ({x.dtype}): convert it to "
                        f"{work_dtype(x.dtype)} first")
    if check_finite and x.dtype.kind in "fc" and not np.isfinite(x).all():
        raise ValueError("array must not contain infs or NaNs")
    return x


def array(a: Any, name: str, *, ndim: int | None = None,
          check_finite: bool = False) -> np.ndarray:
    """``a`` as a real or complex numeric ndarray (a view when it is one; never copied
    here), of ``ndim`` dimensions when given; ``TypeError``/``ValueError`` naming it."""
    x = _array(a, name, check_finite)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got {x.ndim} dimension(s) "
                         f"(shape {x.shape})")
    return x


def matrix(a: Any, name: str, check_finite: bool, overwrite: bool, *,
           square_only: bool = True,
           read_only: bool = False) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """``(work, original, dtype)``: a float64 (complex128 for complex input) work array
    (``a`` itself when ``overwrite`` and ``a`` is a writable ndarray of that dtype,
    else a copy; with ``read_only``, for a caller that never writes it, ``a`` itself
    whenever it has that dtype), the input array, and the dtype of the result
    (:func:`result_dtype`)."""
    x = _array(a, name, check_finite)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got {x.ndim} dimension(s) "
                         f"(shape {x.shape})")
    if square_only:
        square(x, name)
    wdt = work_dtype(x.dtype)
    if (overwrite and isinstance(a, np.ndarray) and x is a and x.dtype == wdt
            and x.flags.writeable):
        return x, x, wdt
    if read_only:
        return np.asarray(x, dtype=wdt), x, result_dtype(x)
    return np.array(x, dtype=wdt, order="C", copy=True), x, result_dtype(x)


def square(x: np.ndarray, name: str) -> None:
    if x.ndim != 2 or x.shape[0] != x.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {x.shape}")


def rhs(b: Any, n: int, check_finite: bool, overwrite: bool, a_shape: tuple,
        name: str = "b") -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """``(work, b, dtype)``: ``b`` (shape (n,) or (n, ...)) as a float64 (complex128 for
    complex ``b``) (n, k) work array, ``b`` as an array, and its :func:`result_dtype`."""
    x = _array(b, name, check_finite)
    if x.ndim == 0 or x.shape[0] != n:
        raise ValueError(f"shapes of a {tuple(a_shape)} and {name} {x.shape} are incompatible")
    k = int(np.prod(x.shape[1:], dtype=np.int64))
    wdt = work_dtype(x.dtype)
    if overwrite and x is b and x.dtype == wdt and x.flags.writeable:
        return x.reshape(n, k), x, wdt  # a view when the layout allows
    return np.array(x.reshape(n, k), dtype=wdt, copy=True), x, result_dtype(x)


def trans_of(trans: Any) -> int:
    """scipy's ``trans``: 0/'N', 1/'T', 2/'C' (the conjugate transpose; the transpose for
    real matrices)."""
    table = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}
    try:
        return table[trans]
    except (KeyError, TypeError):
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}") from None
