"""The seam between the phases and what runs them: operands and the backend protocol.

The phases (:mod:`ozaki.core`) hold operands as :class:`Operand` stacks and ask a
:class:`Backend` for every pass over them and over the products: line data,
floors, residues, the exact modular products (on the backend's engines), the CRT,
the certificate's ratio pass, the exactly rounded dot product, the small-product
path, and how the pieces of a product are scheduled. A backend is any object with
these methods (:class:`Backend` is a :class:`typing.Protocol`); the registry is
:func:`ozaki.backends.get_backend`.

Every method is **exact**, or rounds in a fixed, documented order of IEEE
operations per output entry (no FMA contraction, no reassociation), so two
backends give the same bits: the reference backend (:mod:`ozaki.backends.numpy`)
is checked bit for bit against ``cpu`` on the golden cases.

Operands are **stacks**: ``A`` of shape (b, m, k) has its shifts on rows, ``B``
of shape (b, k, n) on columns; a 2-D operand is a stack of one, and a stack of
one may be shared by the ``b`` slices of its partner (the passes broadcast it).
Per-line data has shape (b, lines); shifts too.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from .engine import Engine

__all__ = ["Operand", "Backend", "dot_arguments", "float_bits", "check_indices"]


class Operand:
    """A float64 stack read as C-ordered bits; ``outer`` is the axis that gets shifts.

    ``X`` has shape (b, r, c): ``outer = 0`` for a left operand (shifts on its
    rows), ``1`` for a right one (shifts on its columns). Slices stored in
    Fortran order are read through their transpose (no copy); planes are then
    returned transposed, so they always have the product's shape.
    """

    def __init__(self, X: np.ndarray, outer: int):
        if X.ndim != 3:  # pragma: no cover - the front reshapes
            raise AssertionError("operands are stacks (b, r, c)")
        self.X = X
        self.outer = outer
        self.shape = X.shape
        XT = X.transpose(0, 2, 1)
        if X.flags.c_contiguous:
            self.bits, self.axis, self.T = X.view(np.int64), outer, False
        elif XT.flags.c_contiguous:
            self.bits, self.axis, self.T = XT.view(np.int64), 1 - outer, True
        else:
            self.bits = np.ascontiguousarray(X).view(np.int64)
            self.axis, self.T = outer, False

    def sub(self, lo: int, hi: int) -> "Operand":
        """The slices ``lo:hi`` of the stack (a view)."""
        return Operand(self.X[lo:hi], self.outer)

    @property
    def batch(self) -> int:
        return self.shape[0]

    @property
    def lines(self) -> int:
        """Number of lines that get shifts (rows of A, columns of B)."""
        return self.shape[1 + self.outer]

    @property
    def inner(self) -> int:
        return self.shape[2 - self.outer]

    def shifts(self, shift: np.ndarray):
        """``(row, column)`` shifts of the bits' layout for per-line ``shift`` (b, lines):
        the other side's zero."""
        b = shift.shape[0]
        other = self.bits.shape[2 - self.axis]
        zeros = np.zeros((b, other), np.int64)
        return (shift, zeros) if self.axis == 0 else (zeros, shift)

    def plane(self, buf: np.ndarray) -> np.ndarray:
        """``buf`` (in the bits' layout) as planes of the product's shape (last two axes)."""
        return buf.swapaxes(-1, -2) if self.T else buf

    def layout(self, b: int) -> tuple[int, int, int]:
        """Shape of a plane of ``b`` slices in the bits' layout."""
        return (b,) + self.bits.shape[1:]


