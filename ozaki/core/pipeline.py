"""The data path: decisions -> residues -> exact modular products -> reconstruction.

One function, :func:`emulate`, runs a stack of ``b`` products ``C_g = A_g B_g``
(either operand may be one matrix shared by the stack) through the phases:

1. **decisions** (:func:`decide`, on :mod:`ozaki.core.decisions`): exact line
   data, the accurate-mode floor GEMM or the fast-mode exact norm sums, then
   shifts and counts per slice; what it reads of each operand alone (line data,
   floors, norm sums) is held by :class:`~ozaki.core.operands.Prepared`
   (:mod:`ozaki.core.operands`), kept across calls for a prepared operand;
2. **residues** and **modular products**, modulus by modulus: each modular
   product of the stack is one batched GEMM, or one wide GEMM when an operand is
   shared and its shifts agree across the stack (exact either way, so the bits
   are those of the slice-by-slice products); the products are stored as small
   integers;
3. **reconstruction** (CRT, the backend's :meth:`~ozaki.core.backend.Backend.reconstruct`);
4. **what the emulation does not deliver** (:mod:`ozaki.core.fallback`,
   :mod:`ozaki.core.special`): exact fallback, overflow guard, non-finite values.

This module holds the call's :class:`Options`, step 1 and the product's
:class:`~ozaki.core.passes.Layout` (how it is cut into pieces: chunks of a stack,
column blocks, worker threads, :mod:`ozaki.core.pieces`); steps 2 and 3 on one
piece are :mod:`ozaki.core.passes` (:func:`~ozaki.core.passes.run_piece`), which
also argues why the cut changes no bit.

Complex products run the same path on the real embedding
``[Ar, Ai] @ [[Br, Bi], [-Bi, Br]] = [Re, Im]`` with the shifts of a ``B``
column tied across its real and imaginary columns; the modular products use
Gauss's three products (:func:`ozaki.core.products.complex_product`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from . import decisions, fallback, scaling
from .kind import REAL, Kind
from .backend import Backend
from .certify import CertificationError, explain
from .engine import Engine
from .info import OzakiInfo
from .moduli import MODULI, auto_num_moduli, residue_dtype
from .operands import Prepared, floors_buffer
from .passes import Layout, number_types, run_piece
from .products import product_bound, serial_columns
from .pieces import CHUNK_BYTES, column_block, piece_bytes, piece_threads
from .workspace import workspace

__all__ = ["Options", "decide", "emulate", "slice_operands", "widened", "plane_of",
           "CHUNK_BYTES"]


Scheme = Literal["int8", "fp8", "fp64", "int7"]
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
        na = pa.norm_sums(k).normwise(pa.lines)
        nbn = pb.norm_sums(k)
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


def _layout(pa: Prepared, pb: Prepared, opts: Options, dec, b: int, m: int, k: int, n: int,
            kind: Kind) -> Layout:
    """The :class:`~ozaki.core.passes.Layout` of a product once step 1 has decided ``dec``."""
    A, B = pa.op, pb.op
    counts = dec.counts
    moduli = MODULI[opts.scheme][:int(counts.max())]
    t = np.ascontiguousarray(dec.t[:, :n] if kind.complex else dec.t)
    s = np.ascontiguousarray(dec.s)
    wide_a = A.batch == 1 and b > 1 and _shared(s, counts)
    wide_b = B.batch == 1 and b > 1 and _shared(t, counts)
    cols = kind.width * n
    per_slice = 8 * (A.shape[1] * A.shape[2] + B.shape[1] * B.shape[2] + m * cols)
    lay = Layout(b, m, k, n, kind, opts.scheme, opts.engine, opts.backend, moduli, counts, s,
                 t, s[:1] if wide_a else s, t[:1] if wide_b else t, wide_a, wide_b,
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
    each piece through residues, modular products and the CRT
    (:func:`ozaki.core.passes.run_piece`, on the backend's worker threads when it
    has several), then what the emulation does not deliver
    (:func:`ozaki.core.fallback.finish`).
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
    if threads > 1 and lay.b == 1 and opts.engine.name == "cpu-blas":
        # each worker's GEMMs on its own thread: the BLAS's pool would be woken by two
        # callers at once (:func:`~ozaki.core.products.column_stack_product`)
        lay = replace(lay, gemm_columns=serial_columns(lay.m, lay.k))
    if threads > 1:
        # the threads start far apart in ``out`` (a piece each from every
        # thread's share in turn), so they do not fault the same fresh pages
        share = -(-len(pieces) // threads)
        pieces = [pieces[i] for j in range(share) for i in range(j, len(pieces), share)]
    for part in opts.backend.run_pieces(
            lambda piece: run_piece(pa, pb, lay, piece, plane, dict.fromkeys(sec, 0.0)),
            pieces, threads):
        for name, v in part.items():
            sec[name] += v


def slice_operands(pa: Prepared, pb: Prepared, g: int, kind: Kind):
    """Slice ``g``'s real matrices (for complex products, the real embedding)."""
    A, B = pa.op, pb.op
    Ag, Bg = A.X[min(g, A.batch - 1)], B.X[min(g, B.batch - 1)]
    if kind.complex:
        k = Bg.shape[0] // 2
        Br, Bi = Bg[:k], Bg[k:]
        Bg = np.block([[Br, Bi], [-Bi, Br]])
    return Ag, Bg
