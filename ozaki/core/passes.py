"""Steps 2 and 3 on one piece of a product: residues, exact modular products, the CRT.

Once step 1 has fixed the shifts ``s`` (rows of ``A``), ``t`` (columns of ``B``)
and the count ``N`` of moduli of every slice, the product of a stack is a sum
of independent pieces (:class:`Piece`: slices ``lo:hi``, columns ``j0:j1``),
each run through the same three passes by :func:`run_piece`:

2. **residues** (:meth:`ozaki.core.operands.Prepared.residue_planes`) of
   ``A' = trunc(A 2**s)`` and ``B' = trunc(B 2**t)``, and the **exact modular
   products** ``A'_p B'_p`` for each modulus ``p``, one batched or one wide GEMM
   each (:func:`piece_products`, on :mod:`ozaki.core.products`);
3. **reconstruction** (:func:`reconstruct_piece`): the CRT of the ``N`` residues
   of each entry, scaled back by ``2**-(s_i + t_j)`` (the backend's
   :meth:`~ozaki.core.backend.Backend.reconstruct`).

**Why the cut changes no bit.** Each entry of a modular product is an exact
integer (the engine contract, :func:`ozaki.core.products.product_bound`), and the
CRT of an entry reads only that entry's ``N`` residues, its row's shift and its
column's shift. A piece reads the whole inner dimension ``k``, so the integers it
forms for its entries are those of the whole product, and its CRT is the whole
product's, entry by entry: the bits do not depend on the chunks, column blocks or
worker threads (:mod:`ozaki.core.pieces`) that :mod:`ozaki.core.pipeline` chooses,
nor on the integer types the passes hold them in (:func:`number_types`).

:class:`Layout` carries everything these passes read besides the operands and
the output, so a piece is a function of (operands, layout, piece) alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .backend import Backend
from .engine import Engine
from .kind import Kind
from .moduli import MODULI, crt_plan, residue_dtype
from .operands import Prepared
from .pieces import GROUP_BYTES, group_size
from .products import (column_stack_product, complex_product, modular_product, moduli_product,
                       product_bound)
from .workspace import workspace

__all__ = ["Piece", "Layout", "run_piece", "piece_products", "reconstruct_piece",
           "number_types"]


@dataclass(frozen=True)
class Piece:
    """Slices ``lo:hi`` and columns ``j0:j1`` of a product (of the embedding, complex)."""

    lo: int
    hi: int
    j0: int
    j1: int


@dataclass
class Layout:
    """How a stack of ``b`` products goes through its ``N`` moduli and the CRT.

    ``scheme``, ``engine`` and ``backend`` are the call's (its moduli, the GEMMs,
    what runs the passes). ``s`` (b, m) and ``t`` (b, n) are the shifts (for a
    complex product ``t`` is that of the ``n`` columns of ``B``, tied); ``sa``/``tb``
    what the residue passes read (one row when a shared operand's plane serves the
    stack: ``wide_a``/``wide_b``, one wide GEMM). The product runs a piece at a
    time, small enough to stay in cache between the passes: ``chunk`` slices of a
    stack, or ``width`` of the ``cols`` columns of a single product with a small
    ``A``, whose planes of all moduli are then formed once (``RA``). ``bound``
    bounds every exact modular product. ``gemm_columns`` (0: none) cuts each modular
    product of a single product's piece into GEMMs of that many columns
    (:func:`~ozaki.core.products.column_stack_product`: for pieces on worker threads).
    """

    b: int
    m: int
    k: int
    n: int
    kind: Kind
    scheme: str
    engine: Engine
    backend: Backend
    moduli: tuple
    counts: np.ndarray
    s: np.ndarray
    t: np.ndarray
    sa: np.ndarray
    tb: np.ndarray
    wide_a: bool
    wide_b: bool
    chunk: int
    width: int
    cols: int
    bound: int
    RA: np.ndarray | None = None
    gemm_columns: int = 0

    @property
    def N(self) -> int:
        return len(self.moduli)

    def pieces(self) -> list[Piece]:
        return [Piece(lo, min(self.b, lo + self.chunk), j0, min(self.cols, j0 + self.width))
                for lo in range(0, self.b, self.chunk)
                for j0 in (range(0, self.cols, self.width) if self.cols else (0,))]


def number_types(backend: Backend, engine: Engine, moduli: tuple[int, ...],
                 k: int) -> tuple[np.dtype, np.dtype]:
    """``(planes, products)``: the dtypes of the residue planes and of a real piece's exact
    modular products over ``k`` terms, the backend's choice for the engine.

    Integer planes (int8 on an integer engine) take INT32 products where every
    unreduced sum fits, ``k floor(p/2)**2 <= 2**31 - 1`` (``|r| <= floor(p/2)``);
    FP64 planes take FP64 products. Every entry is the same integer in any of
    these types, so they change the bytes the passes move, never a bit.
    """
    plane = np.dtype(backend.plane_dtype(engine, moduli))
    if plane.kind == "f":
        return plane, np.dtype(np.float64)
    h = max(moduli) // 2
    return plane, np.dtype(backend.product_dtype(engine, k * h * h))


def run_piece(pa: Prepared, pb: Prepared, lay: Layout, piece: Piece, plane: np.ndarray,
              sec: dict) -> dict:
    """Residues, modular products and CRT of one piece into ``plane``; returns ``sec``.

    ``plane`` is the product (b, m, n), or for complex products ``out``'s memory as
    (b, m, 2n); ``sec`` gains each phase's seconds. A real piece small enough keeps
    its exact products for the CRT (no store pass); a complex one stores the
    ``[Re | Im]`` residues and reconstructs each part into its place in the complex
    result.
    """
    lo, hi, j0, j1 = piece.lo, piece.hi, piece.j0, piece.j1
    n, m = lay.n, lay.m
    shape = (lay.N, hi - lo, m, j1 - j0)
    raw = not lay.kind.complex and 8 * np.prod(shape) <= GROUP_BYTES
    held = number_types(lay.backend, lay.engine, lay.moduli, lay.k)[1] if raw \
        else residue_dtype(lay.moduli)  # exact products, or their residues
    store = workspace(lay.backend.xp).take("store", shape, held)
    whole = not raw and not lay.kind.complex and j1 - j0 == n
    piece_products(pa, pb, lay, piece, store, sec, raw, plane[lo:hi] if whole else None)
    t2 = time.perf_counter()
    s, t, counts = lay.s[lo:hi], lay.t[lo:hi], lay.counts[lo:hi]
    if lay.kind.complex:  # [Re | Im] residues into the parts of the complex result
        b = plane.shape[0]
        parts = plane.reshape(b, m, n, 2)[..., 0], plane.reshape(b, m, n, 2)[..., 1]
        for h, part in enumerate(parts):
            reconstruct_piece(lay.backend, lay.scheme, store[..., h * n:(h + 1) * n], counts,
                              s, t, part[lo:hi], 0, 0)
    else:
        reconstruct_piece(lay.backend, lay.scheme, store, counts, s, t, plane[lo:hi], j0,
                          lay.bound if raw else 0)
    sec["reconstruction"] += time.perf_counter() - t2
    return sec


def piece_products(pa: Prepared, pb: Prepared, lay: Layout, piece: Piece, store: np.ndarray,
                   sec: dict, raw: bool = False, host: np.ndarray | None = None) -> None:
    """Residues and modular products of a piece, modulus by modulus, into ``store``.

    A piece of ``c`` slices and, for a product in column blocks, ``n`` columns of
    ``B`` (``lay.RA`` then holds ``A``'s planes of all the moduli already); with
    ``raw`` the exact products themselves go into ``store`` (FP64), not their residues.
    ``host``, the piece's own part of the result (C-contiguous, ``c m n`` doubles),
    receives each modular product before the store pass reduces it: that memory is
    dead until the piece's CRT writes it (nothing else of the call reads it), so the
    product plane takes no workspace, and the result's pages are first touched by
    the first GEMM, as in a native GEMM.
    """
    kind, wide_a, wide_b, RA, k, m = lay.kind, lay.wide_a, lay.wide_b, lay.RA, lay.k, lay.m
    lo, hi = piece.lo, piece.hi
    c = hi - lo
    n = lay.n if kind.complex else piece.j1 - piece.j0
    part = (lo, hi) if lay.chunk < lay.b else None
    cols = None if lay.width == lay.cols else (piece.j0, piece.j1)
    sa = lay.sa if lay.sa.shape[0] == 1 else lay.sa[lo:hi]
    tb = lay.tb if lay.tb.shape[0] == 1 else lay.tb[lo:hi]
    backend, engine = lay.backend, lay.engine
    ws = workspace(backend.xp)
    moduli = MODULI[lay.scheme][:store.shape[0]]
    lay_a, lay_b = pa.op.layout(sa.shape[0]), pb.op.layout(tb.shape[0])
    if cols is not None:  # a block of columns, in the bits' layout
        lay_b = (lay_b[0], n, lay_b[2]) if pb.op.T else lay_b[:2] + (n,)
    plane, product = number_types(backend, engine, moduli, k)
    # planes of all N moduli at once (one read of each operand) while they stay small
    size = (0 if RA is not None else np.prod(lay_a)) + np.prod(lay_b)
    group = group_size(len(moduli), int(size), plane.itemsize)
    buf_a = None if RA is not None else ws.take("ra", (group,) + lay_a, plane)
    buf_b = ws.take("rb", (group,) + lay_b, plane)
    planes_a = RA
    for q0 in range(0, len(moduli), group):
        t0 = time.perf_counter()
        ps = moduli[q0:q0 + group]
        if RA is None:
            planes_a = pa.residue_planes(sa, ps, buf_a[:len(ps)], part)
            q_a = 0
        else:
            q_a = q0
        RB = pb.residue_planes(tb, ps, buf_b[:len(ps)], part, cols)
        t1 = time.perf_counter()
        sec["residues"] += t1 - t0
        if raw and RA is not None and len(ps) == len(moduli) and not kind.complex \
                and moduli_product(engine, RA, RB, moduli, store, lay.gemm_columns) is not None:
            sec["products"] += time.perf_counter() - t1  # every modulus in one call
            return
        for q, p in enumerate(ps):
            t1 = time.perf_counter()
            ra, rb = planes_a[q_a + q], RB[q]
            bound = product_bound(engine, p, k)
            if kind.complex:
                P = complex_product(backend, engine, ra, rb, p)
                backend.complex_store(*P, p, store[q0 + q], n, bound)
            else:
                prod = store[q0 + q] if raw else (
                    ws.take("prod", (c, m, n), product) if host is None
                    else _in_memory_of(host, (c, m, n), product, q0 + q))
                if wide_b and ra.flags.c_contiguous:  # one wide GEMM: (c m, k) @ (k, n)
                    modular_product(backend, engine, ra.reshape(1, c * m, k), rb, p,
                                    prod.reshape(1, c * m, n))
                elif wide_a:  # one wide GEMM: (m, k) @ (k, c n)
                    wide = modular_product(backend, engine, ra,
                                           rb.transpose(1, 0, 2).reshape(1, k, c * n), p)
                    prod[...] = wide.reshape(m, c, n).transpose(1, 0, 2)
                elif lay.gemm_columns:  # GEMMs of gemm_columns columns (one call)
                    column_stack_product(backend, engine, ra, rb, p, prod, lay.gemm_columns)
                else:  # one batched GEMM
                    modular_product(backend, engine, ra, rb, p, prod)
                if not raw:
                    backend.store(prod, p, store[q0 + q], bound)
            t2 = time.perf_counter()
            sec["products"] += t2 - t1


def _in_memory_of(buf: np.ndarray, shape: tuple[int, ...], dtype: np.dtype,
                  q: int) -> np.ndarray:
    """A C-contiguous array of ``shape`` and ``dtype`` in the memory of ``buf``
    (C-contiguous FP64 with at least as many entries), for the ``q``-th product: ``buf``
    holds ``s = 8 // itemsize`` such arrays side by side (two INT32 products), and
    product ``q`` takes slot ``q mod s``, so the first ``s`` products touch all of it."""
    size = int(np.prod(shape))
    if not buf.flags.c_contiguous or dtype.itemsize > buf.itemsize or size > buf.size:
        raise AssertionError("the product plane must fit the piece's own result")
    slot = q % (buf.nbytes // (size * dtype.itemsize))
    return buf.reshape(-1).view(dtype)[slot * size:(slot + 1) * size].reshape(shape)


def reconstruct_piece(backend: Backend, scheme: str, store: np.ndarray, counts: np.ndarray,
                      s: np.ndarray, t: np.ndarray, out: np.ndarray, c0: int,
                      products: int) -> None:
    """CRT of a piece's ``store`` (N, c, m, w) into ``out[:, :, c0:c0 + w]`` (c slices).

    ``store`` holds residues (``products`` 0), or the exact modular products,
    at most ``products`` in magnitude; ``counts`` (c,) the slices' numbers of
    moduli, ``s`` (c, m) and ``t`` (c, n) their shifts.
    """
    N = store.shape[0]
    kw = dict(products=True, bound=products) if products else {}
    if (counts == N).all():
        backend.reconstruct(store, crt_plan(scheme, N), s, t, out, c0=c0, **kw)
        return
    w = store.shape[-1]
    for c in np.unique(counts):  # slices of different counts: each with its own constants
        idx = np.flatnonzero(counts == c)
        part = backend.xp.empty((len(idx), out.shape[1], w))
        backend.reconstruct(np.ascontiguousarray(store[:c][:, idx]), crt_plan(scheme, int(c)),
                            s[idx], np.ascontiguousarray(t[idx][:, c0:c0 + w]), part, **kw)
        out[idx, :, c0:c0 + w] = part
