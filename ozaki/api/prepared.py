"""Prepared operands: what depends on one operand alone, computed once."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import get_backend
from ..core.backend import Backend
from ..core.kind import Kind, kind_of
from ..core.operands import Prepared
from .arguments import operand

__all__ = ["PreparedOperand", "prepare", "embed"]


class PreparedOperand:
    """An operand whose decision data and residues are computed once (:func:`prepare`).

    Pass it as ``A`` (``side="left"``) or ``B`` (``side="right"``) of
    :func:`dgemm`, :func:`gemm`, :func:`zgemm` or :func:`matmul` in place of the
    array: the products give the bits of unprepared calls (everything kept is
    exact), and skip what depends on this operand alone. A real prepared operand
    also serves complex products (:func:`zgemm`, or :func:`gemm` and
    :func:`matmul` with a complex other operand), taken as complex as an
    unprepared real array is; a complex one serves only complex products.

    Attributes
    ----------
    array : ndarray
        The operand (float64 or complex128, never modified).
    side : {"left", "right"}
    shape : tuple of int
    """

    def __init__(self, array: np.ndarray, side: str, keep_residues: bool):
        self.array = array
        self.side = side
        self.shape = array.shape
        self.is_complex = np.iscomplexobj(array)
        self._keep_residues = keep_residues
        self._prepared: dict[tuple, Prepared] = {}  # per (kind, backend)

    def __repr__(self) -> str:
        kind = "complex" if self.is_complex else "real"
        return f"PreparedOperand({kind}, shape={self.shape}, side={self.side!r})"

    def stack(self, kind: Kind, backend) -> Prepared:
        """The prepared stack for a real or (embedded) complex product on ``backend``
        (formed at its first use there; each backend keeps its own data, in its own
        arrays: they are exact, so every backend's products give the same bits)."""
        got = self._prepared.get((kind, backend))
        if got is None:
            X = self.array.reshape((-1,) + self.shape[-2:])
            outer = 0 if self.side == "left" else 1
            got = Prepared(backend.operand(embed(X, outer) if kind.complex else X, outer), backend,
                           keep=True, keep_residues=self._keep_residues)
            self._prepared[(kind, backend)] = got
        return got


def prepare(A: Any, *, side: str = "left", keep_residues: bool = True,
            backend: str | Backend | None = None) -> PreparedOperand:
    """Prepare an operand that several products will use.

    Parameters
    ----------
    A : array_like, shape (..., m, k) (left) or (..., k, n) (right)
        Real or complex; copied once if it is not already float64/complex128.
        The dtypes :func:`dgemm` takes: long double (``TypeError``) and
        64-bit integers beyond ``2**53`` (``ValueError``) are refused.
    side : {"left", "right"}
        Which factor it will be.
    keep_residues : bool
        Also keep its residue planes for the shifts it was last used with (one
        per modulus: up to N times the operand's size, outside the workspace
        limit): a later product that picks the same shifts (always in fast mode
        at the same count) skips forming them. The line data, floors and norm
        sums are kept either way.
    backend : str or Backend, optional
        Form its data now on this backend (as for :func:`dgemm`) rather than at its
        first product. A prepared operand serves every backend: each keeps its own
        data (exact), formed at the first product there.

    Returns
    -------
    PreparedOperand

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> F = ozaki.prepare(np.eye(4))
    >>> X = np.arange(8.0).reshape(4, 2)
    >>> bool(np.array_equal(ozaki.dgemm(F, X), ozaki.dgemm(np.eye(4), X)))
    True
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    be = None if backend is None else get_backend(backend)
    arr = operand(A, "A", ndim=None)
    if arr.ndim < 2:
        raise ValueError(f"A must be at least 2-D to be prepared, got shape {arr.shape}")
    arr = np.array(arr, copy=True)  # never changes under the caller's feet
    arr.flags.writeable = False
    prepared = PreparedOperand(arr, side, keep_residues)
    if be is not None:  # the line data now (and the complex stack for a complex operand)
        prepared.stack(kind_of(prepared.is_complex), be)
    return prepared


def embed(X: np.ndarray, outer: int) -> np.ndarray:
    """The real embedding of a complex stack: ``[Xr, Xi]`` (left) or ``[Xr; Xi]`` (right)."""
    X = X.astype(np.complex128, copy=False)
    return np.concatenate((X.real, X.imag), axis=2 if outer == 0 else 1)
