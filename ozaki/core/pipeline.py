"""The data path: decisions -> residues -> exact modular products -> reconstruction.

One function, :func:`emulate`, runs a stack of ``b`` products ``C_g = A_g B_g``
(either operand may be one matrix shared by the stack) through the phases:

1. **decisions** (:mod:`ozaki.core.decisions`): exact line data, the accurate-mode
   floor GEMM or the fast-mode exact norm sums, then shifts and counts per slice;
2. **residues** and **modular products** (:mod:`ozaki.core.products`), modulus by
   modulus: each modular product of the stack is one batched GEMM, or one wide
   GEMM when an operand is shared and its shifts agree across the stack (exact
   either way, so the bits are those of the slice-by-slice products); the
   products are stored as small integers;
3. **reconstruction** (CRT, the backend's :meth:`~ozaki.core.backend.Backend.reconstruct`);
4. **what the emulation does not deliver** (:mod:`ozaki.core.fallback`,
   :mod:`ozaki.core.special`): exact fallback, overflow guard, non-finite values.

Complex products run the same path on the real embedding
``[Ar, Ai] @ [[Br, Bi], [-Bi, Br]] = [Re, Im]`` with the shifts of a ``B``
column tied across its real and imaginary columns; the modular products use
Gauss's three products (:func:`ozaki.core.products.complex_product`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

import numpy as np

from . import decisions, fallback, scaling
from .kind import REAL, Kind
from .backend import Backend, Operand
from .certify import CertificationError, explain
from .engine import Engine
from .info import OzakiInfo
from .moduli import MODULI, auto_num_moduli, crt_plan, residue_dtype
from .products import complex_product, modular_product, product_bound
from .pieces import (CHUNK_BYTES, GROUP_BYTES, column_block, group_size, piece_bytes,
                     piece_threads)
from .workspace import workspace

__all__ = ["Options", "Prepared", "decide", "emulate", "slice_operands", "widened",
           "plane_of",
           "CHUNK_BYTES"]



Scheme = Literal["int8", "fp8", "fp64"]
Mode = Literal["accurate", "fast"]
Policy = Literal["exact", "none", "raise"]


@dataclass(frozen=True)
class Options:
    """What a call asked for, checked once at the front (:func:`ozaki.api.calls.options`).

    ``scheme`` resolved (never ``"auto"``), ``num_moduli`` an int in the scheme's
    range or ``"auto"``, ``policy`` the fallback policy for uncertified entries,
    ``want_bound`` whether per-entry bounds are returned; the phases read these
    and nothing else of the call's arguments. ``wider``: the scheme a product takes
    instead when step 1 finds entries ``scheme`` cannot certify at its largest count
    (set only where the machine chose ``scheme``: :func:`widened`).
    """

    scheme: Scheme
    num_moduli: int | Literal["auto"]
    mode: Mode
    engine: Engine
    policy: Policy
    want_bound: bool
    backend: Backend
    wider: Scheme | None = None


def widened(opts: Options, dec: decisions.Decision) -> Options | None:
    """The options to decide again with, when the machine chose ``opts.scheme`` and step 1
    left entries uncertified at its largest count; else ``None``.

    The machine's choice (:func:`ozaki.backends.engines.machine_scheme`) is the fastest
    scheme on typical inputs; ``int8`` keeps about 160 bits of the operands at its 20
    moduli, ``fp64`` about 430, so products of operands whose lines span a wide
    exponent range certify in ``fp64`` where ``int8`` would send most entries to the
    exact fallback (measured: 896 x 128 x 896 with column exponents spread over
    2**+-100: 144142 entries against 6). The outcome depends only on the input and
    the machine's choice, so the bits stay reproducible on that machine.
    """
    if opts.wider is None or not dec.uncertified.any():
        return None
    return replace(opts, scheme=opts.wider, engine=opts.backend.engine("auto", opts.wider),
                   wider=None)


def floors_buffer(op: Operand, xp=np) -> np.ndarray:
    """Float32 planes (bits' layout) for the floors of an operand that is not kept:
    the residue planes' workspace (namespace ``xp``), free until the floor GEMM has
    read them."""
    return workspace(xp).take("ra" if op.outer == 0 else "rb", op.layout(op.batch), np.float32)


class FloorRequest(NamedTuple):
    """Ask an operand for its accurate-mode floors at ``r`` with its line data, in one
    read, into ``out`` (float32, the bits' layout: :func:`floors_buffer`)."""

    r: int
    out: np.ndarray


class Prepared:
    """An operand with the data that depend on it alone.

    ``op`` is the :class:`~ozaki.core.backend.Operand`; ``lines`` its exact line
    data (with ``norms``, also its fast-mode norm sums, formed in the same read).
    A kept operand (``keep``, what :func:`ozaki.prepare` makes) also keeps
    its accurate-mode floors and their line sums (``floors[r]``) and fast-mode
    norm sums (``norms[h]``) across calls (an operand that is not kept may have
    them for one call: ``norms``, or ``floors`` (a :class:`FloorRequest`), asks for them
    with its line data, in the same read), and with ``keep_residues`` the residue planes
    of the shifts it was last used with (one set per modulus and chunk,
    replaced when a product picks other shifts). Everything is exact, so
    products against it give the bits of unprepared calls.
    """

    def __init__(self, op: Operand, backend, keep: bool = False, keep_residues: bool = False,
                 norms: bool = False, floors: FloorRequest | None = None):
        self.op = op
        self.backend = backend
        self.floors: dict[int, decisions.Floors] = {}
        self.norms: dict[int, decisions.Norms] = {}
        if norms:  # fast mode's norm sums in the same read of the operand
            h = scaling.norm_bits(op.inner)
            *stats, S2, S1 = backend.line_norms(op, h)
            self.lines = decisions.Lines(*stats)
            self.norms[h] = decisions.Norms(h, S2, S1)
        elif floors is not None:  # accurate mode's floors in the same read
            stats, planes, sums = backend.line_floors(op, floors.r, floors.out)
            self.lines = decisions.Lines(*stats)
            self.floors[floors.r] = decisions.Floors(planes, sums)
        else:
            self.lines = decisions.Lines(*backend.line_stats(op))
        self.residues: dict[tuple, tuple[bytes, np.ndarray]] = {}
        self.keep = keep
        self.keep_residues = keep and keep_residues

    def residue_planes(self, shift: np.ndarray, moduli: tuple[int, ...], out: np.ndarray,
                       part: tuple[int, int] | None = None,
                       cols: tuple[int, int] | None = None) -> np.ndarray:
        """Residues of ``trunc(x 2**shift)`` mod each of ``moduli`` (kept, or formed into ``out``).

        ``part = (lo, hi)`` restricts a stack to its slices ``lo:hi`` (a shared
        operand, a stack of one, is read whole); ``cols = (j0, j1)`` a right
        operand to its columns. Returns (L, b, rows, cols) planes.
        """
        op = self.op if part is None or self.op.batch == 1 else self.op.sub(*part)
        E, zero = self.lines.exponents
        if part is not None and self.op.batch > 1:
            E, zero = E[part[0]:part[1]], zero[part[0]:part[1]]
        if cols is not None:
            E, zero = E[:, cols[0]:cols[1]], zero[:, cols[0]:cols[1]]
            fit = self.backend.residue_pass(E, zero, shift[:, cols[0]:cols[1]])
        else:
            fit = self.backend.residue_pass(E, zero, shift)
        if not self.keep_residues:
            return self.backend.residues(op, shift, moduli, out, fit, cols)
        key = (moduli, part if self.op.batch > 1 else None, cols, out.dtype)
        tag = shift.shape, shift.tobytes()
        kept = self.residues.get(key)
        if kept is not None and kept[0] == tag:
            return kept[1]
        planes = self.backend.residues(op, shift, moduli, out, fit, cols).copy()
        self.residues[key] = (tag, planes)  # the last shifts' planes, nothing older
        return planes


def _norms(backend, prep: Prepared, k: int) -> decisions.Norms:
    h = scaling.norm_bits(k)
    got = prep.norms.get(h)
    if got is None:
        E, zero = prep.lines.exponents
        shift = np.where(zero, 0, h - E).astype(np.int64)
        got = decisions.Norms(h, *backend.norm_sums(prep.op, shift))
        if prep.keep:
            prep.norms[h] = got
    return got


def decide(pa: Prepared, pb: Prepared, opts: Options, b: int,
           kind: Kind = REAL, scratch: np.ndarray | None = None) -> decisions.Decision:
    """Step 1 for the stack ``pa`` @ ``pb`` of ``b`` slices: shifts, counts, certificate.

    ``scratch``, a C-contiguous FP64 array of the product's shape (b, m, n) (for
    complex products the embedding's (b, m, 2n)), may receive the floor GEMM,
    which is dead once the decisions are made (:func:`emulate` passes ``out``:
    the product's pages are then first touched by the BLAS, as in a native GEMM).
    """
    backend = opts.backend
    k = pa.op.shape[2]  # for complex products, the real embedding's inner dimension

    def operands(g):
        return slice_operands(pa, pb, g, kind)

    la, lb = pa.lines, pb.lines
    start = auto_num_moduli(opts.scheme, k)
    if kind.complex:
        lb = decisions.Lines(*(kind.tile(x) for x in (lb.maxbits, lb.bad, lb.nnz)))
    if opts.mode == "fast":
        na = _norms(backend, pa, k).normwise(pa.lines)
        nbn = _norms(backend, pb, k)
        if kind.complex:
            nbn = decisions.Norms(nbn.h, kind.tile(nbn.S2), kind.tile(nbn.S1))
        nb = nbn.normwise(lb)
        return decisions.decide_fast(opts, na, nb, b, start)
    r = scaling.quantization_bits(opts.scheme, k)
    floors = (pa.floors.get(r), pb.floors.get(r))  # of [Br; Bi] for complex products
    # floors of operands that are not kept live in the residue planes' workspace
    # (they are dead once G is formed), and G in ``scratch`` or the product plane's
    ws = workspace(backend.xp)
    shape = (b, pa.op.shape[1], kind.width * pb.op.shape[2])
    if scratch is None or scratch.shape != shape or scratch.dtype != np.float64 \
            or not scratch.flags.c_contiguous:
        scratch = ws.take("prod", shape)
    bufs = tuple(None if p.keep or got is not None else floors_buffer(p.op, backend.xp)
                 for p, got in ((pa, floors[0]), (pb, floors[1]))) + (scratch,)
    bd, e, f, (fa, fb) = decisions.bound_data(backend, opts.engine, pa.op, pb.op, la, lb,
                                              opts.scheme, k, floors, bufs, kind)
    if pa.keep:
        pa.floors.setdefault(r, fa)
    if pb.keep:
        pb.floors.setdefault(r, fb)
    return decisions.decide_accurate(opts, bd, e, f, la, lb, b, k, operands, start,
                                     tie=kind.tie)


def _shared(shift: np.ndarray, counts: np.ndarray) -> bool:
    """Whether one plane of a shared operand serves the whole stack."""
    return bool((counts == counts[0]).all() and (shift == shift[:1]).all())


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

    ``s`` (b, m) and ``t`` (b, n) are the shifts (for a complex product ``t`` is
    that of the ``n`` columns of ``B``, tied); ``sa``/``tb`` what the residue
    passes read (one row when a shared operand's plane serves the stack:
    ``wide_a``/``wide_b``, one wide GEMM). The product runs a piece at a time,
    small enough to stay in cache between the passes: ``chunk`` slices of a
    stack, or ``width`` of the ``cols`` columns of a single product with a small
    ``A``, whose planes of all moduli are then formed once (``RA``). ``bound``
    bounds every exact modular product.
    """

    b: int
    m: int
    k: int
    n: int
    kind: Kind
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

    @property
    def N(self) -> int:
        return len(self.moduli)

    def pieces(self) -> list[Piece]:
        return [Piece(lo, min(self.b, lo + self.chunk), j0, min(self.cols, j0 + self.width))
                for lo in range(0, self.b, self.chunk)
                for j0 in (range(0, self.cols, self.width) if self.cols else (0,))]


def _layout(pa: Prepared, pb: Prepared, opts: Options, dec, b: int, m: int, k: int, n: int,
            kind: Kind) -> Layout:
    """The :class:`Layout` of a product once step 1 has decided ``dec``."""
    A, B = pa.op, pb.op
    counts = dec.counts
    moduli = MODULI[opts.scheme][:int(counts.max())]
    t = np.ascontiguousarray(dec.t[:, :n] if kind.complex else dec.t)
    s = np.ascontiguousarray(dec.s)
    wide_a = A.batch == 1 and b > 1 and _shared(s, counts)
    wide_b = B.batch == 1 and b > 1 and _shared(t, counts)
    cols = kind.width * n
    per_slice = 8 * (A.shape[1] * A.shape[2] + B.shape[1] * B.shape[2] + m * cols)
    lay = Layout(b, m, k, n, kind, moduli, counts, s, t, s[:1] if wide_a else s,
                 t[:1] if wide_b else t, wide_a, wide_b,
                 chunk=b if b == 1 else max(1, min(b, CHUNK_BYTES // per_slice)),
                 width=column_block(A, m, k, n, len(moduli)) if b == 1 and not kind.complex
                 else cols, cols=cols,
                 bound=max(product_bound(opts.engine, p, k) for p in moduli))
    if lay.width < cols:  # A's planes of all N moduli, formed once for every block
        lay.RA = pa.residue_planes(s, moduli, workspace(opts.backend.xp).take(
            "ra", (lay.N,) + A.layout(1), number_types(opts.backend, opts.engine, moduli, k)[0]))
    return lay


def emulate(pa: Prepared, pb: Prepared, opts: Options, out: np.ndarray,
            kind: Kind = REAL, decision: decisions.Decision | None = None) -> OzakiInfo:
    """``out[g] = A_g @ B_g`` (b, m, n) by Ozaki Scheme II; returns the info record.

    For a complex ``kind``, ``pa`` holds ``[Ar, Ai]`` (b, m, 2k), ``pb`` holds
    ``[Br; Bi]`` (b, 2k, n) and ``out``, complex128 (b, m, n) and C-contiguous,
    receives the product: the CRT writes its real and imaginary parts in place.
    ``decision`` imposes step 1's outcome (:func:`decide`): a caller that
    computed it from combined pieces (:mod:`ozaki.core.decisions`) gets, for this
    piece, the bits of the whole product.

    The steps: decide (:func:`decide`), lay out the pieces (:func:`_layout`), run
    each piece through residues, modular products and the CRT (:func:`_piece`, on
    the backend's worker threads when it has several), then what the emulation
    does not deliver (:func:`ozaki.core.fallback.finish`).
    """
    A, B = pa.op, pb.op
    b, m = out.shape[0], A.shape[1]
    k = A.shape[2] // 2 if kind.complex else A.shape[2]
    n = B.shape[2]
    t0 = time.perf_counter()
    plane = plane_of(out, kind)
    # the floor GEMM (accurate mode) lives in ``plane`` until the product overwrites it
    dec = decide(pa, pb, opts, b, kind, plane) if decision is None else decision
    # a decision the caller passed is not written into (the bound is finished in place)
    info = OzakiInfo.from_decision(opts, dec, kind, copy_bound=decision is not None)
    if info.uncertified and opts.policy == "raise":
        raise CertificationError(explain(dec, opts.scheme, opts.mode,
                                         stacked=out.ndim == 3 and b > 1))
    lay = _layout(pa, pb, opts, dec, b, m, k, n, kind)
    types = number_types(opts.backend, opts.engine, lay.moduli, k)
    info.workspace_bytes = piece_bytes(min(b, lay.chunk), m, A.shape[2], lay.width, lay.N,
                                       residue_dtype(lay.moduli).itemsize, kind,
                                       lay.RA is not None, types[0].itemsize,
                                       8 if kind.complex else types[1].itemsize)
    info.seconds["scaling"] += time.perf_counter() - t0
    _run_pieces(pa, pb, opts, lay, plane, info.seconds)
    t0 = time.perf_counter()
    fallback.finish(opts.backend, info, dec, opts.policy, out, pa.lines, pb.lines, A.shape[2],
                    b, kind, lambda g: slice_operands(pa, pb, g, kind))
    info.seconds["reconstruction"] += time.perf_counter() - t0
    return info


def plane_of(out: np.ndarray, kind: Kind) -> np.ndarray:
    """``out`` (b, m, n) as the real plane the phases write: itself, or for complex
    products its memory as (b, m, 2n)."""
    if not kind.complex:
        return out
    b, m, n = out.shape
    return out.view(np.float64).reshape(b, m, 2 * n)


def _run_pieces(pa: Prepared, pb: Prepared, opts: Options, lay: Layout, plane: np.ndarray,
                sec: dict) -> None:
    """Every piece of ``lay`` into ``plane`` (for complex products ``out``'s memory as
    (b, m, 2n)), adding each phase's seconds to ``sec``."""
    pieces = lay.pieces()
    threads = piece_threads(opts.backend, opts.engine, pa, pb, lay.s, lay.t, pieces,
                            lay.moduli, lay.k, lay.kind)
    if threads > 1:
        # the threads start far apart in ``out`` (a piece each from every
        # thread's share in turn), so they do not fault the same fresh pages
        share = -(-len(pieces) // threads)
        pieces = [pieces[i] for j in range(share) for i in range(j, len(pieces), share)]
    for part in opts.backend.run_pieces(
            lambda piece: _piece(pa, pb, opts, lay, piece, plane, dict.fromkeys(sec, 0.0)),
            pieces, threads):
        for name, v in part.items():
            sec[name] += v


def _piece(pa: Prepared, pb: Prepared, opts: Options, lay: Layout, piece: Piece,
           plane: np.ndarray, sec: dict) -> dict:
    """Residues, modular products and CRT of one piece into ``plane``; returns ``sec``.

    A real piece small enough keeps its exact products for the CRT (no store
    pass); a complex one stores the ``[Re | Im]`` residues and reconstructs each
    part into its place in the complex result.
    """
    lo, hi, j0, j1 = piece.lo, piece.hi, piece.j0, piece.j1
    n, m = lay.n, lay.m
    shape = (lay.N, hi - lo, m, j1 - j0)
    raw = not lay.kind.complex and 8 * np.prod(shape) <= GROUP_BYTES
    held = number_types(opts.backend, opts.engine, lay.moduli, lay.k)[1] if raw \
        else residue_dtype(lay.moduli)  # exact products, or their residues
    store = workspace(opts.backend.xp).take("store", shape, held)
    _products(pa, pb, opts, lay, piece, store, sec, raw)
    t2 = time.perf_counter()
    s, t, counts = lay.s[lo:hi], lay.t[lo:hi], lay.counts[lo:hi]
    if lay.kind.complex:  # [Re | Im] residues into the parts of the complex result
        b = plane.shape[0]
        parts = plane.reshape(b, m, n, 2)[..., 0], plane.reshape(b, m, n, 2)[..., 1]
        for h, part in enumerate(parts):
            _reconstruct(opts.backend, opts.scheme, store[..., h * n:(h + 1) * n], counts,
                         s, t, part[lo:hi], 0, 0)
    else:
        _reconstruct(opts.backend, opts.scheme, store, counts, s, t, plane[lo:hi], j0,
                     lay.bound if raw else 0)
    sec["reconstruction"] += time.perf_counter() - t2
    return sec


def _reconstruct(backend, scheme, store, counts, s, t, out, c0: int, products: int) -> None:
    """CRT of a piece's ``store`` (N, c, m, w) into ``out[:, :, c0:c0 + w]`` (c slices).

    ``store`` holds residues (``products`` 0), or the exact modular products,
    at most ``products`` in magnitude.
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


def number_types(backend, engine, moduli: tuple[int, ...], k: int) -> tuple[np.dtype, np.dtype]:
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


def slice_operands(pa: Prepared, pb: Prepared, g: int, kind: Kind):
    """Slice ``g``'s real matrices (for complex products, the real embedding)."""
    A, B = pa.op, pb.op
    Ag, Bg = A.X[min(g, A.batch - 1)], B.X[min(g, B.batch - 1)]
    if kind.complex:
        k = Bg.shape[0] // 2
        Br, Bi = Bg[:k], Bg[k:]
        Bg = np.block([[Br, Bi], [-Bi, Br]])
    return Ag, Bg


def _products(pa: Prepared, pb: Prepared, opts: Options, lay: Layout, piece: Piece,
              store: np.ndarray, sec: dict, raw: bool = False) -> None:
    """Residues and modular products of a piece, modulus by modulus, into ``store``.

    A piece of ``c`` slices and, for a product in column blocks, ``n`` columns of
    ``B`` (``lay.RA`` then holds ``A``'s planes of all the moduli already); with
    ``raw`` the exact products themselves go into ``store`` (FP64), not their residues.
    """
    kind, wide_a, wide_b, RA, k, m = lay.kind, lay.wide_a, lay.wide_b, lay.RA, lay.k, lay.m
    lo, hi = piece.lo, piece.hi
    c = hi - lo
    n = lay.n if kind.complex else piece.j1 - piece.j0
    part = (lo, hi) if lay.chunk < lay.b else None
    cols = None if lay.width == lay.cols else (piece.j0, piece.j1)
    sa = lay.sa if lay.sa.shape[0] == 1 else lay.sa[lo:hi]
    tb = lay.tb if lay.tb.shape[0] == 1 else lay.tb[lo:hi]
    backend, engine = opts.backend, opts.engine
    ws = workspace(backend.xp)
    moduli = MODULI[opts.scheme][:store.shape[0]]
    lay_a, lay_b = pa.op.layout(sa.shape[0]), pb.op.layout(tb.shape[0])
    if cols is not None:  # a block of columns, in the bits' layout
        lay_b = (lay_b[0], n, lay_b[2]) if pb.op.T else lay_b[:2] + (n,)
    plane, product = number_types(opts.backend, opts.engine, moduli, k)
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
        for q, p in enumerate(ps):
            t1 = time.perf_counter()
            ra, rb = planes_a[q_a + q], RB[q]
            bound = product_bound(engine, p, k)
            if kind.complex:
                P = complex_product(backend, engine, ra, rb, p)
                backend.complex_store(*P, p, store[q0 + q], n, bound)
            else:
                prod = store[q0 + q] if raw else ws.take("prod", (c, m, n), product)
                if wide_b and ra.flags.c_contiguous:  # one wide GEMM: (c m, k) @ (k, n)
                    modular_product(backend, engine, ra.reshape(1, c * m, k), rb, p,
                                    prod.reshape(1, c * m, n))
                elif wide_a:  # one wide GEMM: (m, k) @ (k, c n)
                    wide = modular_product(backend, engine, ra,
                                           rb.transpose(1, 0, 2).reshape(1, k, c * n), p)
                    prod[...] = wide.reshape(m, c, n).transpose(1, 0, 2)
                else:  # one batched GEMM
                    modular_product(backend, engine, ra, rb, p, prod)
                if not raw:
                    backend.store(prod, p, store[q0 + q], bound)
            t2 = time.perf_counter()
            sec["products"] += t2 - t1
