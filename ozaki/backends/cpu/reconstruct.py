"""Step 4, the Chinese Remainder reconstruction, and the exact power-of-two scaling.

:func:`reconstruct` turns the stored residues of the N modular products into the
product, entry by entry in a fixed order; :func:`serial_kernel` gives its serial form
(for pieces on worker threads), specialised per count; :func:`ldexp` scales by
``2**e`` with one rounding. The passes that reduce the exact modular products to the
residues it reads (:func:`store_residues`, :func:`reduce_into` for k-blocks, and the Gauss
combinations of complex products) are here too. All are compiled with numba
under the rules of :mod:`ozaki.backends.cpu.kernels` (no fastmath, fixed order per output,
one thread per output).
"""

from __future__ import annotations

import functools

import numba as nb
import numpy as np

from .kernels import CACHE, CHUNK_TASKS, POW2, round_int, row_tiles, smod_product, smod_short
from .parallel import run

__all__ = ["ldexp", "reconstruct", "reconstruct_serial", "serial_kernel", "reduce_into",
           "store_residues", "add_halves", "complex_residues"]

@nb.njit(inline="always")
def ldexp(y, e):
    """``y * 2**e`` rounded once, for integer-valued ``|y| < 2**960``.

    One multiplication by a normal power of two when ``e`` is in range; for
    ``e < -1022`` the first step ``y * 2**-1022`` is exact (``|y| >= 1``) and the
    second rounds once; below ``e = -2044`` the result is 0 (``|y| < 2**960``).
    For ``e > 1023`` a nonzero ``y`` overflows.
    """
    if e >= -1022:
        if e <= 1023:
            return y * POW2[e + 1022]
        return y * POW2[2045] * POW2[2045]
    if e >= -2044:
        return (y * POW2[0]) * POW2[e + 2044]
    return (y * POW2[0]) * POW2[0]


@nb.njit(inline="always")
def _levels(S, q, hi, lo, e, p_levels, p_inv):
    """``q = rint(sum_l S_l / P)``, ``hi + lo = sum_l (S_l - q P_l)`` (TwoSum) on entries ``:e``."""
    for k in range(e):
        q[k] = 0.0
        lo[k] = 0.0
    for lv in range(S.shape[0]):
        Sl = S[lv]
        for k in range(e):
            q[k] += Sl[k] * p_inv
    S0 = S[0]
    for k in range(e):
        q[k] = round_int(q[k])
        hi[k] = S0[k] - q[k] * p_levels[0]
    for lv in range(1, S.shape[0]):
        pl = p_levels[lv]
        Sl = S[lv]
        for k in range(e):
            d = Sl[k] - q[k] * pl
            s = hi[k] + d
            bb = s - hi[k]
            lo[k] += (hi[k] - (s - bb)) + (d - bb)
            hi[k] = s


@nb.njit(inline="always")
def _residues(F, Rt, mods, t, short):
    """``F = Rt`` as floats (residues), or ``smod(Rt, p_t)`` (exact products, ``mods``)."""
    if mods.shape[0] == 0:
        for j in range(F.shape[0]):
            F[j] = float(Rt[j])
    else:
        p, pinv, c26 = mods[t, 0], mods[t, 1], mods[t, 2]
        for j in range(F.shape[0]):
            F[j] = smod_product(Rt[j], p, pinv, c26, short)


@nb.njit(inline="always")
def _scale(o, hi, lo, k, si, sc, pw, pf):
    """``o[j] = (hi + lo)[k + j] * 2**-(si + sc[j])`` along the row view ``o``.

    :func:`ldexp`, whose one multiplication by ``2**e`` takes, where every exponent
    ``e = -(si + sc[j])`` of the row is in ``[-1022, 1023]``, the double built from
    its bits ``(e + 1023) << 52`` in ``pw`` (int64 scratch, ``pf`` its float64 view):
    the normal power of two :data:`~ozaki.backends.cpu.kernels.POW2` holds, so the
    same product, without a table lookup in the loop.
    """
    w = o.shape[0]
    if w == 0:
        return
    if si + sc.max() <= 1022 and si + sc.min() >= -1023:
        for j in range(w):
            pw[j] = (1023 - si - sc[j]) << 52
        for j in range(w):
            o[j] = (hi[k + j] + lo[k + j]) * pf[j]
        return
    for j in range(w):
        o[j] = ldexp(hi[k + j] + lo[k + j], -(si + sc[j]))