@runtime_checkable
class Backend(Protocol):
    """What the phases need from a backend (``cpu``, ``numpy``, a GPU's).

    Shapes: operand stacks as in :class:`Operand`; ``shift`` (b, lines) int64;
    planes in the product's shape. "Bits' layout" is the layout of
    ``Operand.bits`` (a right operand stored in Fortran order is read through its
    transpose; :meth:`Operand.plane` turns such buffers into planes).
    """

    #: The registry name (``"cpu"``, ``"numpy"``).
    name: str
    #: The array namespace of the backend's arrays (``numpy``; ``cupy`` on a GPU): the
    #: phases allocate their planes, ratios and bounds with it. Per-line data (exponents,
    #: shifts, counts: O(m + n)) and the decisions' small arrays stay numpy arrays on the
    #: host; a device backend converts them where its passes read them.
    xp: Any

    # -- scheduling -----------------------------------------------------------

    def sized(self, elements: int) -> AbstractContextManager:
        """Scope of one call whose largest pass has ``elements`` entries (of a plane; for
        the small-product path, terms ``b m n k``): small calls may run their passes on
        the calling thread."""

    def pass_threads(self) -> int:
        """Threads the passes may use now (1: the calling thread alone)."""

    def run_pieces(self, piece: Callable[[Any], Any], pieces: Sequence, threads: int) -> list:
        """``[piece(p) for p in pieces]``, on ``threads`` worker threads when above 1.

        Each piece's own passes and GEMMs then run on its worker thread alone; the
        results come back in the order of ``pieces``.
        """

    # -- engines --------------------------------------------------------------

    def engine(self, engine: str | Engine | None, scheme: str | None) -> Engine:
        """Resolve ``engine`` (a name, an :class:`~ozaki.core.engine.Engine`, ``None``)
        for ``scheme`` (``None``: the engine's preferred one)."""

    def engine_names(self) -> list[str]:
        """The engines this backend runs on this machine."""

    def exact_engine(self) -> Engine:
        """The engine of the refinement's FP64 bound GEMMs (exact to ``2**53``)."""

    def matmul(self, engine: Engine, X, Y, amax: int, bmax: int, out):
        """Exact ``out = X @ Y`` on ``engine`` (:meth:`Engine.matmul`'s contract)."""

    # -- passes over operands -------------------------------------------------

    def operand(self, X, outer: int) -> Operand:
        """``X`` (b, r, c) float64 as an operand (``outer`` 0: left, 1: right)."""

    def line_stats(self, op: Operand):
        """``(maxbits, bad, nnz)`` per line, each (b, lines): the bits of the largest
        finite ``|x|`` (int64), whether an Inf or a NaN occurs, the finite nonzeros."""

    def line_norms(self, op: Operand, h: int):
        """:meth:`line_stats` and :meth:`norm_sums` at ``shift = h - E`` (0 on zero lines),
        in one read: ``(maxbits, bad, nnz, S2, S1)``."""

    def line_floors(self, op: Operand, r: int, out):
        """:meth:`line_stats` and the floors at ``shift = r - E`` into ``out`` (float32,
        bits' layout): ``(stats, planes, sums)``, ``sums`` the exact FP64 line sums."""

    def norm_sums(self, op: Operand, shift):
        """Exact ``(sum F**2, sum F)`` (int64, (b, lines)) of ``F = floor(|x| 2**shift)``
        over the finite entries of each line."""

    def quantize(self, op: Operand, shift, out, sums: bool = False):
        """Floors ``floor(|x| 2**shift)`` (finite entries; 0 elsewhere) into ``out``
        (bits' layout); returns the planes, and with ``sums`` their exact FP64 line sums."""

    def residue_pass(self, E, zero, shift) -> int:
        """The backend's choice of residue pass for these lines (given back to
        :meth:`residues`); 0 where the general pass is needed (pieces then stay on
        the calling thread)."""

    def residues(self, op: Operand, shift, moduli, out, split: int, cols=None):
        """Symmetric residues ``smod(trunc(x 2**shift), p)`` (0 for non-finite ``x``) for
        each of ``moduli`` into ``out`` (L, bits' layout of the block); ``cols = (j0, j1)``
        restricts a right operand to those columns. Returns (L, b, rows, cols) planes."""

    def plane_dtype(self, engine: Engine, moduli) -> Any:
        """The dtype of the residue planes that ``engine`` multiplies for ``moduli``
        (FP64 integers; or the engine's own integer type where it takes one and every
        symmetric residue fits it: :attr:`~ozaki.core.engine.Engine.integer_operands`)."""

    def product_dtype(self, engine: Engine, bound: int) -> Any:
        """The dtype of an exact modular product whose unreduced terms sum to at most
        ``bound`` (FP64; or INT32 on an integer engine when ``bound <= 2**31 - 1``)."""

    # -- passes over products -------------------------------------------------

    def reduce_into(self, acc, prod, p: int, first: bool, bound: int = 2 ** 53) -> None:
        """``acc = smod(prod, p)`` (``first``) or ``acc += smod(prod, p)``: the k-blocks of
        a modular product (``|acc| <= blocks * p / 2``, exact integers in FP64)."""

    def store(self, prod, p: int, out, bound: int = 2 ** 53) -> None:
        """``out = smod(prod, p)`` in ``out``'s small integer type (``|prod| <= bound``)."""

    def complex_store(self, p1, p2, p3, p: int, out, n: int, bound: int = 2 ** 53) -> None:
        """Gauss: ``out[..., :n] = smod(P1 - P2)``, ``out[..., n:] = smod(P3 - P1 - P2)``."""

    def add_halves(self, x, axis: int, p: int, out):
        """``out = smod(x_1 + x_2, p)`` for the halves of ``x`` along ``axis`` (-1, -2)."""

    def reconstruct(self, store, plan, s, t, out, c0: int = 0, products: bool = False,
                    bound: int = 2 ** 53) -> None:
        """CRT of ``store`` (N, b, m, w) with shifts ``s`` (b, m), ``t`` (b, n) into the
        columns ``c0:c0 + w`` of ``out`` (b, m, n) (:class:`~ozaki.core.moduli.CRTPlan`)."""

    # -- the certificate ------------------------------------------------------

    def upper_rowmax(self, G, rF, cF, nA, nB):
        """Row maxima (b, m) of the upper bound ``U = G + rF + cF + min(nA, nB)`` (:mod:`ozaki.core.scaling`)."""

    def upper_scaled_colmax(self, G, rF, cF, nA, nB, sigma):
        """Column maxima (K, b, n) of ``2**sigma_i U_ij`` for ``K`` sets of row shifts."""

    def componentwise_ratios(self, G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety,
                             ratio, bound, probe):
        """Per-row maxima and failure counts (K, b, m) of the componentwise ratio
        (:func:`ozaki.core.certify.componentwise`), with per-entry ``ratio`` and
        ``bound`` for the first count when they have entries."""

    def refined_ratios(self, G, U, rF, cF, nA, nB, sigma, tau, de, df, e, f, R, g2, safety,
                       rows, cols, ratio, bound) -> None:
        """The refinement's fine ratio on the block ``(rows, cols)`` of one slice's ``ratio``
        (m, n), and its bound unless ``bound`` is ``None``: each lowered in place to the
        minimum (NaN-propagating) of the two (:meth:`ozaki.core.certify.Refinement.certify`;
        the formula and its order: :func:`ozaki.backends.numpy.certificate.refined_ratios`).
        ``rows`` and ``cols`` are strictly increasing."""

    def add_nonzeros(self, op: Operand, planes) -> None:
        """``planes += [x != 0 and x finite]`` entry by entry (``+ 1.0`` or ``+ 0.0``): the
        upper operands ``F + I`` of the refinement from the floors ``planes`` (FP64, the
        product's shape, :meth:`quantize`'s of ``op``)."""

    def normwise_maxima(self, E, zero, lo2, hi1, shift):
        """Per slice ``(max x, max alpha)`` of :meth:`ozaki.core.certify.Normwise.terms`."""

    # -- exact arithmetic ----------------------------------------------------

    def exact_dot(self, A, Bt, ri, ci):
        """``fl(A[ri[t]] . Bt[ci[t]])`` per ``t``, exactly rounded (non-finite read as 0)."""

    def small_lines(self, A, B, b: int):
        """Dot2's per-entry conditions (:mod:`ozaki.core.compensated`): ``(codes, rare,
        bad_a, bad_b)``, ``codes`` (b, m, n) int8 SAFE/UNDERFLOW/OVERFLOW."""

    def dot2(self, A, B, out, lines: bool):
        """``out = A @ B`` by Dot2, entry by entry; returns ``(rare, lines)``: whether
        some entry is not SAFE or a line holds an Inf or a NaN, and, with ``lines``,
        :meth:`small_lines` (else ``None``)."""

    def abs_product(self, A, B, out) -> None:
        """``out = |A| @ |B|`` entry by entry, terms added in order of ``k``."""


