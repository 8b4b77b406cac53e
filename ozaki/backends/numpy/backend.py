"""The reference backend: pure NumPy, written from the maths, slow, bitwise equal to ``cpu``.

Implements :class:`ozaki.core.backend.Backend` with vectorised numpy over the entries
and Python loops where the order of floating-point operations matters (over the
moduli, the CRT levels, the terms of Dot2); nothing here imports numba or the ``cpu``
backend. Every pass is exact, or rounds in the order of IEEE operations the compiled
pass uses, so both backends give the same bits (``tests/test_numpy_backend.py`` and
the golden digests check it). The exact products run on the host engines
(:mod:`ozaki.backends.engines`), as on ``cpu``. Everything runs on the calling thread.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Any, Callable, Sequence

import numpy as np

from ...core.backend import Operand
from ...core.moduli import CRTPlan
from ...core.scaling import fits_split
from ..host import HostEngines
from . import certificate, compensated, crt, exact, lines
from . import residues as _residues

__all__ = ["NumPyBackend"]


class NumPyBackend(HostEngines):
    """numpy arrays, numpy passes, the host engines; one thread.

    The reference for the other backends: each method is written from the maths of its
    step (see the modules of :mod:`ozaki.backends.numpy`) and checked bit for bit
    against ``cpu``.
    """

    name = "numpy"

    # -- scheduling -----------------------------------------------------------

    def sized(self, elements: int) -> AbstractContextManager:
        """A no-op scope: the passes always run on the calling thread."""
        return contextlib.nullcontext()

    def pass_threads(self) -> int:
        """1: the calling thread alone."""
        return 1

    def run_pieces(self, piece: Callable[[Any], Any], pieces: Sequence, threads: int) -> list:
        """``[piece(p) for p in pieces]``, in order, on the calling thread."""
        return [piece(p) for p in pieces]

    # -- engines and operands: HostEngines ---------------------------------------

    # -- passes over operands -------------------------------------------------

    def line_stats(self, op: Operand) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(maxbits, bad, nnz)`` per line (:func:`ozaki.backends.numpy.lines.line_stats`)."""
        return lines.line_stats(op.bits, op.axis)

    def line_norms(self, op: Operand, h: int) -> tuple[np.ndarray, ...]:
        """:meth:`line_stats` and, for ``h > 0``, :meth:`norm_sums` at ``shift = h - E``
        (0 on zero lines): ``(maxbits, bad, nnz, S2, S1)`` (``S2``, ``S1`` empty for ``h = 0``)."""
        maxbits, bad, nnz = lines.line_stats(op.bits, op.axis)
        if not h:
            return maxbits, bad, nnz, np.zeros((0, 0), np.int64), np.zeros((0, 0), np.int64)
        S2, S1 = lines.norm_sums(op.bits, lines.line_shift(maxbits, h), op.axis)
        return maxbits, bad, nnz, S2, S1

    def line_floors(self, op: Operand, r: int,
                    out: np.ndarray) -> tuple[tuple, np.ndarray, np.ndarray]:
        """:meth:`line_stats` and the floors at ``shift = r - E`` (0 on zero lines) into
        ``out`` (bits' layout): ``(stats, planes, sums)``, ``sums`` their exact FP64 line sums."""
        stats = lines.line_stats(op.bits, op.axis)
        shift = lines.line_shift(stats[0], r)
        planes, sums = self._floors(op, shift, out)
        return stats, planes, sums

    def norm_sums(self, op: Operand, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``(sum F**2, sum F)`` (int64, (b, lines)) of ``F = floor(|x| 2**shift)``."""
        return lines.norm_sums(op.bits, shift, op.axis)

    def quantize(self, op: Operand, shift: np.ndarray, out: np.ndarray, sums: bool = False
                 ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Floors ``floor(|x| 2**shift)`` (0 for Inf, NaN) into ``out`` (bits' layout);
        returns the planes, and with ``sums`` their exact FP64 sums along each line."""
        planes, total = self._floors(op, shift, out)
        return (planes, total) if sums else planes

    @staticmethod
    def _floors(op: Operand, shift: np.ndarray, out: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """The floors into ``out`` (stacks of ``out.shape[0]`` slices; a shared operand is
        read by each) and their line sums (int64, exact; then FP64, exact below ``2**53``).

        The floors pass through int32 as in the compiled pass (exact: the callers keep
        them below ``2**20``).
        """
        b = out.shape[0]
        bits = np.broadcast_to(op.bits, (b,) + op.bits.shape[1:])
        shift = np.broadcast_to(np.asarray(shift, np.int64), (b, shift.shape[-1]))
        F = lines.floors(bits, lines.entry_shift(shift, op.axis))
        np.copyto(out, F.astype(np.int32), casting="unsafe")
        total = F.sum(axis=2 if op.axis == 0 else 1, dtype=np.int64)
        return op.plane(out), total.astype(np.float64)

    def residue_pass(self, E: np.ndarray, zero: np.ndarray, shift: np.ndarray) -> int:
        """The compiled backend's choice (:func:`ozaki.core.scaling.fits_split`):
        3 or 4 where its split pass would run, 0 for its general pass. Only the signs of
        zero residues depend on it (:meth:`residues`)."""
        return fits_split(E, zero, shift)

    def residues(self, op: Operand, shift: np.ndarray, moduli, out: np.ndarray, split: int,
                 cols: tuple[int, int] | None = None) -> np.ndarray:
        """Symmetric residues ``smod(trunc(x 2**shift), p)`` (0 for Inf, NaN) for each of
        ``moduli`` into ``out`` (L, bits' layout of the block); ``cols = (j0, j1)``
        restricts a right operand to those columns. Returns the planes (L, b, rows, cols).
        """
        bits = op.bits
        if cols is not None:
            j0, j1 = cols
            shift = shift[:, j0:j1]
            bits = bits[:, j0:j1] if op.T else bits[:, :, j0:j1]
        _residues.residues(bits, op.axis, shift, moduli, out, split)
        return op.plane(out)

    # -- passes over products -------------------------------------------------

    def reduce_into(self, acc: np.ndarray, prod: np.ndarray, p: int, first: bool,
                    bound: int = 2 ** 53) -> None:
        """``acc = smod(prod, p)`` (``first``) or ``acc = acc + smod(prod, p)``."""
        crt.reduce_into(acc, prod, p, first, bound)

    def engine(self, engine, scheme):
        """Resolve ``engine`` for ``scheme``; ``"auto"`` is FP64 BLAS for every scheme (the
        reference stays free of compiled engines; a scheme's bits do not depend on the
        engine, and the scheme ``"auto"`` stands for is the machine's, as on ``cpu``)."""
        if engine is None or isinstance(engine, str) and engine == "auto":
            engine = "cpu-blas"
        return super().engine(engine, scheme)

    @staticmethod
    def plane_dtype(engine, moduli) -> np.dtype:
        """FP64 planes on every engine (the reference keeps one type; the CPU backend's
        int8 planes hold the same integers)."""
        return np.dtype(np.float64)

    @staticmethod
    def product_dtype(engine, bound: int) -> np.dtype:
        """FP64 exact products on every engine (the same integers as INT32 ones)."""
        return np.dtype(np.float64)

    def store(self, prod: np.ndarray, p: int, out: np.ndarray, bound: int = 2 ** 53) -> None:
        """``out = smod(prod, p)`` in ``out``'s small integer type (``|prod| <= bound``)."""
        crt.store(prod, p, out, bound)

    def complex_store(self, p1: np.ndarray, p2: np.ndarray, p3: np.ndarray, p: int,
                      out: np.ndarray, n: int, bound: int = 2 ** 53) -> None:
        """Gauss: ``out[..., :n] = smod(P1 - P2)``, ``out[..., n:] = smod(P3 - P1 - P2)``."""
        crt.complex_store(p1, p2, p3, p, out, n, bound)

    def add_halves(self, x: np.ndarray, axis: int, p: int, out: np.ndarray) -> np.ndarray:
        """``out = smod(x_1 + x_2, p)`` for the halves of ``x`` along ``axis`` (-1, -2)."""
        return crt.add_halves(x, axis, p, out)

    def reconstruct(self, store: np.ndarray, plan: CRTPlan, s: np.ndarray, t: np.ndarray,
                    out: np.ndarray, c0: int = 0, products: bool = False,
                    bound: int = 2 ** 53) -> None:
        """CRT of ``store`` (N, b, m, w) with shifts ``s`` (b, m), ``t`` (b, n) into the
        columns ``c0:c0 + w`` of ``out`` (b, m, n)
        (:func:`ozaki.backends.numpy.crt.reconstruct`)."""
        crt.reconstruct(store, plan, s, t, out, int(c0), bool(products), bound)

    # -- the certificate ------------------------------------------------------

    def upper_rowmax(self, G: np.ndarray, rF: np.ndarray, cF: np.ndarray, nA: np.ndarray,
                     nB: np.ndarray) -> np.ndarray:
        """Row maxima (b, m) of the upper bound ``U``."""
        return certificate.upper_rowmax(G, rF, cF, nA, nB)

    def upper_scaled_colmax(self, G: np.ndarray, rF: np.ndarray, cF: np.ndarray,
                            nA: np.ndarray, nB: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        """Column maxima (K, b, n) of ``2**sigma_i U_ij`` for ``K`` sets of row shifts."""
        return certificate.upper_scaled_colmax(G, rF, cF, nA, nB, sigma)

    def componentwise_ratios(self, G: np.ndarray, rF: np.ndarray, cF: np.ndarray,
                             nA: np.ndarray, nB: np.ndarray, sigma: np.ndarray,
                             tau: np.ndarray, R: np.ndarray, g2: np.ndarray, e: np.ndarray,
                             f: np.ndarray, safety: float, ratio: np.ndarray,
                             bound: np.ndarray, probe: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
        """Per-row maxima and failure counts (K, b, m) of the componentwise ratio."""
        return certificate.componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f,
                                                safety, ratio, bound, probe)

    def refined_ratios(self, G: np.ndarray, U: np.ndarray, rF: np.ndarray, cF: np.ndarray,
                       nA: np.ndarray, nB: np.ndarray, sigma: np.ndarray, tau: np.ndarray,
                       de: np.ndarray, df: np.ndarray, e: np.ndarray, f: np.ndarray,
                       R: float, g2: float, safety: float, rows: np.ndarray,
                       cols: np.ndarray, ratio: np.ndarray, bound: np.ndarray | None) -> None:
        """The refinement's fine ratio (and bound) on a block, lowered in place."""
        certificate.refined_ratios(G, U, rF, cF, nA, nB, sigma, tau, de, df, e, f, R, g2,
                                   safety, rows, cols, ratio, bound)

    def add_nonzeros(self, op: Operand, planes: np.ndarray) -> None:
        """``planes += [x != 0 and x finite]``: the refinement's upper operands."""
        certificate.add_nonzeros(op.X, planes)

    def normwise_maxima(self, E: np.ndarray, zero: np.ndarray, lo2: np.ndarray,
                        hi1: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per slice ``(max x, max alpha)`` of the fast mode's normwise terms."""
        return certificate.normwise_maxima(E, zero, lo2, hi1, shift)

    # -- exact arithmetic -----------------------------------------------------

    def exact_dot(self, A: np.ndarray, Bt: np.ndarray, ri, ci) -> np.ndarray:
        """``fl(A[ri[t]] . Bt[ci[t]])`` per ``t``, exactly rounded (non-finite read as 0)."""
        return exact.dot_rows_cols(A, Bt, ri, ci)

    def small_lines(self, A: np.ndarray, B: np.ndarray, b: int) -> tuple:
        """Dot2's per-entry conditions: ``(codes, rare, bad_a, bad_b)``."""
        return compensated.small_lines(A, B, b)

    def dot2(self, A: np.ndarray, B: np.ndarray, out: np.ndarray, lines: bool
             ) -> tuple[bool, tuple | None]:
        """``out = A @ B`` by Dot2; ``(rare, small_lines or None)``."""
        got = compensated.small_lines(A, B, out.shape[0])
        compensated.dot2(A, B, out)
        return got[1], (got if lines else None)

    def abs_product(self, A: np.ndarray, B: np.ndarray, out: np.ndarray) -> None:
        """``out = |A| @ |B|`` entry by entry, terms added in order of ``k``."""
        compensated.abs_product(A, B, out)