@nb.njit(inline="always")
def _level_sums(S, F, W):
    """``S[l] = sum_t W[t, l] F[t]`` over the task's entries, four moduli a pass.

    Every partial sum of ``sum_t W[t, l] C_t`` is exact in any order
    (:mod:`ozaki.core.moduli`), so grouping the terms changes no value; starting
    from ``0.0`` keeps a zero sum ``+0.0``, as the one-by-one sum has it.
    """
    N, L = W.shape
    e = F.shape[1]
    for lv in range(L):
        Sl = S[lv]
        for k in range(e):
            Sl[k] = 0.0
        t = 0
        while t + 4 <= N:
            w0, w1, w2, w3 = W[t, lv], W[t + 1, lv], W[t + 2, lv], W[t + 3, lv]
            F0, F1, F2, F3 = F[t], F[t + 1], F[t + 2], F[t + 3]
            for k in range(e):
                Sl[k] += (w0 * F0[k] + w1 * F1[k]) + (w2 * F2[k] + w3 * F3[k])
            t += 4
        if t + 2 <= N:
            w0, w1 = W[t, lv], W[t + 1, lv]
            F0, F1 = F[t], F[t + 1]
            for k in range(e):
                Sl[k] += w0 * F0[k] + w1 * F1[k]
            t += 2
        if t < N:
            w0 = W[t, lv]
            F0 = F[t]
            for k in range(e):
                Sl[k] += w0 * F0[k]


#: Entries per task: its level sums stay in L1.
TASK = 512


