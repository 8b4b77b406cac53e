"""SUMMA on residues: the exact modular products of a block, summed over k-panels.

For each k-panel (:func:`panels`: inside one column block of ``A`` and one row block of
``B``), the owners broadcast the FP64 panels along the process row and column, the bytes
of a native SUMMA; each rank forms the residues of what it received with the whole
product's shifts, multiplies them exactly modulus by modulus and adds the products,
reduced to symmetric residues, to its accumulators. The sums stay small exact integers
(at most ``panels * p / 2``), congruent to the whole product's modular products, so the
CRT sees the residues a serial call sees and gives its bits. Complex panels are embedded
on arrival (``[Ar, Ai]``, ``[Br; Bi]``) and multiplied by Gauss's three products, each
accumulated apart.
"""

from __future__ import annotations

import time

import numpy as np

from ..core.kind import Kind
from ..core.moduli import MODULI, crt_plan, residue_dtype
from ..core.products import complex_product, modular_product
from .layout import bounds
from .traffic import bcast

__all__ = ["panels", "owners", "embedded", "modular_summa"]


def panels(k: int, P: int, Q: int, width: int) -> list[tuple[int, int]]:
    """k-panels ``[k0, k1)``: inside one column block of ``A`` and one row block of ``B``,
    at most ``width`` wide."""
    edges = sorted(set(bounds(k, Q).tolist()) | set(bounds(k, P).tolist()))
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        out += [(s, min(hi, s + width)) for s in range(lo, hi, width)]
    return out


def owners(grid, k: int, width: int):
    """Per panel: ``(k0, k1, qa, a0, pb, b0)``, the process column holding ``A``'s columns
    (from its local column ``a0``) and the process row holding ``B``'s rows (from ``b0``)."""
    akb, bkb = bounds(k, grid.Q), bounds(k, grid.P)
    for k0, k1 in panels(k, grid.P, grid.Q, width):
        qa = int(np.searchsorted(akb, k0, side="right") - 1)
        pb = int(np.searchsorted(bkb, k0, side="right") - 1)
        yield k0, k1, qa, k0 - int(akb[qa]), pb, k0 - int(bkb[pb])


def embedded(X: np.ndarray, outer: int) -> np.ndarray:
    """A real operand as it is; a complex one as ``[Xr, Xi]`` (left) or ``[Xr; Xi]`` (right)."""
    if not np.iscomplexobj(X):
        return X
    return np.ascontiguousarray(np.concatenate((X.real, X.imag), axis=1 - outer))


def broadcast_panels(A, B, k0, k1, qa, a0, pb, b0, tr, kind="panels"):
    """This panel of ``A``'s local block (along the row) and of ``B``'s (along the column)."""
    grid = A.grid
    w = k1 - k0
    pa = (np.ascontiguousarray(A.local[:, a0:a0 + w]) if grid.q == qa
          else np.empty((A.local.shape[0], w), A.local.dtype))
    bcast(grid.row, pa, qa, tr, kind)
    pbk = (np.ascontiguousarray(B.local[b0:b0 + w]) if grid.p == pb
           else np.empty((w, B.local.shape[1]), B.local.dtype))
    bcast(grid.col, pbk, pb, tr, kind)
    return pa, pbk


def modular_summa(A, B, dec, la, lb, opts, width: int, kind: Kind, tr):
    """``(out, seconds)``: this rank's block of ``C`` (1, m, n) or ``[Re, Im]`` (1, m, 2n)."""
    backend, engine = opts.backend, opts.engine
    N = int(dec.counts[0])
    moduli = MODULI[opts.scheme][:N]
    m, n, k = A.local.shape[0], B.local.shape[1], A.shape[1]
    s, t = dec.s, dec.t[:, :n]  # complex: the Re and Im columns share their shift
    parts = kind.products
    acc = np.zeros((parts, N, 1, m, n))
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    split_a, split_b = backend.residue_pass(Ea, za, s), backend.residue_pass(Eb, zb, t)
    sec = dict.fromkeys(("residues", "products", "communication", "reconstruction"), 0.0)
    for i, (k0, k1, qa, a0, pb, b0) in enumerate(owners(A.grid, k, width)):
        t0 = time.perf_counter()
        pa, pbk = broadcast_panels(A, B, k0, k1, qa, a0, pb, b0, tr)
        t1 = time.perf_counter()
        sec["communication"] += t1 - t0
        if not (m and n):
            continue
        oa = backend.operand(embedded(pa, 0)[None], 0)
        ob = backend.operand(embedded(pbk, 1)[None], 1)
        RA = backend.residues(oa, s, moduli, np.empty((N,) + oa.layout(1)), split_a)
        RB = backend.residues(ob, t, moduli, np.empty((N,) + ob.layout(1)), split_b)
        t2 = time.perf_counter()
        sec["residues"] += t2 - t1
        for q, p in enumerate(moduli):
            prods = (complex_product(backend, engine, RA[q], RB[q], p) if kind.complex
                     else (modular_product(backend, engine, RA[q], RB[q], p),))
            for j, prod in enumerate(prods):  # exact: |acc| <= panels * p / 2
                backend.reduce_into(acc[j, q], prod, p, i == 0)
        sec["products"] += time.perf_counter() - t2
    out = np.empty((1, m, kind.width * n))
    t0 = time.perf_counter()
    if m and n:
        plan = crt_plan(opts.scheme, N)
        if kind.complex:
            store = np.empty((N, 1, m, 2 * n), residue_dtype(moduli))
            for q, p in enumerate(moduli):
                backend.complex_store(acc[0, q], acc[1, q], acc[2, q], p, store[q], n)
            backend.reconstruct(store, plan, s, dec.t, out)
        else:
            backend.reconstruct(acc[0], plan, s, t, out, products=True)
    sec["reconstruction"] += time.perf_counter() - t0
    return out, sec
