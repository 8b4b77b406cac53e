"""Argument checks shared by ``ozaki.linalg``: matrices, right-hand sides, block size,
product options, ``trans``."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DEFAULT_BLOCK_SIZE", "PRODUCT_OPTIONS", "block_size_of", "product_options",
           "matrix", "rhs", "result_dtype", "trans_of", "square"]

#: Default block size ``nb`` (columns per panel).
DEFAULT_BLOCK_SIZE = 128

#: The keyword arguments passed through to :func:`ozaki.gemm`.
PRODUCT_OPTIONS = ("scheme", "num_moduli", "mode", "engine", "fallback")

_COMPLEX_MSG = ("{name} is complex: ozaki.linalg factors real matrices only for now "
                "(complex factorisations through ozaki.zgemm are future work)")


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


def result_dtype(x: np.ndarray) -> np.dtype:
    """The dtype scipy.linalg returns for input ``x``: float32 for float16/32, else float64."""
    return np.dtype(np.float32) if x.dtype in (np.float16, np.float32) else np.dtype(np.float64)


def _array(a: Any, name: str, check_finite: bool) -> np.ndarray:
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array: pass np.ma.filled({name}) or its data")
    x = np.asarray(a)
    if np.iscomplexobj(x):
        raise NotImplementedError(_COMPLEX_MSG.format(name=name))
    if x.dtype == object or not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
        raise TypeError(f"{name} must be a real numeric array, got dtype {x.dtype}")
    if x.dtype.kind == "f" and x.dtype.itemsize > 8:
        raise TypeError(f"{name} is long double ({x.dtype}): convert it to float64 first")
    if check_finite and x.dtype.kind == "f" and not np.isfinite(x).all():
        raise ValueError("array must not contain infs or NaNs")
    return x


def matrix(a: Any, name: str, check_finite: bool, overwrite: bool, *,
           square_only: bool = True) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """``(work, original, dtype)``: a float64 work array (``a`` itself when ``overwrite``
    and ``a`` is a writable float64 ndarray, else a copy), the input array, and the
    dtype of the result."""
    x = _array(a, name, check_finite)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got {x.ndim} dimension(s) "
                         f"(shape {x.shape})")
    if square_only:
        square(x, name)
    if (overwrite and isinstance(a, np.ndarray) and x is a and x.dtype == np.float64
            and x.flags.writeable):
        return x, x, np.dtype(np.float64)
    return np.array(x, dtype=np.float64, order="C", copy=True), x, result_dtype(x)


def square(x: np.ndarray, name: str) -> None:
    if x.ndim != 2 or x.shape[0] != x.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {x.shape}")


def rhs(b: Any, n: int, check_finite: bool, overwrite: bool, a_shape: tuple,
        name: str = "b") -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """``(work, b, dtype)``: ``b`` (shape (n,) or (n, ...)) as a float64 (n, k) work array."""
    x = _array(b, name, check_finite)
    if x.ndim == 0 or x.shape[0] != n:
        raise ValueError(f"shapes of a {tuple(a_shape)} and {name} {x.shape} are incompatible")
    k = int(np.prod(x.shape[1:], dtype=np.int64))
    if overwrite and x is b and x.dtype == np.float64 and x.flags.writeable:
        return x.reshape(n, k), x, np.dtype(np.float64)  # a view when the layout allows
    return np.array(x.reshape(n, k), dtype=np.float64, copy=True), x, result_dtype(x)


def trans_of(trans: Any) -> int:
    """scipy's ``trans``: 0/'N', 1/'T', 2/'C' (the transpose for real matrices)."""
    table = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}
    try:
        return table[trans]
    except (KeyError, TypeError):
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}") from None