@nb.njit(inline="always")
def _crt_tasks(c, R, W, p_levels, p_inv, srow, scol, out, c0, mods, short):
    """Chunk ``c`` of :func:`reconstruct`'s tasks, each a tile of ``per`` consecutive rows."""
    N, L = W.shape
    m = out.shape[1]
    rows = out.shape[0] * m
    tile, tiles, per, _ = row_tiles(rows, R.shape[3], TASK)
    F = np.empty((N, TASK))
    S = np.empty((L, TASK))
    q = np.empty(TASK)
    hi = np.empty(TASK)
    lo = np.empty(TASK)
    pw = np.empty(TASK, np.int64)
    pf = pw.view(np.float64)
    for task in range(c * CHUNK_TASKS, (c + 1) * CHUNK_TASKS):
        r0 = (task // tiles) * per
        if r0 >= rows:
            break
        r1 = min(rows, r0 + per)
        j0 = (task % tiles) * tile
        w_ = min(tile, R.shape[3] - j0)
        col = c0 + j0
        e = (r1 - r0) * w_  # entry k: row r0 + k // w_, column j0 + k % w_
        for gi in range(r0, r1):
            g = gi // m
            i = gi - g * m
            k0 = (gi - r0) * w_
            for t in range(N):
                _residues(F[t, k0:k0 + w_], R[t, g, i, j0:j0 + w_], mods, t, short)
        _level_sums(S[:, :e], F[:, :e], W)
        _levels(S, q, hi, lo, e, p_levels, p_inv)
        for gi in range(r0, r1):
            g = gi // m
            i = gi - g * m
            _scale(out[g, i, col:col + w_], hi, lo, (gi - r0) * w_, srow[g, i],
                   scol[g, col:col + w_], pw, pf)


@nb.njit(nogil=True, cache=CACHE)
def _crt_chunks(t0, t1, R, W, p_levels, p_inv, srow, scol, out, c0, mods, short):
    """Chunks ``t0:t1`` of :func:`reconstruct` (:func:`_crt_tasks`)."""
    for c in range(t0, t1):
        _crt_tasks(c, R, W, p_levels, p_inv, srow, scol, out, c0, mods, short)


def reconstruct(R, W, p_levels, p_inv, srow, scol, out, c0, mods, short):
    """CRT: ``out[g, i, c0 + j] = (C'_gij, symmetric mod P) * 2**-(srow[g, i] + scol[g, c0 + j])``.

    ``R`` (N, b, m, w) holds the residues ``C_t`` of the N modular products for
    the columns ``c0 .. c0 + w - 1`` of ``out`` (b, m, n), ``w <= n - c0``, or,
    when ``mods`` (N, 3) holds the moduli's ``(p, fl(1/p), 2**26 mod p)``, the
    exact products themselves (integers up to ``2**53`` in FP64, ``2**52`` with
    ``short``), reduced here by :func:`ozaki.backends.cpu.kernels.smod_product` (the values
    the store pass would keep; ``mods`` of shape (0, 3) for residues), and
    ``W`` (N, L) the exact level parts of the CRT weights. Per entry, in a fixed
    order: ``S_l = sum_t W[t, l] C_t`` (exact, see :mod:`ozaki.core.moduli`),
    ``q = rint(sum_l S_l / P)`` (exact thanks to the range margin),
    ``D_l = S_l - q P_l`` (exact), and ``sum_l D_l == C'`` exactly (the level
    tails are below half a unit). The sum is formed with error-free TwoSum:
    correctly rounded for one or two levels, faithful (error below one ulp, in
    practice correctly rounded) for more. The power-of-two scaling rounds once
    more only when the result is subnormal.

    Tasks: the rows ``(g, i)`` are flattened and cut into tasks of about
    :data:`TASK` entries (:func:`ozaki.backends.cpu.kernels.row_tiles`: several narrow rows,
    or a tile of a wide one), run in chunks that allocate the scratch once. A
    task's residues are gathered as floats first, then each step runs as a loop
    over all its entries on 1-D views, which LLVM vectorises. Each entry is
    computed by one task: the bits do not depend on the thread count
    (:mod:`ozaki.backends.cpu.parallel`). Stores of :data:`RESIDUE_MIN` residues or
    more (``mods`` empty) take :func:`residue_kernel` instead, with each entry in
    registers: the same operations in the same order, so the same bits (the tests
    compare it with the tasks above).
    """
    if _large_store(R, mods):  # every entry in registers
        run(residue_kernel(*W.shape), residue_tasks(out.shape[0] * out.shape[1], R.shape[3]),
            R, W, p_levels, p_inv, srow, scol, out, c0)
        return
    chunks = row_tiles(out.shape[0] * out.shape[1], R.shape[3], TASK)[3]
    run(_crt_chunks, chunks, R, W, p_levels, p_inv, srow, scol, out, c0, mods, short)


def _large_store(R, mods) -> bool:
    """Whether the CRT of ``R`` takes :func:`residue_kernel`: stored residues (``mods``
    empty), at least :data:`RESIDUE_MIN` of them."""
    return mods.shape[0] == 0 and R.size >= RESIDUE_MIN


def reconstruct_serial(R, W, p_levels, p_inv, srow, scol, out, c0, mods, short):
    """:func:`reconstruct` on the calling thread alone."""
    if _large_store(R, mods):
        residue_kernel(*W.shape)(0, residue_tasks(out.shape[0] * out.shape[1], R.shape[3]),
                                 R, W, p_levels, p_inv, srow, scol, out, c0)
        return
    chunks = row_tiles(out.shape[0] * out.shape[1], R.shape[3], TASK)[3]
    _crt_chunks(0, chunks, R, W, p_levels, p_inv, srow, scol, out, c0, mods, short)


#: Counts up to which :func:`serial_kernel` gives a kernel specialised for ``N``.
FUSED_MAX = 8
#: :func:`residue_kernel`'s counts are rounded up to a multiple of this: a few kernels
#: serve every count.
RESIDUE_STEP = 4
#: Stores of at least this many residues (planes times entries) take
#: :func:`residue_kernel`: each of its kernels compiles once (1-4 s, then cached on
#: disk), which pays where the pass takes milliseconds; smaller stores take the
#: generic pass (the same bits).
RESIDUE_MIN = 2 ** 24


def padded_count(N: int) -> int:
    """The count of the :func:`residue_kernel` that serves ``N`` moduli: ``N`` rounded
    up to a multiple of :data:`RESIDUE_STEP`."""
    return -(-N // RESIDUE_STEP) * RESIDUE_STEP


def _entry_lines(N: int, L: int, indent: str) -> list[str]:
    """Source lines turning one entry's ``F0 .. F{N-1}`` into ``v[j] = hi + lo``.

    The IEEE operations of :func:`_crt_tasks`, in its order: the level sums of
    :func:`_level_sums` (groups of four, then a two, then a one, from ``0.0``,
    weights ``w{t}_{l}``), ``q`` summed over the levels in order, the TwoSum chain
    of :func:`_levels`.
    """
    out = []
    for lv in range(L):
        W_ = [f"w{u}_{lv} * F{u}" for u in range(N)]
        S, t = "0.0", 0
        while t + 4 <= N:
            S, t = f"({S} + (({W_[t]} + {W_[t + 1]}) + ({W_[t + 2]} + {W_[t + 3]})))", t + 4
        if t + 2 <= N:
            S, t = f"({S} + ({W_[t]} + {W_[t + 1]}))", t + 2
        if t < N:
            S = f"({S} + {W_[t]})"
        out.append(f"S{lv} = {S}")
    q = "0.0"
    for lv in range(L):
        q = f"({q} + S{lv} * p_inv)"
    out += [f"q = round_int({q})", "hi = S0 - q * P0", "lo = 0.0"]
    for lv in range(1, L):
        out += [f"d = S{lv} - q * P{lv}", "s = hi + d", "bb = s - hi",
                "lo += (hi - (s - bb)) + (d - bb)", "hi = s"]
    out.append("v[j] = hi + lo")  # scaled in a loop of its own: it keeps this one SIMD
    return [indent + line for line in out]


def _scale_lines(indent: str) -> list[str]:
    """Source lines writing the row ``o[j] = v[j] * 2**-(si + sc[j])`` (:func:`_scale`).

    Where every exponent ``e = -(si + sc[j])`` of the row lies in ``[-1022, 1023]``
    (``sc_lo``, ``sc_hi`` the extremes of ``sc``): :func:`ldexp`'s one multiplication
    by ``2**e``, the double whose bits are ``(e + 1023) << 52`` (the normal power of
    two :data:`~ozaki.backends.cpu.kernels.POW2` holds; no table, no branch); other
    rows call :func:`ldexp` itself.
    """
    return [indent + line for line in (
        "if si + sc_hi <= 1022 and si + sc_lo >= -1023:",
        "    for j in range(w):",
        "        pw[j] = (1023 - si - sc[j]) << 52",
        "    for j in range(w):",
        "        o[j] = v[j] * pf[j]",
        "else:",
        "    for j in range(w):",
        "        o[j] = ldexp(v[j], -(si + sc[j]))")]


def _weight_lines(N: int, L: int, padded: bool = False) -> list[str]:
    """Source lines binding ``w{t}_{l} = W[t, l]``; with ``padded``, ``0.0`` for the
    terms ``t`` past the store's ``count`` planes (a kernel generated for more moduli
    than it is given: :func:`_residue_source` says why that changes no bit)."""
    guard = (lambda t: f" if {t} < count else 0.0") if padded else (lambda t: "")
    return [f"    w{t}_{lv} = W[{t}, {lv}]{guard(t)}" for t in range(N) for lv in range(L)]


def _fused_source(N: int, L: int) -> str:
    """Source of a serial CRT of short exact products (``|P| <= 2**52``) for ``N``
    moduli and ``L`` levels, all of an entry in registers.

    The same IEEE operations in the same order as :func:`_crt_tasks`
    (:func:`_entry_lines`), with the moduli and levels unrolled, so the loop over an
    output row's columns vectorises with every value in registers, and the scaling of
    :func:`_scale_lines` (measured 7.1 -> 5.0 ns an entry at 6 moduli, against a table
    lookup in the loop).
    """
    name = f"crt_{N}_{L}"
    code = [f"def {name}(R, W, p_levels, p_inv, srow, scol, out, c0, mods, short):",
            "    b, m, w = R.shape[1], R.shape[2], R.shape[3]",
            "    v = np.empty(w)",
            "    pw = np.empty(w, np.int64)",  # 2**e of each column by its bit pattern
            "    pf = pw.view(np.float64)"]
    code += [f"    p{t}, i{t} = mods[{t}, 0], mods[{t}, 1]" for t in range(N)]
    code += _weight_lines(N, L)
    code += [f"    P{lv} = p_levels[{lv}]" for lv in range(L)]
    code += ["    for g in range(b):",
             "        sc = scol[g, c0:c0 + w]",
             "        sc_lo, sc_hi = sc.min(), sc.max()",
             "        for i in range(m):",
             "            o = out[g, i, c0:c0 + w]",
             "            si = srow[g, i]"]
    code += [f"            R{t} = R[{t}, g, i]" for t in range(N)]
    code += ["            for j in range(w):"]
    code += [f"                F{t} = smod_short(R{t}[j], p{t}, i{t})" for t in range(N)]
    code += _entry_lines(N, L, " " * 16) + _scale_lines(" " * 12)
    return "\n".join(code)


#: Columns per task of :func:`residue_kernel` (its scratch, three rows of this many
#: words, stays in L1 however wide the rows).
RESIDUE_TILE = 1024


def residue_tasks(rows: int, w: int) -> int:
    """Tasks of :func:`residue_kernel` over ``rows`` rows of ``w`` columns: each row in
    tiles of :data:`RESIDUE_TILE` columns."""
    return rows * -(-w // RESIDUE_TILE)


def _residue_source(N: int, L: int) -> str:
    """Source of the CRT of stored residues (any integer type), tasks ``t0:t1`` (a tile
    of :data:`RESIDUE_TILE` columns of one flattened row each, :func:`residue_tasks`),
    for up to ``N`` moduli and ``L`` levels, all of an entry in registers.

    For a store of ``count <= N`` planes: the terms past ``count`` take the weight
    ``0.0`` (and read plane 0 again), so each adds ``+-0.0``. Every partial sum of the
    level sums is an exact integer (:mod:`ozaki.core.moduli`), so adding a signed zero
    changes no value, and a sum that starts at ``+0.0`` never becomes ``-0.0`` in
    round-to-nearest: each ``S_l`` is the one :func:`_crt_tasks` forms for ``count``
    moduli, however the padded groups fall. Everything after the level sums is
    :func:`_entry_lines`' and :func:`_scale_lines`', whose two ways of scaling give the
    same product: the same bits, however the rows are tiled.
    """
    name = f"crt_residues_{N}_{L}"
    code = [f"def {name}(t0, t1, R, W, p_levels, p_inv, srow, scol, out, c0):",
            "    count, m, width = R.shape[0], R.shape[2], R.shape[3]",
            f"    tiles = (width + {RESIDUE_TILE - 1}) // {RESIDUE_TILE}",
            f"    v = np.empty({RESIDUE_TILE})",
            f"    pw = np.empty({RESIDUE_TILE}, np.int64)",
            "    pf = pw.view(np.float64)"]
    code += _weight_lines(N, L, padded=True)
    code += [f"    P{lv} = p_levels[{lv}]" for lv in range(L)]
    code += ["    for task in range(t0, t1):",
             "        gi = task // tiles",
             "        g = gi // m",
             "        i = gi - g * m",
             f"        j0 = (task - gi * tiles) * {RESIDUE_TILE}",
             f"        w = min(width - j0, {RESIDUE_TILE})",
             "        sc = scol[g, c0 + j0:c0 + j0 + w]",
             "        sc_lo, sc_hi = sc.min(), sc.max()",
             "        o = out[g, i, c0 + j0:c0 + j0 + w]",
             "        si = srow[g, i]"]
    code += [f"        R{t} = R[min({t}, count - 1), g, i, j0:j0 + w]" for t in range(N)]
    code += ["        for j in range(w):"]
    code += [f"            F{t} = float(R{t}[j])" for t in range(N)]
    code += _entry_lines(N, L, " " * 12) + _scale_lines(" " * 8)
    return "\n".join(code)


def _compiled(source: str, name: str):
    """``name`` from ``source``, compiled (``nogil``) and cached on disk like the other
    kernels: compiled as this file's code, numba's disk cache keys it on this file
    (recompiled when the file changes) and rebuilds it under this module's name."""
    scope = {"__name__": __name__, "np": np, "smod_short": smod_short, "round_int": round_int,
             "ldexp": ldexp}
    exec(compile(source, __file__, "exec"), scope)
    return nb.njit(nogil=True, cache=CACHE)(scope[name])


@functools.lru_cache(maxsize=None)
def serial_kernel(N: int, L: int, products: bool, short: bool):
    """The serial CRT for ``N`` moduli, ``L`` levels: :func:`reconstruct_serial`'s bits.

    For exact products within ``2**52`` (``products`` and ``short``: the pieces'
    case, every ``fp64`` product with ``k <= 2048``) of up to :data:`FUSED_MAX`
    moduli, a kernel compiled from :func:`_fused_source` (1.2-1.4x faster: no
    scratch between the steps; about 3 s to compile, then cached on disk like the
    others, under this module's name); otherwise :func:`reconstruct_serial`. Both
    take ``(R, W, p_levels, p_inv, srow, scol, out, c0, mods, short)`` (the
    specialised kernel has ``short`` built in and ignores the argument).
    """
    if N > FUSED_MAX or not (products and short):  # one kernel per count, compiled once
        return reconstruct_serial
    return _compiled(_fused_source(N, L), f"crt_{N}_{L}")


@functools.lru_cache(maxsize=None)
def residue_kernel(N: int, L: int):
    """The CRT of stored residues for ``N`` moduli and ``L`` levels over rows ``t0:t1``:
    a kernel from :func:`_residue_source` for ``N`` rounded up to a multiple of
    :data:`RESIDUE_STEP` (its padded terms change no bit).

    Takes ``(t0, t1, R, W, p_levels, p_inv, srow, scol, out, c0)`` over the tasks of
    :func:`residue_tasks`; the bits of
    :func:`reconstruct` with ``mods`` empty, 1.4-2.2x faster (measured on two
    AVX-512 cores, n = 2048 and 4096: 6 moduli 20 -> 9 ms, 16 moduli 93 -> 50 ms,
    21 moduli 39 -> 27 ms): each entry stays in registers from its residues to its
    result, where the generic kernel passes ``N`` float planes and ``L`` level sums
    through scratch.
    """
    padded = padded_count(N)
    if padded != N:
        return residue_kernel(padded, L)
    return _compiled(_residue_source(N, L), f"crt_residues_{N}_{L}")


@nb.njit(nogil=True, cache=CACHE)
def _reduce_into_rows(t0, t1, acc, prod, p, pinv, c26, first, short):
    """Rows ``t0:t1`` of :func:`reduce_into`."""
    n = prod.shape[1]
    for i in range(t0, t1):
        for j in range(n):
            r = smod_product(prod[i, j], p, pinv, c26, short)
            if first:
                acc[i, j] = r
            else:
                acc[i, j] += r


def reduce_into(acc, prod, p, pinv, c26, first, short):
    """``acc (+)= smod(prod, p)``: combine k-blocks of a modular product.

    ``|prod| <= 2**53`` (an exact block product; ``2**52`` with ``short``, see
    :func:`ozaki.backends.cpu.kernels.smod_product`); ``acc`` grows by at most ``p / 2`` per block, far
    from ``2**53`` for any feasible number of blocks.
    """
    run(_reduce_into_rows, prod.shape[0], acc, prod, p, pinv, c26, first, short)


@nb.njit(nogil=True, cache=CACHE)
def _store_residues_rows(t0, t1, prod, p, pinv, c26, out, short):
    """Rows ``t0:t1`` of :func:`store_residues`."""
    n = prod.shape[1]
    for i in range(t0, t1):
        for j in range(n):
            out[i, j] = smod_product(prod[i, j], p, pinv, c26, short)


def store_residues(prod, p, pinv, c26, out, short):
    """``out = smod(prod, p)``: the modular product, stored in a small integer type.

    ``|prod| <= 2**53`` (an exact product, or a sum of reduced k-blocks;
    ``2**52`` with ``short``, see :func:`ozaki.backends.cpu.kernels.smod_product`); the symmetric residue
    fits ``out``'s dtype (int8 for ``p <= 256``, int16 for ``p <= 65536``,
    int32 otherwise) exactly.
    """
    run(_store_residues_rows, prod.shape[0], prod, p, pinv, c26, out, short)


@nb.njit(nogil=True, cache=CACHE)
def _add_halves_rows(t0, t1, X, half, along_rows, p, pinv, out):
    """Rows ``t0:t1`` of :func:`add_halves`."""
    r, c = out.shape[1], out.shape[2]
    h = np.uint64(half)
    for gi in range(t0, t1):
        g = gi // r
        i = gi - g * r
        o = out[g, i]
        x1 = X[g, i]
        if along_rows:
            x2 = X[g, i + half]
            for j in range(c):
                o[j] = smod_short(x1[j] + x2[j], p, pinv)
        else:  # unsigned indices: no negative-index fix-ups in the way of SIMD
            for j in range(np.uint64(c)):
                o[j] = smod_short(x1[j] + x1[h + j], p, pinv)


def add_halves(X, half, along_rows, p, pinv, out):
    """``out = smod(X_1 + X_2, p)`` for the two halves of residue planes ``X`` (b, r, c).

    The halves are ``X[:, :, :half]`` and ``X[:, :, half:]`` (columns), or with
    ``along_rows`` ``X[:, :half]`` and ``X[:, half:]``; ``out`` has a half's shape.
    Both read as contiguous row views, so the loop vectorises whatever the split.
    ``|x_1 + x_2| <= p - 1``: exact, one short reduction.
    """
    run(_add_halves_rows, out.shape[0] * out.shape[1], X, half, along_rows, p, pinv, out)


@nb.njit(nogil=True, cache=CACHE)
def _complex_residues_rows(t0, t1, p1, p2, p3, p, pinv, c26, short, out):
    """Rows ``t0:t1`` of :func:`complex_residues`."""
    n = p1.shape[1]
    for i in range(t0, t1):
        o = out[i]
        for j in range(n):
            r1 = smod_product(p1[i, j], p, pinv, c26, short)
            r2 = smod_product(p2[i, j], p, pinv, c26, short)
            r3 = smod_product(p3[i, j], p, pinv, c26, short)
            o[j] = smod_short(r1 - r2, p, pinv)
            o[n + j] = smod_short(r3 - r1 - r2, p, pinv)


def complex_residues(p1, p2, p3, p, pinv, c26, short, out):
    """Gauss/Karatsuba combination of three exact modular products (n columns each).

    ``P1 = Ar Br``, ``P2 = Ai Bi``, ``P3 = (Ar + Ai)(Br + Bi)`` (integers up to
    ``2**53``, ``2**52`` with ``short``: :func:`ozaki.backends.cpu.kernels.smod_product`) are reduced
    first, so every sum below is of residues (``|r| <= p/2``) and exact:
    ``Re = smod(r1 - r2)`` into ``out[:, :n]``, ``Im = smod(r3 - r1 - r2)`` into
    ``out[:, n:]``, each one short reduction (``out`` (rows, 2n) whole: its rows are
    contiguous, so the loop vectorises).
    """
    run(_complex_residues_rows, p1.shape[0], p1, p2, p3, p, pinv, c26, short, out)
