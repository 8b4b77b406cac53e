"""``matmul``: stacks of products with ``np.matmul`` semantics, decided slice by slice."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .arguments import operand
from ..backends.engines import Engine
from .calls import check_out, options, shape_of, side_check, stacked
from .prepared import PreparedOperand
from ..core.backend import Backend
from ..core.kind import kind_of

__all__ = ["matmul"]


def matmul(A: Any, B: Any, *, scheme: str = "auto",
           num_moduli: int | Literal["auto"] = "auto", mode: str = "accurate",
           engine: str | Engine | None = "auto", fallback: str | None = None,
           out: np.ndarray | None = None, return_info: bool = False, bounds: bool = False,
           backend: str | Backend | None = None):
    """``A @ B`` with ``np.matmul`` semantics, FP64-grade, real or complex.

    Stacks ``(..., m, k) @ (..., k, n)`` broadcast over their leading
    dimensions; a 1-D ``A`` is a row (its dimension removed from the result),
    a 1-D ``B`` a column, as in numpy. **Each slice's result is bitwise equal to**
    :func:`dgemm` (or :func:`zgemm`) **on that slice**: decisions and counts are
    per slice. The modular products run as one batched GEMM per modulus, and
    where one operand is shared by the whole stack and its shifts agree across
    the stack (always in fast mode at one count), as one wide GEMM.

    Parameters
    ----------
    A : array_like or PreparedOperand, shape (..., m, k) or (k,)
    B : array_like or PreparedOperand, shape (..., k, n) or (k,)
    scheme, num_moduli, mode, engine, fallback, out, return_info, bounds, backend
        As in :func:`dgemm`. ``out`` has the result's shape and dtype.

    Returns
    -------
    ndarray, shape (..., m, n) (numpy's result shape), float64 or complex128
        A numpy scalar (``np.float64`` or ``np.complex128``) when both operands
        are 1-D, as ``np.matmul`` returns (the 0-d ``out`` when one is given).
    info : OzakiInfo
        One record for the call: ``num_moduli`` the largest count,
        ``slice_moduli`` the count of each slice (the batch's shape),
        ``uncertified`` and ``fallback_entries`` totals; ``error_bound`` has the
        result's shape.

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> A = np.arange(12.0).reshape(3, 2, 2)
    >>> bool(np.array_equal(ozaki.matmul(A, A), np.matmul(A, A)))
    True
    """
    side_check(A, "left", "A")
    side_check(B, "right", "B")
    if not isinstance(A, PreparedOperand):
        A = operand(A, "A", ndim=None)
    if not isinstance(B, PreparedOperand):
        B = operand(B, "B", ndim=None)
    sa, sb = shape_of(A, "A"), shape_of(B, "B")
    drop_m, drop_n = len(sa) == 1, len(sb) == 1
    if drop_m and isinstance(A, np.ndarray):
        A = A[None, :]
    if drop_n and isinstance(B, np.ndarray):
        B = B[:, None]
    sa, sb = shape_of(A, "A"), shape_of(B, "B")
    if sa[-1] != sb[-2]:
        raise ValueError(f"matmul: inner dimensions differ: A is {sa}, B is {sb}")
    try:
        batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dimensions do not broadcast: A is {sa}, B is {sb}"
                         ) from None
    m, k, n = sa[-2], sa[-1], sb[-1]
    b = int(np.prod(batch, dtype=np.int64))
    is_c = any(X.is_complex if isinstance(X, PreparedOperand) else np.iscomplexobj(X)
               for X in (A, B))
    opts = options(scheme, num_moduli, mode, engine, fallback, bounds, backend)
    shape = batch + (() if drop_m else (m,)) + (() if drop_n else (n,))
    dtype = np.complex128 if is_c else np.float64
    check_out(out, shape, dtype, A, B)

    def stack(X, s):
        if isinstance(X, PreparedOperand):
            if int(np.prod(s[:-2], dtype=np.int64)) not in (1, b):
                raise ValueError("a prepared operand must be 2-D or have the full batch shape")
            return X
        if int(np.prod(s[:-2], dtype=np.int64)) == 1:  # shared by the whole stack
            return X.reshape((1,) + s[-2:])
        return np.broadcast_to(X, batch + s[-2:]).reshape((b,) + s[-2:])

    C, info = stacked(stack(A, sa), stack(B, sb), opts, kind_of(is_c), b, m, n, k)
    info.slice_moduli = np.asarray(info.slice_moduli).reshape(batch)
    if info.error_bound is not None:
        info.error_bound = info.error_bound.reshape(shape)
    C = C.reshape(shape)
    if out is not None:
        out[...] = C
        C = out
    elif C.ndim == 0:  # 1-D @ 1-D: a numpy scalar, as np.matmul returns
        C = C[()]
    return (C, info) if (return_info or bounds) else C