def float_bits(A, name: str) -> np.ndarray:
    """``A`` (p, k), a real floating array, as the C-ordered int64 view of a float64 copy
    (exact); ``ValueError``/``TypeError`` naming ``name`` otherwise."""
    A = np.asarray(A)
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {A.shape}")
    if A.dtype not in (np.float16, np.float32, np.float64):
        raise TypeError(f"{name} must be a real floating array (float64), got {A.dtype}")
    return np.ascontiguousarray(A, dtype=np.float64).view(np.int64)


def check_indices(i, n: int, name: str) -> np.ndarray:
    """``i``, 1-D integer indices into ``n`` lines, as int64; errors name ``name``."""
    i = np.asarray(i)
    if i.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {i.shape}")
    if i.size and i.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got {i.dtype}")
    i = np.ascontiguousarray(i, dtype=np.int64)
    if i.size and (i.min() < 0 or i.max() >= n):
        raise IndexError(f"{name} out of range [0, {n})")
    return i


def dot_arguments(X, Y, ii, jj):
    """The checked arguments of an exactly rounded dot product (``Backend.exact_dot``):
    ``X`` (p, k) and ``Y`` (q, k) as :func:`float_bits`, ``ii``, ``jj`` equal-length
    indices into their rows (:func:`check_indices`)."""
    Xb, Yb = float_bits(X, "X"), float_bits(Y, "Y")
    if Xb.shape[1] != Yb.shape[1]:
        raise ValueError(f"inner dimensions differ: X {Xb.shape}, Y {Yb.shape}")
    ii, jj = check_indices(ii, Xb.shape[0], "ii"), check_indices(jj, Yb.shape[0], "jj")
    if ii.shape != jj.shape:
        raise ValueError(f"ii and jj differ in length: {ii.shape[0]} and {jj.shape[0]}")
    return Xb, Yb, ii, jj
