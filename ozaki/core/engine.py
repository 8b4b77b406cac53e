"""The engine contract: an exact integer GEMM over a given operand range and accumulator.

An engine multiplies integer-valued matrices **exactly**. Exactness is a proof
obligation on the sum of absolute values of the terms, so it holds in any order
and any blocking: the caller guarantees ``|x| <= operand_max`` for every operand
and ``sum_l |x_il| |y_lj| <= 2**53``; the engine blocks over ``k`` so that its own
accumulator never exceeds its exact range, and adds the blocks in FP64 (exact,
by the caller's bound). The phases read only this contract; a backend provides
the engines (:mod:`ozaki.backends.engines` for the host backends).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Engine", "exact_out", "FP32_EXACT", "INT32_MAX"]


#: Integers up to this magnitude are exact in FP32 (24-bit significand).
FP32_EXACT = 2 ** 24
#: Largest INT32, the bound of an engine's INT32 ``out``.
INT32_MAX = 2 ** 31 - 1


def exact_out(shape: tuple[int, ...], bound: int, buf: np.ndarray | None = None) -> np.ndarray:
    """The destination of an exact product whose entries are integers at most ``bound``.

    FP32 where they are exact there (``bound <= 2**24``: half the bytes for the
    passes that read it), else FP64; in the memory of ``buf`` (FP64,
    C-contiguous, of ``shape``) when given.
    """
    dtype = np.float32 if bound <= FP32_EXACT else np.float64
    if buf is None:
        return np.empty(shape, dtype)
    return buf.reshape(-1).view(dtype)[:buf.size].reshape(shape)


class Engine:
    """Base class: an exact integer GEMM with a given operand range and accumulator.

    Parameters
    ----------
    max_kblock : int, optional
        Upper limit on the number of products accumulated per block, below the
        engine's own exactness limit (results do not depend on it; tests use it).
    """

    name: str = ""
    #: Largest integer magnitude an operand may have.
    operand_max: int = 0
    #: Largest sum of |products| the accumulator holds exactly.
    accumulator_max: int = 0
    #: Schemes whose operands (residues or FP8 digits) this engine takes.
    schemes: tuple[str, ...] = ()
    #: The scheme ``scheme="auto"`` picks on this engine: its own unit's.
    preferred_scheme: str = ""
    #: Whether :meth:`matmul` takes int8 operands and an INT32 ``out`` (an integer
    #: unit's own types: the backend may then keep residue planes in int8 and exact
    #: products in INT32, 1 and 4 bytes an entry instead of 8).
    integer_operands: bool = False

    def __init__(self, max_kblock: int | None = None):
        if max_kblock is not None and (not isinstance(max_kblock, (int, np.integer))
                                       or max_kblock < 1):
            raise ValueError(f"max_kblock must be a positive integer, got {max_kblock!r}")
        self.max_kblock = None if max_kblock is None else int(max_kblock)

    def __repr__(self) -> str:
        extra = "" if self.max_kblock is None else f"max_kblock={self.max_kblock}"
        return f"{type(self).__name__}({extra})"

    def available(self) -> bool:
        """Whether the engine runs on this machine."""
        return True

    def blocks(self, k: int, amax: int, bmax: int) -> list[tuple[int, int]]:
        """The blocks :meth:`matmul` splits an inner dimension ``k`` into.

        Returns ``(length, bound)`` per block, ``bound = length * amax * bmax``
        (what :meth:`_block` receives).
        """
        kb = self.kblock(amax, bmax)
        return [(min(k, start + kb) - start, (min(k, start + kb) - start) * amax * bmax)
                for start in range(0, k, kb)] or [(0, 0)]

    def fp32(self, bound: int) -> bool:
        """Whether a block with this exact bound runs on an FP32 path (default: none)."""
        return False

    def kblock(self, amax: int, bmax: int) -> int:
        """Products per block that keep ``sum |x||y|`` within the accumulator."""
        kb = max(1, self.accumulator_max // max(1, amax * bmax))
        return kb if self.max_kblock is None else min(kb, self.max_kblock)

    def matmul(self, X: np.ndarray, Y: np.ndarray, amax: int, bmax: int,
               out: np.ndarray | None = None) -> np.ndarray:
        """Exact ``X @ Y`` for integer-valued ``X`` (..., m, k), ``Y`` (..., k, n).

        Stacks broadcast as in ``np.matmul`` (one batched GEMM per block).
        ``amax``, ``bmax`` bound ``|X|`` and ``|Y|``; the caller guarantees
        ``k * amax * bmax <= 2**53`` (or a tighter data-dependent bound).
        Returns FP64 (..., m, n), written into ``out`` when given. A float32
        ``out`` takes products with ``k * amax * bmax <= 2**24``: every partial
        sum, and the result, is then an integer FP32 holds exactly. On an engine
        with :attr:`integer_operands`, ``X`` and ``Y`` may be int8 and ``out``
        INT32 for ``k * amax * bmax <= 2**31 - 1``: the blocks, and their sum in
        INT32, are then exact integers within its range.
        """
        for label, Z in (("X", X), ("Y", Y)):
            if Z.ndim < 2 or Z.dtype.kind not in "iuf":
                raise ValueError(f"engine {self.name!r}: {label} must be a real (integer or "
                                 f"float) array of at least 2 dimensions, got {Z.dtype} of "
                                 f"shape {Z.shape}")
        if X.shape[-1] != Y.shape[-2]:
            raise ValueError(f"engine {self.name!r}: X (..., m, k) and Y (..., k, n) must "
                             f"share k, got shapes {X.shape} and {Y.shape}")
        lead = np.broadcast_shapes(X.shape[:-2], Y.shape[:-2])
        if out is not None and out.shape != lead + (X.shape[-2], Y.shape[-1]):
            raise ValueError(f"engine {self.name!r}: out must have the product's shape "
                             f"{lead + (X.shape[-2], Y.shape[-1])}, got {out.shape}")
        if amax > self.operand_max or bmax > self.operand_max:
            raise ValueError(f"engine {self.name!r} takes operands up to "
                             f"{self.operand_max}, got {max(amax, bmax)}")
        if out is not None and out.dtype == np.float32 \
                and X.shape[-1] * amax * bmax > FP32_EXACT:
            raise ValueError(f"a float32 out holds products up to 2**24 exactly, got a "
                             f"bound {X.shape[-1] * amax * bmax}")
        if out is not None and out.dtype == np.int32 and not (
                self.integer_operands and X.shape[-1] * amax * bmax <= INT32_MAX):
            raise ValueError(f"engine {self.name!r} takes an int32 out only on an integer "
                             f"unit with a bound up to 2**31 - 1, got "
                             f"{X.shape[-1] * amax * bmax}")
        blocks = self.blocks(X.shape[-1], amax, bmax)
        if out is None:
            out = np.empty(lead + (X.shape[-2], Y.shape[-1]))
        if len(blocks) == 1:
            self._block(X, Y, out, blocks[0][1], amax, bmax)
            return out
        part = np.empty_like(out)
        start = 0
        for length, bound in blocks:
            blk = slice(start, start + length)
            self._block(X[..., blk], Y[..., blk, :], part if start else out, bound, amax, bmax)
            if start:
                out += part  # exact: the caller's bound covers the whole sum
            start += length
        return out

    def _block(self, X, Y, out, bound, amax, bmax):  # pragma: no cover - abstract
        """``out = X @ Y`` for one block; ``bound`` >= every ``sum |x||y|``.

        ``amax``, ``bmax`` are the call's operand bounds (:meth:`matmul`), handed to
        every block so that an engine may choose its encoding from them per call,
        without state shared between concurrent calls.
        """
        raise NotImplementedError
