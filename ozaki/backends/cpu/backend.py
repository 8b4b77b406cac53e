"""The CPU backend: numpy arrays, numba passes on ozaki's own threads, the host engines.

Implements :class:`ozaki.core.backend.Backend`. The compiled passes
(:mod:`~ozaki.backends.cpu.lines`, :mod:`~ozaki.backends.cpu.residues`,
:mod:`~ozaki.backends.cpu.reconstruct`, :mod:`~ozaki.backends.cpu.bounds`,
:mod:`~ozaki.backends.cpu.refinement`, :mod:`~ozaki.backends.cpu.exactdot`,
:mod:`~ozaki.backends.cpu.dot2`) release the GIL
and run on the threads of :mod:`ozaki.backends.cpu.parallel` (no lock, safe across
``fork``); the exact products run on the host engines (:mod:`ozaki.backends.engines`).
Nothing here changes process-wide state: no BLAS thread limit, no environment
variable; the pass threads are capped per calling thread (:func:`ozaki.set_workers`).
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...core.backend import Operand
from ...core.engine import INT32_MAX
from ...core.moduli import modular_constants, short_bound
from ...core.scope import scoped
from ...core.scaling import fits_split
from ..host import HostEngines
from . import bounds, dot2, exactdot, lines, parallel, reconstruct, refinement, residues

__all__ = ["CPUBackend", "pow2mod", "MAX_EXPONENT"]

#: ``2**E mod p`` is tabulated for scaled exponents ``E`` below this bound.
MAX_EXPONENT = 1100

_POW2MOD: dict[int, np.ndarray] = {}


def pow2mod(p: int) -> np.ndarray:
    """``2**e mod p`` for ``e < MAX_EXPONENT + 27`` (cached per modulus, read-only)."""
    tab = _POW2MOD.get(p)
    if tab is None:
        tab = np.array([pow(2, e, p) for e in range(MAX_EXPONENT + 27)], dtype=np.float64)
        tab.flags.writeable = False  # shared by every call: nobody may change it
        _POW2MOD[p] = tab
    return tab


class CPUBackend(HostEngines):
    """numpy arrays, numba passes, the CPU engines.

    The compiled passes release the GIL and run on :mod:`ozaki.backends.cpu.parallel`'s
    threads; calls from several Python threads run theirs at the same time.
    BLAS runs on its own threads. Each pass is exact (see :mod:`ozaki.backends.cpu.kernels`).
    """

    name = "cpu"
    _local = threading.local()
    #: Below this many elements per pass, the passes run on the calling thread:
    #: waking the worker threads costs more than the pass (10 us against 30 us to
    #: milliseconds on a loaded 2-core machine, measured on 32 x 32 operands).
    serial_below = 1 << 16

    @contextlib.contextmanager
    def sized(self, elements: int):
        """Run the passes of a call whose largest plane has ``elements`` entries.

        Small calls run their passes on the calling thread alone (results do not
        depend on the thread count).
        """
        if elements >= self.serial_below:
            yield
            return
        with parallel.limit(1):
            yield

    def pass_threads(self) -> int:
        """Threads the passes may use (:func:`ozaki.backends.cpu.parallel.threads`, the calling thread's)."""
        return parallel.threads()

    @contextlib.contextmanager
    def serial_passes(self):
        """This thread's passes run on the calling thread alone.

        For pieces of a product on worker threads: each piece's passes stay on
        its thread, and the CRT of short exact products takes the kernel
        specialised per count (:func:`ozaki.backends.cpu.reconstruct.serial_kernel`).
        """
        with scoped(self._local, "serial", True), parallel.limit(1):
            yield

    def _serial(self) -> bool:
        return getattr(self._local, "serial", False)

    def run_pieces(self, piece, pieces, threads: int) -> list:
        """``[piece(p) for p in pieces]``; on ``threads`` worker threads when above 1,
        each running its pieces' passes alone (:meth:`serial_passes`).

        BLAS is left as the process has it (no thread limit, which would be
        process-wide): on two cores the pieces measured the same either way. A
        piece's GEMMs are small (a piece stays in cache: ``CHUNK_BYTES``), where
        OpenBLAS runs one thread per call by itself; on many cores with
        multithreaded BLAS, ``ozaki.set_workers`` caps the workers.
        """
        if threads <= 1:
            return [piece(p) for p in pieces]

        def on_worker(p):
            with self.serial_passes():
                return piece(p)

        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(on_worker, pieces))

    # -- engines and operands: HostEngines ---------------------------------------

    # -- passes on operands -------------------------------------------------

    def residue_pass(self, E, zero, shift) -> int:
        """:func:`~ozaki.backends.cpu.residues.fits_split`: 3 or 4 digits, 0 for the
        general pass."""
        return fits_split(E, zero, shift)

    def line_stats(self, op: Operand):
        """``(maxbits, nonfinite, nonzeros)`` per line, each of shape (b, lines)."""
        return lines.absmax_bits(op.bits, op.axis)

    def line_norms(self, op: Operand, h: int):
        """:meth:`line_stats` and :meth:`norm_sums` at ``shift = h - E`` in one read of ``op``."""
        return lines.line_norms(op.bits, op.axis, h)

    def line_floors(self, op: Operand, r: int, out: np.ndarray):
        """:meth:`line_stats` and the floors at ``r`` (:meth:`quantize` at the shifts
        :func:`ozaki.core.scaling.accurate_quantizers` gives) in one read of ``op``.

        Returns ``(stats, planes, sums)``: the floors formed into ``out`` (bits'
        layout, float32) and their exact FP64 sums along each line.
        """
        acc = np.zeros((op.batch, op.lines), np.int64)
        stats = lines.line_floors(op.bits, op.axis, r, out, acc)
        return stats, op.plane(out), acc.astype(np.float64)  # integers below 2**53

    def norm_sums(self, op: Operand, shift: np.ndarray):
        """Exact ``(sum F**2, sum F)`` per line of ``F = floor(|x| 2**shift)`` (int64)."""
        return lines.norm_sums(op.bits, shift, op.axis)

    def quantize(self, op: Operand, shift: np.ndarray, out: np.ndarray, sums: bool = False):
        """Floors ``floor(|x| 2**shift)`` into ``out`` (bits' layout, any float dtype).

        Returns the planes; with ``sums``, also the exact FP64 sums of the floors
        along each line (b, lines), formed in the same pass.
        """
        srow, scol = op.shifts(shift)
        acc = np.zeros((out.shape[0], op.lines) if sums else (0, 0), np.int64)
        lines.quantize_down(op.bits, srow, scol, out, acc, op.axis)
        # integers below 2**53: exact in FP64
        return (op.plane(out), acc.astype(np.float64)) if sums else op.plane(out)

    def residues(self, op: Operand, shift: np.ndarray, moduli, out: np.ndarray,
                 split: int, cols: tuple[int, int] | None = None) -> np.ndarray:
        """Symmetric residues of ``trunc(x 2**shift)`` mod each of ``moduli`` into ``out``.

        ``out`` has shape ``(L,) + `` the bits' layout of the block (``L`` moduli);
        ``cols = (j0, j1)`` restricts a right operand to its columns ``j0:j1``
        (``shift`` stays the whole one). ``split``, from
        :func:`ozaki.backends.cpu.residues.fits_split`: 3 or 4 when every scaled magnitude is
        below ``2**66`` or ``2**88``, and the fast pass, with that many digits,
        serves all ``L`` moduli in one read of the operand; 0 for the general
        pass. Returns the planes in the product's shape (L, b, rows, cols).
        """
        bits, j0 = op.bits, 0
        if cols is not None:
            shift = shift[:, cols[0]:cols[1]]
            if op.T:  # a right operand read through its transpose: the block is rows
                bits = bits[:, cols[0]:cols[1]]
            else:  # the block's columns, read in place from column j0 on
                j0 = cols[0]
        srow, scol = op.shifts(shift)
        if split:
            r1, r2 = residues.split_factors(srow)
            c1, c2 = residues.split_factors(scol)
            residues.split_residues(bits.view(np.float64), j0, r1, r2, c1, c2,
                                    residues.split_constants(tuple(moduli)), out, int(split))
            return op.plane(out)
        for q, p in enumerate(moduli):
            residues.gather_residues(bits, j0, srow, scol, float(p), 1.0 / p, pow2mod(p), out[q])
        return op.plane(out)

    @staticmethod
    def plane_dtype(engine, moduli) -> np.dtype:
        """int8 planes for an integer engine whose operand range holds every residue of
        ``moduli`` (``p <= 256``: ``[-128, 127]``, 1 byte an entry instead of 8), else FP64.

        The residue passes write the same integers either way (a cast of an
        integer-valued double in range is exact), so the planes' dtype changes the
        bytes moved, never a product.
        """
        if getattr(engine, "integer_operands", False) and max(moduli) <= 256 \
                and max(moduli) // 2 <= engine.operand_max:
            return np.dtype(np.int8)
        return np.dtype(np.float64)

    @staticmethod
    def product_dtype(engine, bound: int) -> np.dtype:
        """INT32 exact products on an integer engine while ``bound <= 2**31 - 1`` (every
        partial sum then fits, the engine contract), else FP64."""
        if getattr(engine, "integer_operands", False) and bound <= INT32_MAX:
            return np.dtype(np.int32)
        return np.dtype(np.float64)

    # -- passes on products ---------------------------------------------------

    @staticmethod
    def _flat(x: np.ndarray) -> np.ndarray:
        """A 2-D view of the stack ``x`` (a copy only for inputs that are not contiguous)."""
        return x.reshape(-1, x.shape[-1])

    @classmethod
    def _out(cls, x: np.ndarray) -> np.ndarray:
        """A 2-D view of the output stack ``x``; never a copy (the writes would be lost)."""
        flat = cls._flat(x)
        if flat.size and not np.shares_memory(flat, x):  # pragma: no cover - a caller bug
            raise AssertionError("output planes must be reshapable without a copy")
        return flat

    def reduce_into(self, acc, prod, p: int, first: bool, bound: int = 2 ** 53) -> None:
        """``acc (+)= smod(prod, p)`` (k-blocks of a modular product, ``|prod| <= bound``)."""
        pf, pinv, c26 = modular_constants(p)
        reconstruct.reduce_into(self._out(acc), self._flat(prod), pf, pinv, c26, first,
                                short_bound(bound))

    def store(self, prod, p: int, out, bound: int = 2 ** 53) -> None:
        """``out = smod(prod, p)`` in the store's small integer type (``|prod| <= bound``)."""
        pf, pinv, c26 = modular_constants(p)
        reconstruct.store_residues(self._flat(prod), pf, pinv, c26, self._out(out),
                                   short_bound(bound))

    def complex_store(self, p1, p2, p3, p: int, out, n: int, bound: int = 2 ** 53) -> None:
        """Gauss: ``out[..., :n] = smod(P1 - P2)``, ``out[..., n:] = smod(P3 - P1 - P2)``
        (``|P| <= bound``)."""
        pf, pinv, c26 = modular_constants(p)
        reconstruct.complex_residues(self._flat(p1), self._flat(p2), self._flat(p3),
                                     pf, pinv, c26, short_bound(bound), self._out(out))

    def add_halves(self, x, axis: int, p: int, out) -> np.ndarray:
        """``out = smod(x_1 + x_2, p)`` for the halves of the residue planes ``x``
        (b, r, c) along ``axis`` (-1: columns, -2: rows), exact."""
        x = np.ascontiguousarray(x)
        half = x.shape[axis] // 2
        reconstruct.add_halves(x, half, axis == -2, float(p), 1.0 / p, out)
        return out

    def reconstruct(self, store, plan, s, t, out, c0: int = 0, products: bool = False,
                    bound: int = 2 ** 53) -> None:
        """CRT of ``store`` (N, b, m, w) with shifts ``s`` (b, m), ``t`` (b, n) into the
        columns ``c0 .. c0 + w - 1`` of ``out`` (b, m, n).

        ``store`` holds residues, or with ``products`` the exact modular products
        (FP64, at most ``bound`` in magnitude), reduced on the fly (no store pass)."""
        if not 0 <= c0 <= out.shape[-1] - store.shape[-1]:
            raise ValueError("columns c0 .. c0 + w - 1 are not in out")
        mods = (np.array([modular_constants(p) for p in plan.moduli]) if products
                else np.empty((0, 3)))
        args = (store, plan.weights, plan.p_levels, plan.p_inv, s, t, out, int(c0), mods,
                short_bound(bound))
        if self._serial():
            N, L = plan.weights.shape
            reconstruct.serial_kernel(N, L, bool(products), args[-1])(*args)
            return
        reconstruct.reconstruct(*args)

    def upper_rowmax(self, G, rF, cF, nA, nB):
        return bounds.upper_rowmax(G, rF, cF, nA, nB)

    def upper_scaled_colmax(self, G, rF, cF, nA, nB, sigma):
        """Scaled column maxima (K, b, n) of ``U`` for ``K`` sets of row shifts (K, b, m)."""
        return bounds.upper_scaled_colmax(G, rF, cF, nA, nB, sigma)

    def componentwise_ratios(self, G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety,
                             ratio, bound, probe):
        return bounds.componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f,
                                           safety, ratio, bound, probe)

    def refined_ratios(self, G, U, rF, cF, nA, nB, sigma, tau, de, df, e, f, R, g2, safety,
                       rows, cols, ratio, bound) -> None:
        refinement.refined_ratios(G, U, rF, cF, nA, nB, sigma, tau, de, df, e, f, R, g2,
                                  safety, rows, cols, ratio, bound)

    def add_nonzeros(self, op: Operand, planes) -> None:
        refinement.add_nonzeros(op.bits, op.T, planes)

    def normwise_maxima(self, E, zero, lo2, hi1, shift):
        return bounds.normwise_maxima(E, zero, lo2, hi1, shift)

    # -- exact arithmetic -----------------------------------------------------

    def exact_dot(self, A, Bt, ri, ci):
        """:func:`ozaki.backends.cpu.exactdot.dot_rows_cols`."""
        return exactdot.dot_rows_cols(A, Bt, ri, ci)

    def small_lines(self, A, B, b: int):
        return dot2.small_lines(A, B, b)

    def dot2(self, A, B, out, lines: bool):
        return dot2.dot2(A, B, out, lines, parallel.threads())

    def abs_product(self, A, B, out) -> None:
        dot2.abs_product(A, B, out, parallel.threads())
